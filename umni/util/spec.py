"""Backend specs: `provider/name?key=value&key=value`.

A spec is what a user types on the command line to name a backend; it is also part of what a run
records. Parameters stay strings here; each backend converts and validates its own.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode

from pydantic import BaseModel, ConfigDict

from umni.util.credentials import SECRET_PARAMS, refuse_inline_secrets  # noqa: F401 - SECRET_PARAMS: also importable from here
from umni.util.errors import ConfigError


class Spec(BaseModel):
    """A parsed backend spec."""

    model_config = ConfigDict(frozen=True)

    provider: str
    name: str
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Spec:
        refuse_inline_secrets(text)
        body, _, query = text.strip().partition("?")
        provider, sep, name = body.partition("/")
        if not sep or not provider or not name:
            raise ConfigError(
                f"backend spec '{text}' is not of the form provider/name[?key=value&...] "
                "(for example sim/umm or hf/Qwen/Qwen2.5-VL-7B-Instruct?dtype=bf16)"
            )
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError as exc:
            raise ConfigError(f"backend spec '{text}': parameters must be key=value joined by '&' ({exc})") from None
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ConfigError(f"backend spec '{text}' repeats a parameter")
        return cls(provider=provider, name=name, params=tuple(sorted(pairs)))

    @property
    def options(self) -> dict[str, str]:
        return dict(self.params)

    def __str__(self) -> str:
        text = f"{self.provider}/{self.name}"
        if self.params:
            text += "?" + urlencode(self.params, quote_via=quote, safe="/:")
        return text


def parse_role_binding(text: str) -> tuple[str, Spec]:
    """Parse `ROLE=SPEC` as given to `--role`."""
    role, sep, spec = text.partition("=")
    if not sep or not role.strip():
        raise ConfigError(f"--role takes ROLE=SPEC (for example judge=sim/umm), got '{text}'")
    return role.strip(), Spec.parse(spec)
