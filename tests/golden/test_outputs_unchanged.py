"""Every protocol's run files stay byte-identical to the ones committed in `expected/`.

The files were written before umni/ was split into layered sub-packages; a refactor that moves code
must not move a single output byte. Two fields of summary.json describe the run, not its results
(where it ran and how long it took), so they are set aside before comparing, as is the commit of
the checkout that ran it (``provenance.umni_commit``). To accept a deliberate
change of output, regenerate with `UMNI_WRITE_GOLDEN=1 pytest tests/golden`. The checkout's own path,
which transcripts hold for bundled case images, reads `<repo>` in the files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from umni.cli import main

EXPECTED = Path(__file__).parent / "expected"
#: protocol -> the options its bundled run uses (GIR-Bench's official extractors need weights from a hub)
RUNS: dict[str, list[str]] = {
    "umnibench": [],
    "genius": [],
    "aegis": [],
    "wise": [],
    "girbench": ["--option", "features=embed"],
}
#: summary.json fields that describe the run rather than its results
RUN_FIELDS = ("wall_seconds", "run_dir")
#: where this checkout lies: transcripts name bundled case images by their absolute path
REPO = str(Path(__file__).resolve().parents[2])


def comparable_summary(path: Path) -> str:
    summary = json.loads(path.read_text())
    for field in RUN_FIELDS:
        assert field in summary, f"{path}: {field} missing"
        summary[field] = "<run>"
    summary["provenance"]["umni_commit"] = "<run>"  # the checkout's commit, when run from one
    return json.dumps(summary, indent=2) + "\n"


@pytest.mark.parametrize("protocol", sorted(RUNS))
def test_run_files_are_byte_identical(protocol: str, tmp_path: Path) -> None:
    out = tmp_path / protocol
    argv = ["run", protocol, "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet"]
    assert main(argv + RUNS[protocol]) == 0
    results = (out / "results.jsonl").read_bytes().replace(REPO.encode(), b"<repo>")
    summary = comparable_summary(out / "summary.json")
    expected = EXPECTED / protocol
    if os.environ.get("UMNI_WRITE_GOLDEN"):
        expected.mkdir(parents=True, exist_ok=True)
        (expected / "results.jsonl").write_bytes(results)
        (expected / "summary.json").write_text(summary)
    assert results == (expected / "results.jsonl").read_bytes()
    assert summary == (expected / "summary.json").read_text()
