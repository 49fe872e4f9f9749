"""What the viewer serves, over real HTTP, without a browser; and the transcripts it reads."""

import io
import json
import urllib.error
import urllib.request

import pytest
from PIL import Image

from umni.reporting.viewer import ViewerData, case_status
from umni.run.evaluation import RunRequest, evaluate


def get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.headers.get("Content-Type"), response.read()


def test_records_carry_a_transcript_that_does_not_change_cache_keys(tmp_path):
    first = evaluate(RunRequest(protocol="genius", out=tmp_path / "a", model="sim/umm", cache=tmp_path / "c", limit=1,
                                options={"reflection_rounds": "1"}, progress=False))
    again = evaluate(RunRequest(protocol="genius", out=tmp_path / "b", model="sim/umm", cache=tmp_path / "c", limit=1,
                                options={"reflection_rounds": "1"}, progress=False))
    assert first.summary["counts"]["computed"] > 0 and again.summary["counts"]["computed"] == 0  # every node a cache hit
    a = json.loads((tmp_path / "a" / "results.jsonl").read_text().splitlines()[0])
    b = json.loads((tmp_path / "b" / "results.jsonl").read_text().splitlines()[0])
    assert a["transcript"] == b["transcript"]
    entries = {e["node"]: e for e in a["transcript"]}
    assert set(entries) == set(a["nodes"])
    judge = next(e for e in entries.values() if e["kind"] == "judge")
    assert judge["reply"]["text"] and judge["reply"]["value"] is not None
    assert any("image" in p for p in judge["prompt"]) and any("text" in p for p in judge["prompt"])
    generate = next(e for e in entries.values() if e["kind"] == "generate" and e["node"].startswith("round1"))
    assert len(generate["reply"]["image"]) == 64


def test_case_status_distinguishes_failed_from_wrong():
    assert case_status({"nodes": {"a": {"status": "done"}, "b": {"status": "blocked"}}}, [True]) == "failed"
    assert case_status({"nodes": {"a": {"status": "done"}}}, [True, False]) == "wrong"
    assert case_status({"nodes": {"a": {"status": "done"}}}, [True, None]) == "ok"


def test_server_api_index_case_and_images(demo_runs, serve):
    base = serve([demo_runs])
    ctype, body = get(base + "api/index.json")
    index = json.loads(body)
    assert ctype == "application/json"
    assert {r["protocol"] for r in index["runs"]} == {"umnibench", "genius", "aegis", "wise", "girbench"}
    _, body = get(base + "api/tables.json")
    assert {t["protocol"] for t in json.loads(body)} == {"umnibench", "genius", "aegis", "wise", "girbench"}
    failing = next(r for r in index["runs"] if "error_rate" in r["label"])
    assert failing["coverage"][0] < failing["coverage"][1] and failing["failed_nodes"] > 0

    run_id, case_id = next((c[0], c[1]) for c in index["cases"] if c[3] == "failed")
    _, body = get(base + f"api/case/{run_id}/{urllib.request.quote(case_id, safe='')}")
    case = json.loads(body)
    assert case["failures"] and all(f["message"] for f in case["failures"])
    assert len(case["runs"]) == 3  # the three UmniBench runs hold this case
    sha = next(p["image"] for p in case["panels"] if p["image"])
    _, full = get(base + f"img/{sha}.png")
    _, thumb = get(base + f"thumb/{sha}.png")
    with Image.open(io.BytesIO(full)) as f, Image.open(io.BytesIO(thumb)) as t:
        assert max(t.size) <= 256 and t.size[0] <= f.size[0]

    for bad in ("api/case/99/x", f"api/case/{run_id}/no-such-case", "img/../../etc/passwd.png", "img/" + "0" * 64 + ".png", "nothing"):
        with pytest.raises(urllib.error.HTTPError) as info:
            get(base + bad)
        assert info.value.code == 404


def test_viewer_reads_a_sweep_folder_and_single_runs_alike(demo_runs):
    whole = ViewerData([demo_runs])
    one = ViewerData([demo_runs / "genius-3"])
    assert len(one.runs) == 1 and len(whole.runs) == 7
    assert {c[1] for c in one.cases} <= {c[1] for c in whole.cases}


def test_umni_view_command_serves_on_localhost(demo_runs):
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "umni", "view", str(demo_runs / "wise-5")], stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("umni view: http://127.0.0.1:")
        url = line.split()[2]
        _, body = get(url + "api/index.json")
        assert [r["protocol"] for r in json.loads(body)["runs"]] == ["wise"]
        ctype, page = get(url)
        assert ctype.startswith("text/html") and b"app.js" in page
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_run_still_being_written_is_left_out_and_named(demo_runs, tmp_path, capsys):
    import shutil

    from umni.reporting.runs import find_run_dirs, format_runs
    from umni.store.completion import MARKER

    folder = tmp_path / "sweep"
    shutil.copytree(demo_runs / "wise-5", folder / "done")
    shutil.copytree(demo_runs / "aegis-4", folder / "writing")
    (folder / "writing" / MARKER).write_text("being written")
    data = ViewerData([folder])
    assert [r.run.summary["protocol"] for r in data.runs] == ["wise"]
    assert data.index()["skipped"] == [str(folder / "writing")]
    listing = format_runs(find_run_dirs([folder]))
    assert "(incomplete)" in next(line for line in listing.splitlines() if line.endswith("writing"))
