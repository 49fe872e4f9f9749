"""The code blocks the documentation marks runnable run here, so a tutorial cannot drift from umni.

A page marks a block by putting `<!-- runnable -->` (invisible on the site) on the line right above
its fence; unmarked blocks are never run. Sybil finds the marked blocks; a page's blocks run in order in
one scratch folder (the working directory) and share one Python namespace, so a later block can use
what an earlier one made. ```python blocks run in this process; ```bash blocks run in bash
(`set -euo pipefail`) with this environment's `umni` first on PATH. Runs use the offline backend
`sim/umm` and the test suite's scratch result store (`UMNI_CACHE`, tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sybil", reason="sybil is not installed: uv pip install -e '.[docs]'")

from sybil import Document, Example, Region, Sybil  # noqa: E402
from sybil.evaluators.python import PythonEvaluator  # noqa: E402
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer  # noqa: E402
from sybil.typing import Evaluator  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARK = "<!-- runnable -->"


class MarkedBlocks:
    """A Sybil parser: the fenced blocks of one language whose line above is the runnable mark."""

    def __init__(self, language: str, evaluator: Evaluator) -> None:
        self.lexer = FencedCodeBlockLexer(language, mapping={"source": "source"})
        self.evaluator = evaluator

    def __call__(self, document: Document) -> Iterator[Region]:
        for region in self.lexer(document):
            above = document.text[: region.start].removesuffix("\n").rpartition("\n")[2]
            if above.strip() == MARK:
                region.parsed = region.lexemes["source"]
                region.evaluator = self.evaluator
                yield region


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


SYBIL = Sybil(parsers=[MarkedBlocks("python", PythonEvaluator()), MarkedBlocks("bash", run_bash)])


def marked_examples(page: Path) -> list[Example]:
    return list(SYBIL.parse(page).examples())


def runnable_pages() -> list[str]:
    return [str(page.relative_to(DOCS)) for page in sorted(DOCS.rglob("*.md")) if marked_examples(page)]


def test_the_documentation_has_runnable_blocks() -> None:
    assert "getting-started.md" in runnable_pages()


@pytest.mark.parametrize("page", runnable_pages())
def test_each_runnable_block_of_the_page_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for example in marked_examples(DOCS / page):
        example.evaluate()


def test_only_marked_blocks_run_in_order_and_a_failing_one_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n"
        f"{MARK}\n```python\nfrom pathlib import Path\nPath('made.txt').write_text('one')\n```\n\n"
        "```python\nraise SystemExit('an unmarked block ran')\n```\n\n"
        f"{MARK}\n```bash\ntest \"$(cat made.txt)\" = one && echo two > made.txt\n```\n\n"
        f"{MARK}\n\n```python\nraise SystemExit('a block the mark does not touch ran')\n```\n\n"
        f"{MARK}\n```python\nassert Path('made.txt').read_text() == 'two\\n'\nassert Path('made.txt').exists() is False\n```\n"
    )
    monkeypatch.chdir(tmp_path)
    examples = marked_examples(page)
    assert [example.line for example in examples] == [4, 14, 25]
    examples[0].evaluate()
    examples[1].evaluate()
    with pytest.raises(AssertionError):
        examples[2].evaluate()  # its first assert holds (the blocks ran in order), its second does not
