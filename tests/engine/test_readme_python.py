"""The README's Python API examples run verbatim (in a scratch folder, on the offline backend)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def python_api_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Python API\n") :]
    section = section[: section.index("\n### Node kinds")]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_section_has_examples():
    assert len(python_api_blocks()) >= 2


@pytest.mark.parametrize("index", range(2))
def test_python_api_example_runs_verbatim(index: int, tmp_path: Path):
    script = tmp_path / "example.py"
    script.write_text(python_api_blocks()[index])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
