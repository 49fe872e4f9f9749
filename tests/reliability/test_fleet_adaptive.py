"""Adaptive concurrency per server (issue 26 item 5): AIMD on 429 and on slow replies, one cut per
burst, growth back to the cap, and a run against a throttling server that records the cut and ends
with the same results as an unthrottled one."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from reliability_support import letter_by_hash
from test_endpoint_fleet import run

from tests.support.openai_server import Fault, OpenAIStubServer
from umni_adapters.endpoints import Fleet


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_limits_halve_on_throttling_once_per_burst_and_grow_back() -> None:
    clock = Clock()
    events: list[tuple[str, dict[str, object]]] = []
    fleet = Fleet([("http://a/v1", None), ("http://b/v1", None)], per_endpoint=8, clock=clock, adaptive=True,
                  latency_target=2.0, on_event=lambda e, **f: events.append((e, f)))
    a, b = fleet.endpoints
    assert a.limit == b.limit == 8
    fleet.feedback(a, throttled=True, seconds=0.1)
    fleet.feedback(a, throttled=True, seconds=0.1)  # same burst: no second cut
    assert a.limit == 4 and b.limit == 8
    clock.now += 1.5
    fleet.feedback(a, throttled=False, seconds=3.0)  # slower than the target: cut again
    assert a.limit == 2
    assert [f["limit"] for e, f in events if e == "server.slowed"] == [4, 2]
    assert "latency_target" in str(events[-1][1]["reason"])
    fleet.feedback(a, throttled=False, seconds=0.1)
    fleet.feedback(a, throttled=False, seconds=0.1)
    assert 2.8 < a.limit < 3  # a round of two good replies at limit 2 adds about one
    for _ in range(100):
        fleet.feedback(a, throttled=False, seconds=0.1)
    assert a.limit == 8  # back at the cap, never above it

    async def in_flight() -> int:  # the limit is what acquire honours
        clock.now += 5
        fleet.feedback(b, throttled=True, seconds=0.1)
        fleet.feedback(b, throttled=True, seconds=0.1)
        held = []
        with anyio.move_on_after(0.2):
            while True:
                held.append(await fleet.acquire(skip={0}))
        return len(held)

    assert anyio.run(in_flight) == 4


def test_a_throttling_server_is_slowed_and_the_results_do_not_change(tmp_path: Path) -> None:
    with OpenAIStubServer(responder=letter_by_hash) as plain:
        alone = run([plain.base_url], tmp_path, "plain")
    with OpenAIStubServer([Fault.rate_limit("0")] * 3, responder=letter_by_hash) as throttling:
        result = run([throttling.base_url], tmp_path, "adaptive", adaptive="true", per_endpoint=8)
    assert result.summary.scores == alone.summary.scores  # the throttled calls were retried
    assert alone.summary.counts.failed == result.summary.counts.failed == 0
    events = [json.loads(line) for line in (tmp_path / "adaptive" / "events.jsonl").read_text().splitlines()]
    slowed = [e for e in events if e["event"] == "server.slowed"]
    assert slowed and slowed[0]["limit"] == 4 and slowed[0]["reason"] == "HTTP 429"
