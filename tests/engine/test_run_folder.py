"""The run folder's files through `umni.store.runfolder`: every model writes back the bytes it read
(key order, ints kept ints, sections only some runs have left out), a damaged file is one error
naming the file and the field, and `RunResult.summary` reads as typed fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from umni import RunConfig, RunFolder, Summary, evaluate
from umni.store.runfolder import (
    CASE_INDEX,
    OWN_FILES,
    Counts,
    Manifest,
    RunScores,
    RunTables,
    run_folders,
)
from umni.util.errors import InputError
from umni_graphs.umnibench.summary import UmniScores

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "expected"


def written(data: dict, indent: int = 2) -> str:
    return json.dumps(data, indent=indent, ensure_ascii=False)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    out = tmp_path_factory.mktemp("run") / "umnibench"
    result = evaluate(RunConfig(protocol="umnibench", model="sim/umm", limit=2, out=out, cache=out.parent / "cache", progress=False))
    return result.folder


@pytest.mark.parametrize("protocol", sorted(p.name for p in GOLDEN.iterdir()))
def test_every_protocols_summary_is_written_back_byte_for_byte(protocol: str) -> None:
    data = json.loads((GOLDEN / protocol / "summary.json").read_text()) | {"wall_seconds": 1.25, "run_dir": "/runs/x"}
    assert Summary.model_validate(data).text() == written(data)


def test_sections_only_some_runs_have_keep_their_place_and_numbers_their_type() -> None:
    """Everything summary.json can hold, in the order umni writes it; a cost of 0 stays the int 0."""
    cost = {"per_role": {"judge": None, "understand": 0}, "total": None, "known_total": 0, "unpriced_roles": ["edit"],
            "unknown_roles": ["judge"]}
    data = {
        "protocol": "aegis", "title": "AEGIS", "bindings": {"judge": "m/j"}, "backends": {"judge": {"provider": "m", "name": "j", "params": {}}},
        "options": {"variant": "default"},
        "counts": {"cases": 2, "nodes": 6, "computed": 2, "cached": 0, "failed": 1, "blocked": 1, "skipped": 0, "skipped_cases": 1, "pending": 2},
        "failures": {"backend": 1, "my_plugin_kind": 0, "blocked": 1}, "calls": {"judge": 3},
        "usage": {"judge": {"calls": 3, "images_in": 0, "images_out": 0, "input_tokens": None, "output_tokens": 9}},
        "wall_seconds": 0.5, "skipped_cases": [{"case_id": "7", "reason": "image missing"}], "notes": 0, "node_notes": {"images_ignored": 2},
        "scores": {"overall": 50, "judge": "m/j"},
        "servers": {"set_aside": 1, "returned": 1, "by_server": {"http://a/v1": {"backend": "openai/x", "set_aside": 1, "returned": 1, "last_reason": "ended"}}},
        "this_invocation": {"calls": {"judge": 3}, "usage": {"judge": {"calls": 3, "input_tokens": None, "output_tokens": 9, "images_in": 0, "images_out": 0}}, "cost": cost},
        "cost": cost, "run_dir": "/runs/a", "extended": "extended this run from the first 1 case(s) to all cases",
        "lineage": {"rejudged_from": "/runs/orig", "judges": {"original": "m/a", "new": "m/j"}},
    }
    summary = Summary.model_validate(data)
    assert summary.text() == written(data)
    assert summary.cost is not None and summary.cost.known_total == 0 and isinstance(summary.cost.known_total, int)
    lean = {k: v for k, v in data.items() if k not in ("servers", "this_invocation", "cost", "run_dir", "extended", "lineage")}
    lean["counts"] = {k: v for k, v in data["counts"].items() if k != "pending"}
    assert Summary.model_validate(lean).text() == written(lean)  # absent, never null


def test_a_run_result_reads_as_typed_fields(small_run: RunFolder) -> None:
    summary = small_run.read_summary()
    assert summary.counts.cases == 2 and summary.counts.nodes == 24 and summary.counts.pending is None
    assert isinstance(summary.scores.overall, float) and summary.scores.judge is None
    typed = summary.scores.as_model(UmniScores)
    assert typed.overall == summary.scores.overall and typed.stages["generation"] == summary.scores["stages"]["generation"]
    assert small_run.summary_json.read_text() == summary.text()
    assert sum(1 for _ in small_run.each_record()) == 2
    with pytest.deprecated_call():  # code written when the summary was a dict still reads it
        assert summary["counts"]["cases"] == 2  # type: ignore[index]


def test_the_manifest_and_the_tables_are_written_back_byte_for_byte(small_run: RunFolder) -> None:
    assert small_run.read_manifest().text() == small_run.run_json.read_text()
    tables = small_run.read_tables()
    assert tables is not None and tables.text() == small_run.tables_json.read_text()


def test_a_run_json_written_before_config_was_kept_still_reads(small_run: RunFolder) -> None:
    data = json.loads(small_run.run_json.read_text())
    del data["config"], data["limit"], data["cache"]
    manifest = Manifest.model_validate(data)
    assert manifest.config is None and manifest.limit is None and manifest.cache == ""
    assert "config" not in manifest.to_json()


@pytest.mark.parametrize(
    ("text", "message", "field"),
    [
        ('{"protocol": "umnibench", "counts": {"cases": "many"}}', "valid integer", "counts.cases"),
        ('{"title": "no protocol"}', "Field required", "protocol"),
        ('["a list"]', "does not hold a JSON object", None),
        ('{"protocol": ', "not valid JSON", None),
    ],
)
def test_a_damaged_summary_is_one_error_naming_the_file_and_the_field(tmp_path: Path, text: str, message: str, field: str | None) -> None:
    (tmp_path / "summary.json").write_text(text)
    with pytest.raises(InputError, match=message) as caught:
        RunFolder(tmp_path).read_summary()
    assert caught.value.path == str(tmp_path / "summary.json") and caught.value.field == field


def test_tables_of_another_layout_or_damaged_are_not_read(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert folder.read_tables() is None
    folder.write_tables(RunTables(intervals={"overall": (1.0, 2.0), "q": None}, no_interval={"q": "rests on 1 case(s)"}, tables=[]))
    stored = folder.read_tables()
    assert stored is not None and stored.intervals == {"overall": (1.0, 2.0), "q": None}
    assert stored.version == 2 and stored.no_interval == {"q": "rests on 1 case(s)"}
    folder.tables_json.write_text('{"version": 1, "intervals": {}, "tables": []}')  # version 1's intervals are recomputed
    assert folder.read_tables() is None
    folder.tables_json.write_text('{"version": 99, "intervals": {}, "tables": []}')
    assert folder.read_tables() is None
    folder.tables_json.write_text('{"version": 1, "intervals": "none"')
    assert folder.read_tables() is None


def test_headline_and_judge_are_none_unless_the_scores_hold_them() -> None:
    assert RunScores({}).overall is None and RunScores({"overall": True}).overall is None
    assert RunScores({"overall": 0}).overall == 0 and RunScores({"judge": "m/j"}).judge == "m/j"
    assert "overall" in RunScores({"overall": None}) and RunScores({"overall": None}).get("missing", 1) == 1


def test_run_folders_are_the_folder_itself_or_those_under_it(tmp_path: Path) -> None:
    for name in ("b", "a/x"):
        RunFolder(tmp_path / name).path.mkdir(parents=True)
        RunFolder(tmp_path / name).write_summary(Summary(protocol="umnibench", counts=Counts(cases=1)))
    assert run_folders(tmp_path) == [tmp_path / "a" / "x", tmp_path / "b"]
    assert run_folders(tmp_path / "b") == [tmp_path / "b"]
    assert run_folders(tmp_path / "a", CASE_INDEX) == []
    assert OWN_FILES == {".lock", "INCOMPLETE"}
