"""What the viewer serves, over real HTTP, without a browser; and the transcripts it reads."""

import io
import json
import urllib.error
import urllib.request

import pytest
from PIL import Image

from umni.reporting.viewer import ViewerData, case_status
from umni.run.evaluation import RunRequest, evaluate
from umni.store.runfolder import TABLES_JSON, RunFolder


def get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.headers.get("Content-Type"), response.read()


def test_records_carry_a_transcript_that_does_not_change_cache_keys(tmp_path):
    first = evaluate(RunRequest(protocol="genius", out=tmp_path / "a", model="sim/umm", cache=tmp_path / "c", limit=1,
                                options={"reflection_rounds": "1"}, progress=False))
    again = evaluate(RunRequest(protocol="genius", out=tmp_path / "b", model="sim/umm", cache=tmp_path / "c", limit=1,
                                options={"reflection_rounds": "1"}, progress=False))
    assert first.summary.counts.computed > 0 and again.summary.counts.computed == 0  # every node a cache hit
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

    _, body = get(base + "api/cases?status=failed&limit=1")
    first = json.loads(body)["cases"][0]
    run_key, case_id = first["run"], first["case_id"]
    _, body = get(base + f"api/case?run={urllib.request.quote(run_key, safe='')}&id={urllib.request.quote(case_id, safe='')}")
    case = json.loads(body)
    run_id = next(r["id"] for r in index["runs"] if r["key"] == run_key)
    _, by_position = get(base + f"api/case/{run_id}/{urllib.request.quote(case_id, safe='')}")
    assert json.loads(by_position)["case_id"] == case_id
    assert case["failures"] and all(f["message"] for f in case["failures"])
    assert len(case["runs"]) == 3  # the three UmniBench runs hold this case
    sha = next(p["image"] for p in case["panels"] if p["image"])
    _, full = get(base + f"img/{sha}.png")
    _, thumb = get(base + f"thumb/{sha}.png")
    with Image.open(io.BytesIO(full)) as f, Image.open(io.BytesIO(thumb)) as t:
        assert max(t.size) <= 256 and t.size[0] <= f.size[0]

    for bad in ("api/case/99/x", f"api/case/{run_id}/no-such-case", "api/case?run=nope&id=x", "img/../../etc/passwd.png", "img/" + "0" * 64 + ".png", "nothing"):
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
    assert [r.run.summary.protocol for r in data.runs] == ["wise"]
    assert data.index()["skipped"] == [str(folder / "writing")]
    listing = format_runs(find_run_dirs([folder]))
    assert "(incomplete)" in next(line for line in listing.splitlines() if line.endswith("writing"))


def raw_get(base, path, host=None):
    """One GET over a plain socket (http.client), with the Host header chosen by the test; returns
    (status, body), or raises when the server drops the connection."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host if host is not None else parts.netloc)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_only_loopback_host_headers_are_answered(demo_runs, serve):
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 must not read the runs."""
    base = serve([demo_runs / "wise-5"])
    port = base.rstrip("/").rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", f"LOCALHOST:{port}"):
        status, _ = raw_get(base, "/api/index.json", host)
        assert status == 200, host
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", f"10.0.0.5:{port}", ""):
        status, body = raw_get(base, "/api/index.json", host)
        assert status == 400, host  # refused by TrustedHostMiddleware
        assert b"wise" not in body


def test_an_explicit_host_is_answered_too(demo_runs):
    import threading

    from umni.reporting.viewer import make_server

    server = make_server([demo_runs / "wise-5"], host="127.0.0.1", allowed_hosts=["viewer.lab.internal"])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        assert raw_get(base, "/api/index.json", "viewer.lab.internal")[0] == 200
        assert raw_get(base, "/api/index.json", "other.lab.internal")[0] == 400
    finally:
        server.shutdown()
        server.server_close()


def test_the_viewer_listens_on_loopback_unless_told_otherwise(demo_runs):
    """`umni view` and `make_server` bind 127.0.0.1 by default: nothing on the network reaches it."""
    from umni.cli.parser import parse_args
    from umni.reporting.viewer import make_server

    assert parse_args(["view"]).host == "127.0.0.1"
    server = make_server([demo_runs / "wise-5"])
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


