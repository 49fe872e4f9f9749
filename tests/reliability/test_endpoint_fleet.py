"""A whole UmniBench run against a fleet of OpenAI-compatible servers (issue 14.3): one refusing
connections, one answering 503, one healthy. Failover happens inside each attempt, so the run needs
no retries and its results equal a run against the healthy server alone; the fleet's settings are
not part of any cache key; the per-server limit holds under the runner."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from reliability_support import FAST_RETRY, letter_by_hash, read_results

from tests.support.openai_server import Fault, OpenAIStubServer
from umni.run.evaluation import RunRequest, RunResult, evaluate

CASES = 2
#: Calls one UmniBench case makes: generate, two edits, nine questions.
CALLS_PER_CASE = 12


def refused_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run(
    urls: list[str], tmp: Path, name: str, *, cache: str | None = None, concurrency: int = 3, **params: Any
) -> RunResult:
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    request = RunRequest(
        protocol="umnibench", out=tmp / name, cache=tmp / (cache or f"{name}-cache"),
        model=f"openai/stub-umm?base_url={','.join(urls)}&timeout=2&image_api=images{extra}",  # no probe: counts are exact
        limit=CASES, concurrency=concurrency, retry=FAST_RETRY, progress=False,
    )  # fmt: skip
    return evaluate(request)


def retries(out: Path) -> int:
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    return sum(e["event"] == "node.retry" for e in events)


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """results.jsonl of a run against one healthy server."""
    tmp = tmp_path_factory.mktemp("alone")
    with OpenAIStubServer(responder=letter_by_hash) as server:
        result = run([server.base_url], tmp, "alone")
    assert all(n == 0 for n in result.summary.failures.values())
    return read_results(tmp / "alone")


def test_a_fleet_with_two_broken_servers_gives_the_healthy_servers_results(
    tmp_path: Path, alone: list[dict[str, Any]]
) -> None:
    with (
        OpenAIStubServer(faults=[Fault.unavailable()] * 100) as overloaded,
        OpenAIStubServer(responder=letter_by_hash) as healthy,
    ):
        urls = [refused_url(), overloaded.base_url, healthy.base_url]
        result = run(urls, tmp_path, "fleet", cool_off=60)
        assert all(n == 0 for n in result.summary.failures.values()), result.summary.failures
        assert read_results(tmp_path / "fleet") == alone
        assert retries(tmp_path / "fleet") == 0  # every call failed over within its attempt
        assert healthy.count() == CASES * CALLS_PER_CASE
        # Set aside after the calls that were already on their way to it: not tried again for a minute.
        assert 1 <= overloaded.count() <= 3

        # The fleet's settings are operational: other values find every result in the cache.
        before = healthy.count() + overloaded.count()
        again = run(urls, tmp_path, "tuned", cache="fleet-cache", per_endpoint=1, cool_off=5)
        assert healthy.count() + overloaded.count() == before
        assert sum(again.summary.calls.values()) == 0
        assert read_results(tmp_path / "tuned") == alone


def test_the_per_server_limit_holds_and_the_lane_spans_the_fleet(tmp_path: Path, alone: list[dict[str, Any]]) -> None:
    servers = [OpenAIStubServer(responder=letter_by_hash, latency=0.03).start() for _ in range(3)]
    try:
        # A run-wide --concurrency of 1 would leave two of three servers idle; per_endpoint sizes the lane.
        run([s.base_url for s in servers], tmp_path, "limited", concurrency=1, per_endpoint=2)
        peaks = [s.peak_concurrency for s in servers]
        assert max(peaks) == 2, peaks
        assert sum(s.count() for s in servers) == CASES * CALLS_PER_CASE
    finally:
        for server in servers:
            server.stop()
    assert read_results(tmp_path / "limited") == alone
