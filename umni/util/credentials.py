"""Credentials in what a user types: backend specs, store URLs, and the URLs they hold.

A spec and a blob store URL are recorded in run.json and shell history, so a credential in one is
refused (it goes in an environment variable); a database URL may carry a password its driver reads
(``postgresql://user:pw@host/db``, ``?password=``), and is shown and stored only as `redact_url`
leaves it. A URL's user information is also stripped from every text umni writes
(`umni.util.secrets.scrub`). Refusals name the part, never its value.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, unquote_plus, urlsplit, urlunsplit

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


# ----------------------------------------------------------------------------- store URLs

#: What makes a URL's query parameter a credential: one of these in its name, in any case
#: (aws_secret_access_key, X-Amz-Security-Token, password, sslpassword, sig, api_key, ...). A spec's
#: parameters are matched by exact name instead (`SECRET_PARAMS`): specs take max_tokens,
#: token_field and api_key_env, which hold none.
_CREDENTIAL_WORDS = ("key", "secret", "token", "passw", "pwd", "sig", "credential")
#: Parameters named like a credential that hold a file's path instead (libpq's): never one.
_PATH_PARAMS = frozenset({"sslkey", "sslkeylogfile", "passfile"})


def is_credential_param(name: str) -> bool:
    """Whether a URL query parameter called `name` carries a credential."""
    lowered = name.strip().lower()
    return lowered not in _PATH_PARAMS and any(word in lowered for word in _CREDENTIAL_WORDS)


def _pairs(query: str) -> list[tuple[str, str, str]]:
    """(raw pair, decoded name, decoded value) of each ``name=value`` of a query, as written."""
    found = []
    for raw in query.split("&"):
        if raw:
            name, _, value = raw.partition("=")
            found.append((raw, unquote_plus(name), unquote_plus(value)))
    return found


def _split(url: str) -> SplitResult | None:
    try:
        return urlsplit(url)
    except ValueError:  # not a URL urllib can read (an unclosed '[' in the host, say)
        return None


def url_credentials(url: str) -> list[str]:
    """The parts of `url` that carry a credential, by name, never by value: its user information,
    each credential parameter (`is_credential_param`), and the user information of a URL given as
    a parameter's value (``?endpoint_url=http://user:password@host``)."""
    parts = _split(url)
    if parts is None:
        return ["user information"] if strip_userinfo(url) != url else []
    found = ["user information"] if "@" in parts.netloc else []
    for _, name, value in _pairs(parts.query):
        if is_credential_param(name):
            found.append(name)
        elif strip_userinfo(value) != value:
            found.append(f"user information in {name}")
    return found


def credential_values(url: str) -> list[str]:
    """The credentials `url` holds (as written and decoded), for `umni.util.secrets.register_secret`:
    a server that repeats one in an error (libpq quotes a badly escaped password) is masked."""
    parts = _split(url)
    if parts is None:
        return []
    raw: list[str] = []
    if "@" in parts.netloc:
        raw.append(parts.netloc.rpartition("@")[0].partition(":")[2])
    raw += [pair.partition("=")[2] for pair, name, _ in _pairs(parts.query) if is_credential_param(name)]
    return [text for value in raw if value for text in dict.fromkeys((value, unquote_plus(value)))]


def redact_url(url: str, *, keep_user: bool = True) -> str:
    """`url` as umni shows or stores it (run.json, messages, `umni status`): without the password
    of its user information, every credential parameter, and the user information of a URL given
    as a parameter's value; the rest byte for byte. The user name stays unless `keep_user` is
    false (a store may need it to be opened again; libpq then reads the password from PGPASSWORD
    or ~/.pgpass)."""
    parts = _split(url)
    if parts is None:
        return strip_userinfo(url)
    netloc = parts.netloc
    if "@" in netloc:
        user_info, _, host = netloc.rpartition("@")
        user = user_info.partition(":")[0] if keep_user else ""
        netloc = f"{user}@{host}" if user else host
    kept = []
    for pair, name, value in _pairs(parts.query):
        if is_credential_param(name):
            continue
        kept.append(pair if strip_userinfo(value) == value else f"{pair.partition('=')[0]}={strip_userinfo(value)}")
    return urlunsplit(parts._replace(netloc=netloc, query="&".join(kept)))


# a URL with an authority, up to the first space or quote (what a message quotes)
_URL_IN_TEXT = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s\"'<>]+")


def redact_urls(text: str) -> str:
    """`text` with every URL in it as `redact_url` leaves it (an error message that quotes a
    connection string with ``?password=``)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda found: redact_url(found.group(0)), text)


def refuse_url_credentials(url: str, *, setting: str, remedy: str) -> None:
    """Refuse a URL that carries a credential where umni takes none (``--blobs``); the message
    names the parts that do and the `remedy` (where the credentials go instead), never a value."""
    found = url_credentials(url)
    if found:
        raise ConfigError(
            f"{setting} {redact_url(url, keep_user=False)}: credentials do not belong in a store URL (it is "
            f"recorded in run.json and shell history; this one holds {', '.join(found)}); {remedy}"
        )