@pytest.mark.parametrize("path", [
    "/../viewer.py", "/%2e%2e/viewer.py", "/..%2fviewer.py", "/app.js/../../viewer.py", "/img/..%2f..%2fviewer.py",
    "/%2e%2e/%2e%2e/%2e%2e/pyproject.toml", "//etc/passwd", "/static/..%2f..%2f..%2fetc/passwd", "/viewer_static/app.js",
])
def test_no_path_leaves_the_viewers_page_folder(demo_runs, serve, path):
    """Paths sent verbatim (no client-side normalising), dot-segments plain and percent-encoded: the
    page's own files are served, nothing beside them (umni/reporting/viewer.py sits one level up)."""
    base = serve([demo_runs / "wise-5"])
    status, body = raw_get(base, path)
    assert status == 404, path
    assert b"import" not in body and b"root:" not in body
    assert raw_get(base, "/app.js")[0] == 200


def test_large_answers_are_compressed_and_images_are_not(demo_runs, serve):
    import gzip
    import http.client
    from urllib.parse import urlsplit

    base = serve([demo_runs / "umnibench-0"])
    parts = urlsplit(base)

    def fetch(path):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            connection.request("GET", path, headers={"Accept-Encoding": "gzip"})
            response = connection.getresponse()
            return response.getheader("Content-Encoding"), response.read()
        finally:
            connection.close()

    encoding, body = fetch("/api/cases?limit=1")
    assert encoding is None  # a few hundred bytes: sent as they are
    case = json.loads(body)["cases"][0]
    encoding, body = fetch(f"/api/case?run={case['run']}&id={urllib.request.quote(case['case_id'])}")
    assert encoding == "gzip"  # a case with its transcript: tens of KB
    detail = json.loads(gzip.decompress(body))
    sha = next(p["image"] for p in detail["panels"] if p["image"])
    encoding, body = fetch(f"/img/{sha}.png")
    assert encoding is None and body.startswith(b"\x89PNG")


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_ctrl_c_and_sigterm_stop_the_viewer_cleanly(demo_runs, signal_name):
    """Ctrl-C (SIGINT) or SIGTERM while a page holds a kept-alive connection (the status page polls
    every 5 s): the server stops at once, exit status 0, one line, no traceback."""
    import http.client
    import signal
    import subprocess
    import sys
    from urllib.parse import urlsplit

    process = subprocess.Popen([sys.executable, "-m", "umni", "view", str(demo_runs / "wise-5")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = urlsplit(process.stdout.readline().split()[2])
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        connection.request("GET", "/api/status")
        assert connection.getresponse().read()  # the connection stays open, as a browser keeps it
        process.send_signal(getattr(signal, signal_name))
        out, err = process.communicate(timeout=20)
        connection.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert err == "umni view: stopped\n"


@pytest.mark.parametrize("run_id", ["\u00b2", "%C2%B2", "1" * 5000, "-1", "+1", " 1", "\u0661"])
def test_a_malformed_run_id_answers_404(demo_runs, serve, run_id):
    base = serve([demo_runs / "wise-5"])
    status, _ = raw_get(base, "/api/case/" + urllib.request.quote(run_id, safe="%") + "/x")
    assert status == 404
    assert raw_get(base, "/api/index.json")[0] == 200  # and the server still answers


def test_runs_carry_stored_tables_and_a_case_index_read_by_the_viewer(demo_runs):
    from umni.reporting.caseindex import INDEX_FILE, SEARCH_FILE
    from umni.reporting.leaderboard import find_runs

    run_dir = demo_runs / "umnibench-0"
    for name in (TABLES_JSON, INDEX_FILE, SEARCH_FILE):
        assert (run_dir / name).exists(), name
    stored = json.loads((run_dir / TABLES_JSON).read_text())
    low, high = stored["intervals"]["overall"]
    assert low <= json.loads((run_dir / "summary.json").read_text())["scores"]["overall"] <= high
    run = find_runs([run_dir])[0]
    assert run.intervals == {k: tuple(v) if v else None for k, v in stored["intervals"].items()}  # read, never recomputed
    assert run.intervals["questions/Q1"] is not None  # an interval per score, not only the headline's
    data = ViewerData([run_dir])
    assert len(data.cases) == len((run_dir / "results.jsonl").read_text().splitlines())


def test_search_covers_text_deep_in_a_case_and_scores_sort(demo_runs, tmp_path):
    import shutil

    from umni.reporting.caseindex import INDEX_FILE

    run_dir = tmp_path / "umnibench-6"
    shutil.copytree(demo_runs / "umnibench-0", run_dir)
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    record = json.loads(lines[-1])
    reply = next(e for e in reversed(record["transcript"]) if e.get("reply", {}).get("text"))
    words = reply["reply"]["text"].split()
    needle = " ".join(words[-3:]).lower()  # the tail of the last judge reply: far past any 400-character cut
    data = ViewerData([run_dir])
    hits = data.query({"q": needle, "limit": "500"})
    assert record["case_id"] in {c["case_id"] for c in hits["cases"]}
    assert data.query({"q": "no such text anywhere 9f8e7d"})["total"] == 0

    ranked = data.query({"sort": "-score", "limit": "500"})["cases"]
    shares = [c["score"] / c["out_of"] for c in ranked if c["out_of"]]
    assert shares and shares == sorted(shares, reverse=True)
    assert all(c["out_of"] == 9 for c in ranked)  # UmniBench: the case's nine questions
    low = data.query({"max": "0.5", "limit": "500"})["cases"]
    assert all(c["score"] / c["out_of"] <= 0.5 for c in low)

    (run_dir / INDEX_FILE).unlink()  # a run made before the index existed: built in memory, same answers
    again = ViewerData([run_dir])
    assert again.query({"sort": "-score", "limit": "500"})["cases"] == ranked
    assert record["case_id"] in {c["case_id"] for c in again.query({"q": needle})["cases"]}


def test_a_port_in_use_is_named_at_once(demo_runs):
    import time

    from umni.reporting.viewer import make_server
    from umni.util.errors import InputError

    first = make_server([demo_runs / "wise-5"])
    try:
        port = first.server_address[1]
        began = time.monotonic()
        with pytest.raises(InputError) as info:
            make_server([demo_runs], port=port)
        assert f"port {port}" in str(info.value)
        assert time.monotonic() - began < 10  # before reading any run (generous bound; measured ~0 s)
    finally:
        first.server_close()


def test_a_case_carries_per_node_verdicts_timings_and_backends(demo_runs):
    run_dir = demo_runs / "umnibench-1"  # understand=sim/umm?skill=0.4: some answers wrong
    data = ViewerData([run_dir])
    key = data.runs[0].key
    wrong = data.query({"status": "wrong", "limit": "1"})["cases"][0]["case_id"]
    case = data.case(key, wrong)
    record = data.record(key, wrong)
    expected = {f"{q['stage']}/{qid}": q["correct"] for qid, q in record["questions"].items()}
    assert case["verdicts"] == expected and False in expected.values()
    facts = case["node_facts"]
    answered = [e["node"] for e in record["transcript"] if e["kind"] == "answer"]
    assert answered and all(facts[n]["calls"] >= 1 and facts[n]["seconds"] >= 0 for n in answered)
    assert case["backends"]["understand"]["params"]["skill"] == "0.4"


def test_viewer_files_that_cannot_be_made_never_leave_a_run_unfinished(demo_runs, tmp_path, capsys):
    import shutil

    from umni.protocols.protocol import get_protocol
    from umni.reporting.caseindex import INDEX_FILE, write_viewer_files

    run_dir = tmp_path / "wise-5"
    shutil.copytree(demo_runs / "wise-5", run_dir)
    (run_dir / INDEX_FILE).unlink()
    (run_dir / TABLES_JSON).unlink()
    summary = RunFolder(run_dir).read_summary()
    # a summary no table reads (one the types would refuse on reading; model_copy does not check)
    write_viewer_files(run_dir, get_protocol("wise"), summary.model_copy(update={"scores": "a summary of a shape no table reads"}))
    assert "viewer files left out (AttributeError" in capsys.readouterr().err
    assert not (run_dir / TABLES_JSON).exists() and (run_dir / INDEX_FILE).exists()  # the other file is still written
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(ViewerData([run_dir]).cases) == len(lines)


def test_the_status_page_follows_a_split_sweep_as_its_units_finish(tmp_path):
    """`umni view SWEEP` while a split sweep runs: /api/status reads the unit records on every request
    (done, running with heartbeat age, pending), and the page is served before any run finished."""
    import threading

    from tests.stores.test_sweep_shards import sweep_file
    from umni.cli import main
    from umni.reporting.viewer import make_server
    from umni.run.status import status_of
    from umni.util.errors import InputError

    split = sweep_file(tmp_path, "split", "cache")
    out = tmp_path / "split"
    (out / "units").mkdir(parents=True)
    from umni.run.sweep import load_sweep, work_units
    from umni.run.units import UnitBook

    book = UnitBook(out)
    units = work_units(load_sweep(split))
    book.write_plan(units)
    book.mark(units[3], "running", part="1/1")  # a task of the split below (another split would be refused)
    def reader(path):
        return status_of(path).to_json()

    with pytest.raises(InputError, match="no summary.json found"):  # a mistyped folder is still refused
        make_server([out, tmp_path / "elsewhere"], status=reader)
    server = make_server([out], status=reader)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        ctype, page = get(base + "/")  # nothing finished yet: the status page, not an error
        assert ctype.startswith("text/html") and b"/api/status" in page
        (entry,) = json.loads(get(base + "/api/status")[1])
        assert entry["kind"] == "sweep" and entry["counts"] == {"done": 0, "running": 1, "stale": 0, "failed": 0, "pending": 7}
        running = entry["items"][3]
        assert running["name"] == "u00003" and running["state"] == "running" and 0 <= running["age"] < 30
        assert main(["sweep", str(split), "--shard", "1/1"]) == 0  # every unit runs; the page sees it on its next refresh
        entry = json.loads(get(base + "/api/status")[1])[0]
        assert entry["counts"]["done"] == 8 and entry["totals"]["computed"] > 0
    finally:
        server.shutdown()
        server.server_close()


def test_the_transcript_shows_each_nodes_usage_cost_backend_and_retries(tmp_path, monkeypatch):
    """node.done carries the node's usage and the backend that answered, node.retry its case; the
    viewer turns them into per-node facts, with a cost where the price table prices the backend."""
    from umni.util.policy import RetryPolicy

    out = tmp_path / "run"
    evaluate(RunRequest(protocol="umnibench", out=out, model="sim/umm", roles=["understand=sim/umm?error_rate=0.5"],
                        cache=tmp_path / "c", limit=2, progress=False,
                        retry=RetryPolicy(max_attempts=6, initial_wait=0.001, max_wait=0.002, jitter=0.0)))
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    retries = [e for e in events if e["event"] == "node.retry"]
    assert retries and all(e["case"] and e["node"] for e in retries)
    done = [e for e in events if e["event"] == "node.done" and e["role"] == "understand"]
    assert done and all(e["backend"] == "sim/umm" and e["usage"]["input_tokens"] > 0 for e in done)
    assert all("images_out" not in e["usage"] for e in done)  # a count of 0 is left out: the log stays compact

    prices = tmp_path / "prices.yaml"
    prices.write_text("sim/umm:\n  input_per_million: 1000000\n  per_image: 2\n  per_call: 0.5\n")
    monkeypatch.setenv("UMNI_PRICES", str(prices))
    data = ViewerData([out])
    key = data.runs[0].key
    case_id = retries[0]["case"]
    facts = data.case(key, case_id)["node_facts"]
    retried = facts[retries[0]["node"]]
    assert retried["retries"] == sum(1 for e in retries if e["case"] == case_id and e["node"] == retries[0]["node"])
    # a reply is priced per call, a failed attempt is not: the retried node made more attempts than replies
    assert retried["calls"] > 1 and retried["usage"]["calls"] == 1
    answers = [f for f in facts.values() if f.get("role") == "understand" and "usage" in f]
    assert answers and all(f["backend"] == "sim/umm" and f["usage"]["calls"] == 1 for f in answers)
    assert all(f["cost"] == pytest.approx(f["usage"]["input_tokens"] + 0.5) for f in answers)
    image = next(f for f in facts.values() if f.get("role") == "generate")
    assert image["usage"]["images_out"] == 1 and image["cost"] == pytest.approx(2.5 + image["usage"].get("input_tokens", 0))


def test_the_viewer_server_imports_nothing_it_needs_only_later():
    """`umni view` prints its URL sooner when its start imports only what serving needs: no numpy
    (intervals are stored), no yaml (a price table is read when a case opens), no graph or backends
    (a protocol is loaded when a case's panels are drawn), no SQLite cache, and not the web server
    itself (Starlette and uvicorn are imported once the URL is printed)."""
    import subprocess
    import sys

    code = ("import sys, umni.cli.commands, umni.reporting.viewer; "
            "print(sorted(m for m in ('numpy', 'yaml', 'umni.graph', 'umni.backends', 'umni.store.cache', 'umni.protocols.protocol', 'starlette', 'uvicorn') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_node_facts_are_found_for_a_case_id_that_is_not_ascii(tmp_path):
    """events.jsonl holds text as UTF-8 (not \\u escapes): the scan must look for the id as written."""
    from umni.reporting.viewer_data import node_facts
    from umni.util.events import EventLog

    log = EventLog(tmp_path / "events.jsonl")
    log.emit("node.done", case="ケース-1 é", node="q0", role="understand", key="0" * 64, calls=2, seconds=0.5)
    log.close()
    assert node_facts(tmp_path / "events.jsonl", "ケース-1 é") == {
        "q0": {"retries": 0, "seconds": 0.5, "calls": 2, "role": "understand", "cached": False}
    }


def test_a_run_finished_while_it_is_viewed_answers_each_case_with_its_new_record(tmp_path, serve):
    """Issue 34 item 5: `umni view R` on a run made with --phase generate,edit, then the run finished
    into the same folder: results.jsonl is rewritten, so the offsets read at the start are stale.
    Every case is answered with its own record as it now stands (never a 500, never another case's),
    and the index, list and tables show the finished run."""
    from umni.cli import main

    out = tmp_path / "R"
    command = ["run", "umnibench", "--model", "sim/umm", "--limit", "3", "--out", str(out), "--cache", str(tmp_path / "c"), "--quiet"]
    assert main([*command, "--phase", "generate,edit"]) == 0
    base = serve([out])
    (run,) = json.loads(get(base + "api/index.json")[1])["runs"]
    assert run["coverage"][0] < run["coverage"][1]  # answers and judgements pending
    ids = [c["case_id"] for c in json.loads(get(base + "api/cases")[1])["cases"]]
    assert len(ids) == 3 and all(raw_get(base, f"/api/case?run=R&id={i}")[0] == 200 for i in ids)

    assert main(command) == 0  # the run finished into the same folder
    records = {r["case_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    for case_id in ids:
        status, body = raw_get(base, f"/api/case?run=R&id={urllib.request.quote(case_id)}")
        assert status == 200, body[:300]
        case = json.loads(body)
        assert case["case_id"] == case_id and case["transcript"] == records[case_id]["transcript"]
        assert case["nodes"] == records[case_id]["nodes"]
    fresh = ViewerData([out])  # what a viewer started now serves
    (run,) = json.loads(get(base + "api/index.json")[1])["runs"]
    assert run["coverage"][0] == run["coverage"][1] and run == fresh.index()["runs"][0]
    assert json.loads(get(base + "api/cases")[1]) == fresh.query({})
    assert json.loads(get(base + "api/tables.json")[1]) == fresh.tables()


def test_a_record_whose_offset_now_holds_another_case_is_never_served(demo_runs, tmp_path):
    """A results.jsonl rewritten in place with its lines reordered, each line padded to one length:
    every stored offset now points at a whole line of another case, with the file's size and
    modification time unchanged. Each case still gets its own record."""
    import os
    import shutil

    from umni.protocols.protocol import get_protocol
    from umni.reporting.caseindex import write_case_index

    run_dir = tmp_path / "wise"
    shutil.copytree(demo_runs / "wise-5", run_dir)
    results = run_dir / "results.jsonl"
    lines = results.read_bytes().splitlines()
    width = max(map(len, lines))
    results.write_bytes(b"".join(line.ljust(width) + b"\n" for line in lines))  # JSON allows trailing blanks
    write_case_index(run_dir, get_protocol("wise"))
    data = ViewerData([run_dir])
    key = data.runs[0].key
    ids = [json.loads(line)["case_id"] for line in lines]
    assert [data.record(key, i)["case_id"] for i in ids] == ids

    stat = results.stat()
    with results.open("r+b") as handle:  # in place: same file, same size
        handle.write(b"".join(line.ljust(width) + b"\n" for line in reversed(lines)))
    os.utime(results, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert results.stat().st_size == stat.st_size and results.stat().st_mtime_ns == stat.st_mtime_ns
    for case_id in ids:
        assert data.record(key, case_id)["case_id"] == case_id
        assert data.case(key, case_id)["case_id"] == case_id and data.case(key, case_id)["record"]["case_id"] == case_id
