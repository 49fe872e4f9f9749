"""The code blocks the documentation marks runnable run here, so a tutorial cannot drift from umni.

A page marks a block by putting `<!-- runnable -->` (invisible on the site) on the line right above
its fence; unmarked blocks are never run. Sybil finds the marked blocks; a page's blocks run in order in
one scratch folder (the working directory) and share one Python namespace, so a later block can use
what an earlier one made. ```python blocks run in this process; ```bash blocks run in bash
(`set -euo pipefail`) with this environment's `umni` first on PATH. Runs use the offline backend
`sim/umm` and the test suite's scratch result store (`UMNI_CACHE`, tests/conftest.py).

A file a tutorial has the reader write (a package's module, its pyproject.toml, a sweep file) is a
block of any language marked `<!-- runnable: file -->` whose fence names the file as its title
(```` ```toml title="umni_mosaic/pyproject.toml" ````, which the site shows above the code): it is
written there, inside the scratch folder, when its turn comes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sybil", reason="sybil is not installed: uv pip install -e '.[docs]'")

from sybil import Document, Example, Region, Sybil  # noqa: E402
from sybil.evaluators.python import PythonEvaluator  # noqa: E402
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer, RawFencedCodeBlockLexer  # noqa: E402
from sybil.typing import Evaluator  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARK = "<!-- runnable -->"
FILE_MARK = "<!-- runnable: file -->"
#: a fence's info line naming the file its block is: ```toml title="pkg/pyproject.toml"
TITLED = re.compile(r'(?P<language>[\w+-]+)[ \t]+title="(?P<path>[^"]+)"[^\n]*$\n', re.MULTILINE)


def line_above(document: Document, region: Region) -> str:
    return document.text[: region.start].removesuffix("\n").rpartition("\n")[2].strip()


class MarkedBlocks:
    """A Sybil parser: the fenced blocks of one language whose line above is the runnable mark."""

    def __init__(self, language: str, evaluator: Evaluator) -> None:
        self.lexer = FencedCodeBlockLexer(language, mapping={"source": "source"})
        self.evaluator = evaluator

    def __call__(self, document: Document) -> Iterator[Region]:
        for region in self.lexer(document):
            if line_above(document, region) == MARK:
                region.parsed = region.lexemes["source"]
                region.evaluator = self.evaluator
                yield region


class FileBlocks:
    """A Sybil parser: the titled blocks under the file mark, each written to the file its title names."""

    lexer = RawFencedCodeBlockLexer(info_pattern=TITLED, mapping={"source": "source", "path": "path"})

    def __call__(self, document: Document) -> Iterator[Region]:
        for region in self.lexer(document):
            if line_above(document, region) == FILE_MARK:
                region.parsed = (region.lexemes["path"], str(region.lexemes["source"]))
                region.evaluator = write_file
                yield region


def write_file(example: Example) -> None:
    """Write the block's text to its file, which must lie inside the scratch folder (the working directory)."""
    name, text = example.parsed
    path = Path(name)
    if path.is_absolute() or ".." in path.parts:
        raise AssertionError(f"{example.path}, line {example.line}: {name!r} is not a path inside the tutorial's folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run_bash(example: Example) -> None:
    """Run a shell block in the working directory; a non-zero exit fails with what it printed."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", str(example.parsed)], env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{example.path}, line {example.line}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        )


SYBIL = Sybil(parsers=[MarkedBlocks("python", PythonEvaluator()), MarkedBlocks("bash", run_bash), FileBlocks()])


def marked_examples(page: Path) -> list[Example]:
    return list(SYBIL.parse(page).examples())


def runnable_pages() -> list[str]:
    return [str(page.relative_to(DOCS)) for page in sorted(DOCS.rglob("*.md")) if marked_examples(page)]


def test_the_documentation_has_runnable_blocks() -> None:
    assert "getting-started.md" in runnable_pages()


def unmarked_blocks(page: Path) -> list[int]:
    """The lines of the page's code fences that open a block with no runnable mark above."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, inside = [], False
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            if not inside and (number == 0 or lines[number - 1].strip() not in (MARK, FILE_MARK)):
                found.append(number + 1)
            inside = not inside
    return found


def test_every_code_block_of_a_tutorial_runs() -> None:
    """A tutorial shows nothing the suite does not run: every block is executed or written as a file."""
    pages = sorted((DOCS / "tutorials").glob("*.md"))
    assert len(pages) >= 6
    for page in pages:
        assert unmarked_blocks(page) == [], f"{page.relative_to(DOCS)}: unmarked code blocks at these lines"
        assert page.name == "index.md" or marked_examples(page), f"{page.relative_to(DOCS)} has no runnable block"


def missing_tools(examples: list[Example]) -> list[str]:
    """The commands beyond umni that the page's shell blocks run and this machine lacks (`uv`)."""
    scripts = "\n".join(str(e.parsed) for e in examples if e.region.evaluator is run_bash)
    return [tool for tool in ("uv",) if re.search(rf"(^|[\s;&|(]){tool}\s", scripts) and shutil.which(tool) is None]


@pytest.mark.parametrize("page", runnable_pages())
def test_each_runnable_block_of_the_page_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = marked_examples(DOCS / page)
    if missing := missing_tools(examples):
        pytest.skip(f"{page} runs {', '.join(missing)}, which is not on PATH")
    monkeypatch.chdir(tmp_path)
    for example in examples:
        example.evaluate()


def examples_of_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> list[Example]:
    """The marked examples of a page with `text`, to be run in `tmp_path`."""
    page = tmp_path / "page.md"
    page.write_text(text)
    monkeypatch.chdir(tmp_path)
    return marked_examples(page)


def test_only_marked_blocks_run_in_order_and_a_failing_one_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = examples_of_page(
        tmp_path, monkeypatch,
        "Text.\n\n"
        f"{MARK}\n```python\nfrom pathlib import Path\nPath('made.txt').write_text('one')\n```\n\n"
        "```python\nraise SystemExit('an unmarked block ran')\n```\n\n"
        f"{MARK}\n```bash\ntest \"$(cat made.txt)\" = one && echo two > made.txt\n```\n\n"
        f"{MARK}\n\n```python\nraise SystemExit('a block the mark does not touch ran')\n```\n\n"
        f"{MARK}\n```python\nassert Path('made.txt').read_text() == 'two\\n'\nassert Path('made.txt').exists() is False\n```\n",
    )
    assert [example.line for example in examples] == [4, 14, 25]
    examples[0].evaluate()
    examples[1].evaluate()
    with pytest.raises(AssertionError):
        examples[2].evaluate()  # its first assert holds (the blocks ran in order), its second does not


def test_a_file_block_is_written_where_its_title_says_in_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = examples_of_page(
        tmp_path, monkeypatch,
        f"{FILE_MARK}\n```toml title=\"pkg/pyproject.toml\"\n[project]\nname = \"x\"\n```\n\n"
        '```python title="pkg/unmarked.py"\nraise SystemExit\n```\n\n'
        f"{MARK}\n```bash\ntest -f pkg/pyproject.toml && grep -qx 'name = \"x\"' pkg/pyproject.toml\n```\n\n"
        f"{FILE_MARK}\n```python title=\"../outside.py\"\nx = 1\n```\n",
    )
    assert [example.line for example in examples] == [2, 12, 17]
    examples[0].evaluate()
    assert (tmp_path / "pkg" / "pyproject.toml").read_text() == '[project]\nname = "x"\n'
    assert not (tmp_path / "pkg" / "unmarked.py").exists()
    examples[1].evaluate()
    with pytest.raises(AssertionError, match="not a path inside"):
        examples[2].evaluate()
    assert not (tmp_path.parent / "outside.py").exists()
