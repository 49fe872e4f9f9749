"""MkDocs hooks of umni's documentation site (mkdocs.yml, `hooks:`)."""

from __future__ import annotations

import os
from typing import Any


def on_startup(command: str, dirty: bool, **_: Any) -> None:
    """Render the CLI reference at one width whatever the terminal: argparse wraps its help at
    COLUMNS, and the console that turns it into HTML wraps longer lines again (splitting a word)."""
    os.environ["COLUMNS"] = "96"
