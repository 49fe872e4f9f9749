"""The documentation site builds, its generated references cover what they are made from, and the
README stays a front page: short, with the Quickstart and the next three commands on its first screen."""

from __future__ import annotations

import argparse
import html
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from umni.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` makes it (scripts/test builds it too, into site/)."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: uv pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def page_text(page: Path) -> str:
    """A built page's article as text, with its heading ids kept as `[#id]` markers."""
    source = page.read_text(encoding="utf-8")
    article = source[source.index("<article") : source.index("</article>")]
    article = re.sub(r'<h[1-6][^>]*\bid="([^"]+)"[^>]*>', r"\n[#\1]", article)
    return html.unescape(re.sub(r"<[^>]+>", "", article))


def sections(text: str) -> dict[str, str]:
    """Heading id -> the text up to the next heading."""
    parts = re.split(r"\n\[#([^\]]+)\]", text)
    return dict(zip(parts[1::2], parts[2::2]))


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command of the parser with its path of names, the program itself first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def test_the_cli_reference_lists_every_subcommand_and_option(site: Path) -> None:
    text = sections(page_text(site / "reference" / "cli" / "index.html"))
    for path, parser in commands(build_parser()):
        anchor = "-".join(path) or "umni"
        assert anchor in text, f"the CLI reference has no section for 'umni {' '.join(path)}'"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue  # each subcommand has a section of its own, checked above
            for name in action.option_strings or [action.metavar or action.dest]:
                assert name in text[anchor], f"'umni {' '.join(path)}': {name} is missing from the CLI reference"


def test_the_api_reference_documents_every_public_name(site: Path) -> None:
    import umni
    import umni.plugin

    ids = set(re.findall(r'\bid="([^"]+)"', (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")))
    for front in (umni, umni.plugin):
        missing = [name for name in front.__all__ if not name.startswith("_") and f"{front.__name__}.{name}" not in ids]
        assert missing == [], f"{front.__name__}: not in the Python API reference: {missing}"


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M)


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the documentation belongs in docs/"
    first_screen = "\n".join(lines[:60])
    quickstart = bash_blocks(first_screen)[0].splitlines()
    assert quickstart[0].endswith(".venv/bin/umni run umnibench --model sim/umm")
    assert quickstart[1] == "bash scripts/test"
    next_commands = "\n".join(bash_blocks(first_screen)[1:])
    for command in ("umni run ", "umni leaderboard ", "umni view "):
        assert command in next_commands, f"README.md's first 60 lines lack `{command.strip()}`"


def test_getting_started_gives_the_readme_quickstart_verbatim() -> None:
    setup = bash_blocks(README.read_text(encoding="utf-8"))[0].splitlines()[0]
    assert setup in bash_blocks((ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8"))[0]
