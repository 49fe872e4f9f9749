"""results.jsonl is written from run.db row by row (a 20k-case run's records are never all in
memory): still atomic, still scrubbed, and a failure midway leaves the previous file as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from umni.store.artifacts import atomic_write_lines
from umni.util.secrets import register_secret


def test_a_stream_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    target.write_text('{"old":1}\n')

    def lines() -> Iterator[str]:
        yield '{"new":1}\n'
        raise RuntimeError("a row failed its checksum")

    with pytest.raises(RuntimeError):
        atomic_write_lines(target, lines())
    assert target.read_text() == '{"old":1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


def test_streamed_lines_are_scrubbed_like_a_whole_text(tmp_path: Path) -> None:
    register_secret("sk-streamed-secret-123")
    target = tmp_path / "results.jsonl"
    atomic_write_lines(target, iter(['{"a":"sk-streamed-secret-123"}\n', '{"url":"http://u:p@host/x"}\n']))
    assert target.read_text() == '{"a":"***"}\n{"url":"http://host/x"}\n'
