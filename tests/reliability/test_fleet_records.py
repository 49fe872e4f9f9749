"""A server of an OpenAI-compatible fleet set aside or returned leaves a trace (issue 25 item 16):
one event per change in events.jsonl, with the time and the reason, and the counts in summary.json."""

from __future__ import annotations

import json
from pathlib import Path

from reliability_support import letter_by_hash, read_results
from test_endpoint_fleet import refused_url, run

from tests.support.openai_server import OpenAIStubServer


def test_a_dead_server_is_recorded_and_counted(tmp_path: Path) -> None:
    dead = refused_url()
    with OpenAIStubServer(responder=letter_by_hash) as healthy:
        alone = run([healthy.base_url], tmp_path, "alone")
        run([dead, healthy.base_url], tmp_path, "fleet", concurrency=1, cool_off=0.01)
        healthy_name = healthy.base_url
    assert read_results(tmp_path / "fleet") == read_results(tmp_path / "alone")
    assert alone.summary.servers is None  # one server: nothing to set aside, nothing added
    events = [json.loads(line) for line in (tmp_path / "fleet" / "events.jsonl").read_text().splitlines()]
    aside = [e for e in events if e["event"] == "server.set_aside"]
    back = [e for e in events if e["event"] == "server.returned"]
    assert aside and back  # the cool-off is shorter than the run: the dead server came back and failed again
    name = dead.removesuffix("/v1") + "/v1"
    assert {e["server"] for e in aside + back} == {name}
    assert all(e["reason"].startswith("connection failed") and e["at"] > 0 and e["seconds"] == 0.01 for e in aside)
    assert all("ended" in e["reason"] for e in back)
    servers = json.loads((tmp_path / "fleet" / "summary.json").read_text())["servers"]
    assert servers["set_aside"] == len(aside) and servers["returned"] == len(back)
    assert servers["by_server"][name]["set_aside"] == len(aside)
    assert servers["by_server"][healthy_name] == {"backend": "openai/stub-umm", "set_aside": 0, "returned": 0}
