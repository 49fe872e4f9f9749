"""Whole `umni run` processes over each store: sharding then assembling, phases, two runs sharing a
store, and SIGKILL at random moments then resume. Every result file is compared byte for byte with
one single-process run on a private SQLite cache (`reference`)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import time
from pathlib import Path

import pytest
from store_runs import NODES_PER_CASE, case_ids, command, event_lines, finish, kill_at_line, run, start, summary

from umni.store.cache import Cache, RunStore
from umni.util.sharding import parse_shard

LIMIT = 8


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, float]:
    tmp = tmp_path_factory.mktemp("reference")
    started = time.monotonic()
    run(tmp / "out", ["--cache", str(tmp / "cache")], limit=LIMIT)
    return (tmp / "out" / "results.jsonl").read_bytes(), time.monotonic() - started


def assert_store_undamaged(store) -> None:
    cache = Cache(store.cache, blobs=store.blobs)
    try:
        assert cache.integrity_errors() == []
    finally:
        cache.close()


def test_two_shards_in_parallel_then_assemble_from_the_store(tmp_path: Path, store, reference) -> None:
    want, _ = reference
    out = tmp_path / "run"
    finish([start(out, store.cli(), limit=LIMIT, extra=["--shard", f"{i}/2"]) for i in (1, 2)])
    shards = [tmp_path / "run-shard1of2", tmp_path / "run-shard2of2"]
    held = [set(case_ids(s)) for s in shards]
    assert all(held) and not held[0] & held[1]  # each shard did some of the cases, none twice
    computed = [summary(s)["counts"]["computed"] for s in shards]
    assert sum(computed) == LIMIT * NODES_PER_CASE

    run(out, store.cli(), limit=LIMIT)  # the same command without --shard
    counts = summary(out)["counts"]
    assert counts["computed"] == 0 and counts["cached"] == LIMIT * NODES_PER_CASE
    assert (out / "results.jsonl").read_bytes() == want
    assert_store_undamaged(store)


def test_slurm_array_tasks_pick_their_shard_and_directory(tmp_path: Path) -> None:
    env = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}
    shard = parse_shard("slurm", env)
    assert str(shard) == "4/4" and shard.directory(Path("runs/x")) == Path("runs/x-shard4of4")
    assert str(parse_shard("slurm", {**env, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1"})) == "1/4"
    with pytest.raises(ValueError, match="SLURM_ARRAY_TASK_ID"):
        parse_shard("slurm", {})
    with pytest.raises(ValueError, match="between 1 and N"):
        parse_shard("0/2")
    # by sha256 of the id: 'a' -> ca978112ca1bbdca…, whose first 8 bytes are 0xca978112ca1bbdca, even
    assert parse_shard("1/2").holds("a") and not parse_shard("2/2").holds("a")
    ids = [f"case-{i}" for i in range(200)]
    owners = [[s for s in (parse_shard(f"{j}/3") for j in (1, 2, 3)) if s.holds(i)] for i in ids]
    assert all(len(o) == 1 for o in owners)  # every case in exactly one shard


def test_phases_run_one_role_at_a_time_and_end_as_one_run(tmp_path: Path, store, reference) -> None:
    want, _ = reference
    out = tmp_path / "run"
    run(out, store.cli(), limit=LIMIT, extra=["--phase", "generate"])
    first = summary(out)["counts"]
    assert first["computed"] == LIMIT  # one generate node per case; nothing else called a backend
    assert first["pending"] == LIMIT * (NODES_PER_CASE - 1)
    assert RunStore(out / "run.db").complete_ids() == set()  # every case waits for the next phase
    run(out, store.cli(), limit=LIMIT)
    second = summary(out)["counts"]
    assert second["computed"] == LIMIT * (NODES_PER_CASE - 1) and second["cached"] == LIMIT
    assert (out / "results.jsonl").read_bytes() == want


def test_two_runs_sharing_a_store_both_finish_uncorrupted(tmp_path: Path, store, reference) -> None:
    want, _ = reference
    outs = [tmp_path / "a", tmp_path / "b"]
    finish([start(out, store.cli(), limit=LIMIT) for out in outs])
    assert_store_undamaged(store)
    for out in outs:
        assert (out / "results.jsonl").read_bytes() == want
    computed = sum(summary(out)["counts"]["computed"] for out in outs)
    assert LIMIT * NODES_PER_CASE <= computed <= 2 * LIMIT * NODES_PER_CASE
    run(tmp_path / "c", store.cli(), limit=LIMIT)
    assert summary(tmp_path / "c")["counts"]["computed"] == 0


def test_sigkill_at_random_moments_then_resume(tmp_path: Path, store, reference) -> None:
    want, _ = reference
    rng = random.Random(20251125)
    out = tmp_path / "run"
    landed = 0
    finished_before: dict[str, dict] = {}
    for _ in range(4):
        # a random point within about two cases' worth of nodes: four kills cannot finish the run
        code = kill_at_line(start(out, store.cli(), limit=LIMIT), out, event_lines(out) + rng.randint(1, 2 * NODES_PER_CASE))
        assert code in (None, 0)
        landed += code is None
        assert_store_undamaged(store)
        stored = {r["case_id"]: r for r in RunStore(out / "run.db").records()} if (out / "run.db").exists() else {}
        for case_id, record in finished_before.items():  # a finished case stays finished, unchanged
            assert stored[case_id] == record
        finished_before = stored
    run(out, store.cli(), limit=LIMIT)
    assert_store_undamaged(store)
    assert (out / "results.jsonl").read_bytes() == want
    assert landed >= 2, "most kills should interrupt a live run"


def test_a_store_password_never_reaches_the_run_directory(tmp_path: Path, pg_url: str) -> None:
    # the test server trusts local connections, so any password is accepted and must be dropped
    url = pg_url.replace("postgresql://umni@", "postgresql://umni:pw-5ecret-9@")
    out = tmp_path / "run"
    run(out, ["--cache", url, "--blobs", str(tmp_path / "blobs")], limit=1)
    assert summary(out)["counts"]["computed"] == NODES_PER_CASE
    leaked = [p.name for p in out.rglob("*") if p.is_file() and b"pw-5ecret-9" in p.read_bytes()]
    assert leaked == []
    # written without user and password (umni.secrets scrubs every URL's user info)
    assert json.loads((out / "run.json").read_text())["cache"] == pg_url.replace("umni@", "")


def test_a_phase_naming_no_role_is_refused_before_any_work(tmp_path: Path) -> None:
    done = subprocess.run(command(tmp_path / "run", ["--cache", str(tmp_path / "cache")], limit=1, extra=["--phase", "generat"]),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert "--phase generat: no such role in protocol 'umnibench'" in done.stderr
    assert not (tmp_path / "run" / "run.db").exists()


def test_a_sweep_shares_one_store_given_by_url(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from umni.cli import main

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "protocols: [umnibench]\n"
        'models: ["sim/umm", "sim/umm?skill=0.4"]\n'
        "limit: 1\n"
        f"out: {tmp_path / 'out'}\n"
        f"cache: {pg_url}\n"
        f"blobs: file://{tmp_path / 'blobs'}\n"
    )
    assert main(["sweep", str(sweep)]) == 0, capsys.readouterr().err
    cache = Cache(pg_url, blobs=f"file://{tmp_path / 'blobs'}")
    try:
        rows = list(cache.results.rows())
        assert cache.integrity_errors() == []
    finally:
        cache.close()
    assert len(rows) == 2 * NODES_PER_CASE  # both runs' nodes (two bindings: no key in common) in PostgreSQL
    assert any((tmp_path / "blobs").rglob("*.png"))


def test_viewer_and_sweep_report_find_images_in_a_blob_store_given_by_url(tmp_path: Path) -> None:
    from umni.reporting.viewer import ViewerData

    out = tmp_path / "run"
    blobs = tmp_path / "elsewhere"
    run(out, ["--cache", f"sqlite://{tmp_path / 'one.db'}", "--blobs", f"file://{blobs}"], limit=1)
    shas = sorted(
        set(re.findall(r"[0-9a-f]{64}", (out / "results.jsonl").read_text())) & {p.stem for p in blobs.rglob("*.png")}
    )
    assert len(shas) == 3  # the case's generated and edited images, all in --blobs
    viewer = ViewerData([out])
    assert all(viewer.image(sha, thumb=False) == next(blobs.rglob(f"{sha}.png")).read_bytes() for sha in shas)
