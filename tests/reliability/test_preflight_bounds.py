"""The pre-flight is held to the same deadline and body limits as every call (issue 34 item 6).

It once used a plain client with a 10 s per-read timeout and read whole bodies: a server trickling
a byte every 50 ms kept `umni run` alive as long as it liked, and one streaming garbage grew a run
to gigabytes. Bounds are read from the server's side (the bytes it managed to hand over, against
what the spec's timeout allows) and from this process's peak memory, never from a clock.
"""

from __future__ import annotations

import resource
from pathlib import Path

import anyio
from hostile_server import GIB, HostileServer, huge_chunked, trickle

from umni.backends import create_backend
from umni.cli import main
from umni.util.spec import Spec

#: One trickled byte every this many seconds: each read is well inside any per-read timeout.
EVERY = 0.05


def preflight(spec: str, roles: set[str]) -> list[str]:
    backend = create_backend(Spec.parse(spec))
    return anyio.run(backend.preflight, frozenset(roles))


def most_bytes(requests: int, timeout: float) -> int:
    """What a server trickling a byte every EVERY seconds can hand over in `requests` exchanges that
    each end at `timeout`: timeout / EVERY bytes apiece, and a few of slack for the last write."""
    return requests * (int(timeout / EVERY) + 5)


def test_a_trickling_server_cannot_hold_the_preflight_past_the_timeout() -> None:
    with HostileServer(trickle(total=200, every=EVERY)) as server:
        problems = preflight(f"openai/m?base_url={server.base_url}&timeout=1", {"judge"})
        assert server.finished.wait(20)
        sent, requests = server.bytes_sent, server.requests
    assert sent <= most_bytes(requests, 1.0) < 200  # cut off after about 20 bytes a request, not all 200
    assert len(problems) == 1 and "timeout" in problems[0] and "1 s" in problems[0]


def test_a_server_streaming_garbage_is_cut_off_at_the_size_cap() -> None:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with HostileServer(huge_chunked(GIB // 4)) as server:
        problems = preflight(f"openai/m?base_url={server.base_url}&timeout=60&max_response_bytes=1000000", {"judge"})
        assert server.finished.wait(60)
        sent = server.bytes_sent
    assert sent < 64 * 1024 * 1024  # abandoned near the cap, not read to the end (256 MiB)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) < 64 * 1024  # KiB: under 64 MiB
    assert len(problems) == 1 and "too large" in problems[0] and "max_response_bytes" in problems[0]


def test_umni_run_against_a_trickling_server_ends_within_its_timeout(tmp_path: Path) -> None:
    """The reproducer as a user runs it: every exchange, the pre-flight's included, ends at timeout=2."""
    with HostileServer(trickle(total=2000, every=EVERY)) as server:
        code = main(["run", "umnibench", "--limit", "1", "--max-attempts", "1", "--quiet", "--out", str(tmp_path / "r"),
                     "--cache", str(tmp_path / "c"), "--model", f"openai/m?base_url={server.base_url}&timeout=2"])
        server.finished.wait(20)
        sent, requests = server.bytes_sent, server.requests
    assert code == 0  # every node failed (counted), the run itself finished
    assert sent <= most_bytes(requests, 2.0)
