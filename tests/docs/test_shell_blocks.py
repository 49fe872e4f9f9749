"""The ```bash blocks of README.md and the documentation are meant to be pasted into a shell, so each
must parse, and every spec in
them with ``?`` or ``&`` must be quoted: unquoted, ``&`` ends the command and sends it to the
background (``--role judge=openai/m?base_url=URL&api_key_env=KEY`` runs without its key setting), and
``?`` is a glob character."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)


def bash_blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


def every_bash_block() -> list[tuple[str, str]]:
    """(page and block number, block) for every ```bash block of every page."""
    return [
        (f"{page.relative_to(ROOT)}#{number}", block)
        for page in PAGES
        for number, block in enumerate(bash_blocks(page.read_text(encoding="utf-8")), start=1)
    ]


def unquoted(script: str) -> Iterator[int]:
    """Offsets of the characters of `script` that the shell reads outside quotes and comments."""
    quote: str | None = None
    escaped = comment = False
    for i, char in enumerate(script):
        if comment:
            comment = char != "\n"
        elif escaped:
            escaped = False
        elif quote is not None:
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"':
                escaped = True
        elif char == "\\":
            escaped = True
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or script[i - 1].isspace()):
            comment = True
        else:
            yield i


def unquoted_spec_marks(script: str) -> list[str]:
    """The lines holding a ``?`` or a lone ``&`` (not ``&&``, not a redirection) outside quotes."""
    found = []
    for i in unquoted(script):
        char, before, after = script[i], script[i - 1 : i], script[i + 1 : i + 2]
        if char == "?" or (char == "&" and "&" not in (before, after) and before != ">" and after != ">"):
            start, end = script.rfind("\n", 0, i) + 1, script.find("\n", i)
            found.append(script[start : end if end >= 0 else None].strip())
    return list(dict.fromkeys(found))


def test_the_checks_catch_an_unquoted_spec_and_pass_a_quoted_one() -> None:
    bad = "umni run genius --role judge=openai/m?base_url=http://h:8000/v1&api_key_env=KEY\n"
    good = "umni run genius --role judge='openai/m?base_url=http://h:8000/v1&api_key_env=KEY' && echo done  # ok?\n"
    assert unquoted_spec_marks(bad) == [bad.strip()]
    assert unquoted_spec_marks(good) == []
    assert unquoted_spec_marks('sbatch --wrap "umni run x --model \'a/b?c=1&d=2\'" 2>&1 >log\n') == []


def test_the_pages_have_bash_blocks() -> None:
    assert len(every_bash_block()) >= 10


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
@pytest.mark.parametrize(("where", "block"), every_bash_block(), ids=[where for where, _ in every_bash_block()])
def test_each_bash_block_parses_and_quotes_its_specs(where: str, block: str) -> None:
    checked = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, f"{where} does not parse:\n{checked.stderr}\n{block}"
    assert unquoted_spec_marks(block) == [], f"{where}: quote these specs"
