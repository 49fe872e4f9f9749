"""Keeping credentials out of everything umni writes.

Backends register the secrets they hold (an API key read from the environment, the password of a
``base_url``); `scrub` then masks them in any text before it is persisted or shown, strips the user
information from URLs (``http://user:pass@host`` becomes ``http://host``; the request itself keeps
it), and replaces Python object reprs (``<_io.BytesIO object at 0x7f…>``), whose addresses would make
two identical runs write different results. Every writer of a run directory or cache — run.json,
run.db, cache.db, events.jsonl, results.jsonl, summary.json, report.html — passes its text through
`scrub`, and failure messages are scrubbed where they are made.

Masking happens before any truncation, so a cut never leaves a secret minus its last characters.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from umni.util.credentials import redact_urls, strip_userinfo
from umni.util.errors import UmniError

MASK = "***"

#: Secrets shorter than this are not registered: masking "a" everywhere would garble every text.
MIN_SECRET_LENGTH = 6

_lock = threading.Lock()
_secrets: set[str] = set()
#: `_secrets` sorted longest first, rebuilt when one is registered (scrub runs on every log line)
_ordered: tuple[str, ...] = ()

_OBJECT_REPR = re.compile(r"<([A-Za-z_][\w.]*) object at 0x[0-9a-fA-F]+>")


def register_secret(value: str | None) -> None:
    """Mask `value` in everything scrubbed from now on (in this process)."""
    global _ordered
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            if value not in _secrets:
                _secrets.add(value)
                _ordered = tuple(sorted(_secrets, key=len, reverse=True))


#: Environment variables whose values are credentials by their name (HF_TOKEN, OPENAI_API_KEY,
#: AWS_SECRET_ACCESS_KEY, PGPASSWORD, ...).
_CREDENTIAL_NAME = re.compile(r"(?:(?:^|_)(?:API_?KEY|TOKEN|SECRET|SECRET_ACCESS_KEY|PASSWORD|PASSWD)|^PGPASSWORD)$", re.IGNORECASE)
_env_read = False


def _register_environment() -> None:
    """Register, once, every credential-named environment variable: a library (huggingface_hub,
    say) may read one without umni's help and echo it in an error."""
    global _env_read
    if _env_read:
        return
    _env_read = True
    for name, value in os.environ.items():
        if _CREDENTIAL_NAME.search(name):
            register_secret(value)


def known_secrets() -> tuple[str, ...]:
    _register_environment()
    return _ordered  # longest first: no partial leftovers


def mask(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """`text` with every registered secret replaced by ``***``."""
    for secret in known_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub(text: str) -> str:
    """`text` as it may be written: secrets masked, URL credentials removed, object reprs named."""
    text = strip_userinfo(mask(text))
    return _OBJECT_REPR.sub(r"<\1>", text) if " object at 0x" in text else text


#: The longest error line `error_line` keeps (a record or a status line, not a log).
ERROR_LINE_CHARS = 400


def error_line(error: BaseException) -> str:
    """`error` as one line that may be written to a file others read (a sweep unit's record): its
    type (unless it is umni's own one-line error), whitespace folded, secrets masked and every
    URL's credentials removed, then cut to `ERROR_LINE_CHARS`."""
    text = " ".join(str(error).split())
    if not (isinstance(error, UmniError) and text):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    line = redact_urls(scrub(text))
    return line if len(line) <= ERROR_LINE_CHARS else line[: ERROR_LINE_CHARS - 1] + "…"


def scrub_value(value: Any) -> Any:
    """`scrub` applied to every string inside a JSON-like value (keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub_value(v) for v in value)
    return value


def truncate(text: str, limit: int) -> str:
    """Scrub, then cut to `limit` characters (in that order: see the module docstring)."""
    text = scrub(text)
    return text if len(text) <= limit else text[:limit] + "…"
