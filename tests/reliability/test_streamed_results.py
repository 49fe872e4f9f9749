"""results.jsonl is written from run.db row by row (a 20k-case run's records are never all in
memory): still atomic, still scrubbed, and a failure midway leaves the previous file as it was."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from umni.protocols.caseio import CompactCases, pick, read_jsonl
from umni.reporting.report import _whole_lines
from umni.run.evaluation import RunRequest, evaluate
from umni.store.atomic import atomic_write_lines
from umni.store.runfolder import each_record
from umni.util.errors import InputError
from umni.util.secrets import register_secret
from umni_cases import bundled
from umni_graphs.umnibench.cases import UmniCase


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


# -- a large run holds neither its cases nor its records whole (issue 27: 20,000 UmniBench cases
# -- took over a gigabyte: 13 KB a case as models, 16 KB a record, and the finish read them all) --

def write_cases(path: Path, n: int) -> Path:
    """`n` distinct UmniBench cases: the bundled ones in turn, each copy with its own id and instructions."""
    base = [json.loads(line) for line in (bundled("umnibench") / "cases.jsonl").read_text().splitlines() if line.strip()]
    with path.open("w") as out:
        for i in range(n):
            case = json.loads(json.dumps(base[i % len(base)]))
            case["id"] = f"{case['id']}-x{i:05d}"
            for stage in ("generation", "interaction", "counterfactual"):
                case[stage]["instruction"] += f" (Copy {i // len(base)}.)"
            out.write(json.dumps(case) + "\n")
    return path


def test_cases_read_from_json_lines_are_kept_compact_and_made_again_alike(tmp_path: Path) -> None:
    path = write_cases(tmp_path / "cases.jsonl", 30)
    lines = [line for line in path.read_text().splitlines() if line]
    cases = read_jsonl(path, UmniCase)
    assert isinstance(cases, CompactCases) and len(cases) == 30
    assert [c.id for c in cases] == [json.loads(line)["id"] for line in lines]
    assert cases[7] == UmniCase.model_validate(json.loads(lines[7])) and cases[7] is not cases[7]
    assert [c.id for c in cases[5:8]] == [cases[i].id for i in (5, 6, 7)]
    assert [c.id for c in pick(cases, [2, 29])] == [cases[2].id, cases[29].id]


def test_a_run_makes_each_case_only_while_it_needs_it(tmp_path: Path, monkeypatch) -> None:
    """With 200 cases and a window of 64 open cases, no more case models than that are alive at once."""
    from umni_graphs.umnibench.protocol import PROTOCOL

    alive: list[int] = []
    real = PROTOCOL.record

    def record(case, outcomes, options):
        if len(alive) < 8 and int(case.id.rsplit("x", 1)[1]) % 2 == 0:
            gc.collect()
            alive.append(sum(type(o) is UmniCase for o in gc.get_objects()))
        return real(case, outcomes, options)

    monkeypatch.setattr(PROTOCOL, "record", record)
    result = evaluate(RunRequest(protocol="umnibench", cases=write_cases(tmp_path / "cases.jsonl", 200), out=tmp_path / "run",
                                 cache=tmp_path / "cache", model="sim/umm", progress=False))
    assert result.summary.counts.cases == 200 and result.summary.counts.failed == 0
    assert alive and max(alive) <= 64 + 2, alive


def test_results_are_read_one_line_at_a_time_with_the_same_errors(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"case_id":"a"}\r\n\n{"case_id":"b\xe2\x80\xa8c"}\n')
    assert [r["case_id"] for r in each_record(path)] == ["a", "b\u2028c"]  # U+2028 is no line break
    path.write_bytes(b'{"case_id":"a"}\n{"case_id": \xff}\n')
    with pytest.raises(InputError, match=r"not UTF-8 text \(invalid start byte at byte 28\)"):
        list(each_record(path))
    path.write_bytes(b'{"case_id":"a"}\n{"case_id": }\n')
    with pytest.raises(InputError, match=r"results.jsonl:2: invalid JSON"):
        list(each_record(path))


def test_the_report_is_written_in_whole_lines_so_scrubbing_sees_each_credential_whole(tmp_path: Path) -> None:
    chunks = ["<p>", "sk-abc", "def", "</p>\n"] * 3000 + ["tail"]
    pieces = list(_whole_lines(iter(chunks), size=100))
    assert "".join(pieces) == "".join(chunks)
    assert len(pieces) > 10 and all(p.endswith("\n") for p in pieces[:-1])


def test_an_unreadable_results_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "results.jsonl"
    folder.mkdir()  # a folder where the file should be
    with pytest.raises(InputError, match="results.jsonl: cannot read the file"):
        list(each_record(folder))
    with pytest.raises(InputError, match="file not found"):
        list(each_record(tmp_path / "absent.jsonl"))
