"""Fixtures for the viewer tests: demo runs of every protocol, a viewer server, a headless chromium."""

import importlib.util
import json
from pathlib import Path

import pytest

from umni.store.atomic import atomic_write_text
from umni.store.hashing import canonical_json
from umni.store.runfolder import RunFolder

ROOT = Path(__file__).resolve().parents[2]


def load_screenshots():
    """docs/screenshots.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("umni_docs_screenshots", ROOT / "docs" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shots = load_screenshots()


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory):
    return shots.build_demo_runs(tmp_path_factory.mktemp("viewer-demo"))


@pytest.fixture(scope="session")
def browser():
    if shots.browser_paths() is None:
        pytest.skip("chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)")
    pytest.importorskip("selenium", reason="selenium is not installed: pip install 'umni[test]'")
    driver = shots.make_browser()
    yield driver
    driver.quit()


@pytest.fixture
def serve():
    servers = []

    def start(paths):
        server, base = shots.serve_in_thread(paths)
        servers.append(server)
        return base

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


DOMAINS = ["Spatial", "Plant", "Fluid", "Optics", "Mechanics"]


def synthesise_thousand(source: Path, out: Path, n: int = 1000) -> dict:
    """A run directory of `n` cases made from a real small run's records, written the way the run
    writer writes them (canonical JSON lines, atomic files). Every 10th case has a failed judge of
    its first question, with the raw reply kept."""
    records = [json.loads(line) for line in (source / "results.jsonl").read_text().splitlines() if line.strip()]
    out.mkdir(parents=True)
    made, failed = [], 0
    for i in range(n):
        record = json.loads(json.dumps(records[i % len(records)]))
        record["case_id"] = f"case-{i:04d}"
        record["domain"] = DOMAINS[i % len(DOMAINS)]
        if i % 10 == 0:
            failed += 1
            record["questions"]["Q1"]["question"] = f'<img src=x onerror="window.pwned={i}"> Which objects? {i}'  # shown as text, never run
            record["nodes"]["generation/Q1"] = {"status": "failed", "failure": {"kind": "parse", "message": f"no option letter in reply {i}", "attempts": 2, "raw": f"I think maybe the answer is purple {i}"}}
        made.append(record)
    atomic_write_text(out / "results.jsonl", "".join(canonical_json(r) + "\n" for r in made))
    summary = RunFolder(source).read_summary()
    summary.counts = summary.counts.model_copy(update={"cases": n, "nodes": 12 * n})
    summary.failures = summary.failures | {"parse": failed}
    summary.run_dir = str(out)
    RunFolder(out).write_summary(summary)
    RunFolder(out).write_manifest(RunFolder(source).read_manifest())
    return {"failed": failed, "n": n}
