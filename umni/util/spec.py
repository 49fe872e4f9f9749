"""Backend specs: `provider/name?key=value&key=value`.

A spec is what a user types on the command line to name a backend; it is also part of what a run
records. Parameters stay strings here; each backend converts and validates its own.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode

from pydantic import BaseModel, ConfigDict

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


#: Spec parameters that would put a credential on a command line (and into shell history and logs).
SECRET_PARAMS = ("api_key", "apikey", "key", "token", "password", "secret")


def refuse_inline_secrets(text: str) -> None:
    """Refuse a spec carrying a credential; the message never repeats its value."""
    _, _, query = text.strip().partition("?")
    for pair in query.split("&"):
        name = pair.partition("=")[0].strip().lower()
        if name in SECRET_PARAMS:
            provider = text.strip().partition("?")[0]
            raise ConfigError(
                f"backend spec '{provider}?{name}=…': credentials do not belong in a spec (it is recorded "
                f"in run.json and shell history); put the key in an environment variable and name it with "
                f"api_key_env=VARIABLE (default OPENAI_API_KEY)"
            )


def parse_role_binding(text: str) -> tuple[str, Spec]:
    """Parse `ROLE=SPEC` as given to `--role`."""
    role, sep, spec = text.partition("=")
    if not sep or not role.strip():
        raise ConfigError(f"--role takes ROLE=SPEC (for example judge=sim/umm), got '{text}'")
    return role.strip(), Spec.parse(spec)
