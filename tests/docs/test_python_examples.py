"""The Python examples the documentation marks runnable (`<!-- runnable -->` above the block) run
verbatim, in a scratch folder, on the offline backend."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKED = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(DOCS)}#{n}", code)
        for page in sorted(DOCS.rglob("*.md"))
        for n, code in enumerate(MARKED.findall(page.read_text(encoding="utf-8")), start=1)
    ]


def test_the_docs_have_runnable_examples():
    assert len(examples()) >= 2


@pytest.mark.parametrize(("where", "code"), examples(), ids=[where for where, _ in examples()])
def test_example_runs_verbatim(where: str, code: str, tmp_path: Path):
    script = tmp_path / "example.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{where}:\n{done.stderr}"
    assert done.stdout.strip()
