"""Credentials in what a user types: backend specs and the URLs they hold.

A spec is recorded in run.json and shell history, so a credential in it is refused (the key goes in
an environment variable); a URL's user information (``scheme://user:password@host``) is stripped from
every text umni writes (`umni.util.secrets.scrub`). Refusals name the parameter, never its value.
"""

from __future__ import annotations

import re

from umni.util.errors import ConfigError

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


# scheme://user[:password]@  (the @ also URL-encoded, as a spec string quotes it)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*:(?://|%2F%2F))[^\s/@\"'<>?#&]+(?:@|%40)")


def strip_userinfo(text: str) -> str:
    """Every URL in `text` without its ``user:password@`` part."""
    if "//" not in text and "%2" not in text:  # no URL authority at all: skip the regex
        return text
    return _USERINFO.sub(r"\1", text)
