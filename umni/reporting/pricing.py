"""Estimated cost from a price table: calls, tokens and images per role turned into money.

The table is YAML, one entry per `provider/name` (parameters ignored), with any of
`input_per_million`, `output_per_million` (per token, per million), `per_call` and `per_image`
(each generated or edited image). It is read from `--prices FILE`, `$UMNI_PRICES`, or
`<user config dir>/umni/prices.yaml`. Without a table the summary reports usage only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs
from pydantic import BaseModel, ConfigDict, ValidationError

from umni.store.runfolder import Cost
from umni.util.errors import InputError
from umni.util.spec import Spec


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_per_million: float = 0.0
    output_per_million: float = 0.0
    per_call: float = 0.0
    per_image: float = 0.0


def default_price_file() -> Path | None:
    env = os.environ.get("UMNI_PRICES")
    if env:
        return Path(env)
    path = Path(platformdirs.user_config_dir("umni")) / "prices.yaml"
    return path if path.exists() else None


def load_prices(path: Path) -> dict[str, Price]:
    import yaml  # only when a price table is read (the viewer's start does without it)

    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read the price table ({exc})", path=path) from None
    if not isinstance(raw, dict):
        raise InputError("a price table maps provider/name to prices", path=path)
    prices = {}
    for key, value in raw.items():
        try:
            prices[str(key)] = Price.model_validate(value or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InputError(first["msg"], path=path, record=str(key), field=".".join(map(str, first["loc"]))) from None
    return prices


def estimate(usage: Mapping[str, Mapping[str, int | None]], bindings: Mapping[str, str], prices: Mapping[str, Price]) -> Cost:
    """Cost per role and in total; roles whose model has no price are listed, not priced at 0.

    A role whose token counts are unknown (None: the server sent no usage) while its price is per
    token has an unknown cost: it is None in ``per_role``, listed in ``unknown_roles``, and the
    ``total`` is None too (``known_total`` sums the roles whose cost is known), never a silent $0.
    """
    per_role: dict[str, float | None] = {}
    unpriced = []
    unknown = []
    for role, used in usage.items():
        spec = Spec.parse(bindings[role]) if role in bindings else None
        price = prices.get(f"{spec.provider}/{spec.name}") if spec else None
        if price is None:
            unpriced.append(role)
            continue
        cost = usage_cost(used, price)
        per_role[role] = cost
        if cost is None:
            unknown.append(role)
    known = round(sum(c for c in per_role.values() if c is not None), 6)
    return Cost(per_role=per_role, total=None if unknown else known, known_total=known, unpriced_roles=sorted(unpriced), unknown_roles=sorted(unknown))


def usage_cost(used: Mapping[str, int | None], price: Price) -> float | None:
    """The cost of `used` (a role's usage, or one node's: a count left out is 0), or None when a
    per-token price meets an unknown token count."""
    total = (used.get("calls") or 0) * price.per_call + (used.get("images_out") or 0) * price.per_image
    for field, rate in (("input_tokens", price.input_per_million), ("output_tokens", price.output_per_million)):
        tokens = used.get(field, 0)
        if tokens is None:
            if rate:
                return None
            continue
        total += tokens * rate / 1e6
    return round(total, 6)
