"""Backends served by a pool of Ray actors (issue 14): the same results as in process, recovery from
a dead replica, and placement problems refused at once with the spec named."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from umni.backends import create_backend
from umni.cli import main
from umni.store.runfolder import RunFolder
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec

ray = pytest.importorskip("ray")

from umni.backends.placement import RayPool  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield
    ray.shutdown()


def run(model: str, tmp: Path, name: str, *extra: str) -> bytes:
    out = tmp / name
    code = main(
        [
            "run",
            "umnibench",
            "--model",
            model,
            "--limit",
            "4",
            "--out",
            str(out),
            "--cache",
            str(tmp / f"{name}-cache"),
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    return (out / "results.jsonl").read_bytes()


def wait_dead(actor: object, seconds: float = 30.0) -> None:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            ray.get(actor.__ray_ready__.remote())  # type: ignore[attr-defined]
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers")


def test_identity_is_the_same_in_process_or_on_ray() -> None:
    local = create_backend(Spec.parse("sim/umm?skill=0.5"))
    placed = create_backend(Spec.parse("sim/umm?skill=0.5&placement=ray&replicas=2&cpus=0.5"))
    assert isinstance(placed, RayPool)
    assert placed.identity() == local.identity()
    assert placed.identity_hash() == local.identity_hash()
    assert placed.concurrency == 2 * local.concurrency


def test_provenance_is_the_real_backends_on_ray_but_for_the_device() -> None:
    """A pool states its backend's model, revision and settings; its device is the actors' to say."""
    local = create_backend(Spec.parse("sim/umm?skill=0.5"))
    placed = create_backend(Spec.parse("sim/umm?skill=0.5&placement=ray&replicas=2&cpus=0.5"))
    for role in ("generate", "judge"):
        assert placed.provenance(role) == local.provenance(role).model_copy(update={"device": None})
        assert placed.request_settings(role) == local.request_settings(role) == frozenset()


def test_identity_per_role_is_the_real_backends_on_ray() -> None:
    """How images are asked for enters image nodes' keys only, on Ray as in process."""
    spec = "openai/m?base_url=http://gpu:8000/v1&image_api=chat"
    local = create_backend(Spec.parse(spec))
    placed = create_backend(Spec.parse(f"{spec}&placement=ray&replicas=2&cpus=0.5"))
    for role in ("understand", "judge", "generate", "edit"):
        assert placed.identity_for(role) == local.identity_for(role)
    assert placed.identity_for("generate") != placed.identity_for("understand") == local.identity()


def test_umnibench_results_match_in_process(tmp_path: Path) -> None:
    local = run("sim/umm", tmp_path, "local")
    placed = run("sim/umm?placement=ray&replicas=2&cpus=0.5", tmp_path, "ray", "--ray", "auto")
    assert placed == local


def test_run_json_records_the_flag_and_the_in_process_identity(tmp_path: Path) -> None:
    import json

    run("sim/umm?placement=ray&cpus=0.5", tmp_path, "placed", "--ray", "auto")
    manifest = json.loads((tmp_path / "placed" / "run.json").read_text())
    assert manifest["config"]["ray"] == "auto"
    local = create_backend(Spec.parse("sim/umm"))
    assert set(manifest["identities"]) and all(i == local.identity() for i in manifest["identities"].values())


def test_killed_replica_is_restarted_and_its_call_retryable() -> None:
    async def scenario() -> None:
        pool = create_backend(Spec.parse("sim/umm?placement=ray&replicas=1&cpus=0.5"))
        assert isinstance(pool, RayPool)
        await pool.ensure_started()
        try:
            before = await pool.respond(["hello"], seed=1)
            dead = pool._actors[0]
            ray.kill(dead)
            wait_dead(dead)  # ray.kill returns before the actor is gone
            with pytest.raises(BackendError) as died:
                await pool.respond(["hello"], seed=1)
            assert died.value.retryable
            assert (await pool.respond(["hello"], seed=1)) == before
        finally:
            await pool.ensure_closed()

    asyncio.run(scenario())


def test_over_subscription_is_refused_at_once() -> None:
    pool = create_backend(Spec.parse("sim/umm?placement=ray&replicas=3&cpus=1"))
    with pytest.raises(ConfigError, match="sim/umm.*3 replica"):
        asyncio.run(pool.ensure_started())


def test_start_timeout_names_the_spec() -> None:
    # a GPU no 2-CPU test cluster has: the actor can never be placed, so only the timeout ends the wait
    pool = create_backend(Spec.parse("sim/umm?placement=ray&cpus=0.5&start_timeout=2"))
    assert isinstance(pool, RayPool)
    assert ray.available_resources().get("GPU", 0) == 0
    import dataclasses

    pool.shape = dataclasses.replace(pool.shape, gpus=1.0)
    pool._check_resources = lambda: None  # type: ignore[method-assign]  # let the unplaceable actor be asked for
    with pytest.raises(ConfigError, match="sim/umm.*did not start within 2s"):
        asyncio.run(pool.ensure_started())


def test_a_replica_killed_mid_run_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    pools: list[RayPool] = []
    original = RayPool._new_actor

    def recording(self: RayPool, index: int = 0) -> object:
        if self not in pools:
            pools.append(self)
        return original(self, index)

    monkeypatch.setattr(RayPool, "_new_actor", recording)
    killed = threading.Event()

    def kill_when_both_replicas_are_busy() -> None:
        end = time.monotonic() + 120
        while time.monotonic() < end:
            pool = pools[0] if pools else None
            if pool is not None and len(pool._busy) == 2 and all(pool._busy):
                ray.kill(pool._actors[0])  # calls are in flight on it right now
                killed.set()
                return
            time.sleep(0.005)

    local = run("sim/umm", tmp_path, "local")
    killer = threading.Thread(target=kill_when_both_replicas_are_busy, daemon=True)
    killer.start()
    placed = run("sim/umm?latency=0.05&placement=ray&replicas=2&cpus=0.5", tmp_path, "killed", "--ray", "auto")
    killer.join()
    assert killed.is_set() and pools[0]._restarts == 1  # the kill landed during the run, and was recovered
    assert placed == local
    summary = RunFolder(tmp_path / "killed").read_summary()
    assert summary.counts.failed == 0 and summary.counts.blocked == 0


def test_a_sweep_placement_section_keeps_runs_and_cache(tmp_path: Path) -> None:
    """The same sweep with and without `placement:` makes the same run directories and results,
    and the placed one finds all its work in the unplaced one's cache."""
    import json

    def sweep(name: str, placement: str) -> dict[str, bytes]:
        path = tmp_path / f"{name}.yaml"
        path.write_text(
            "protocols: [umnibench]\n"
            'models: ["sim/umm", "sim/umm?skill=0.5"]\n'
            'roles: [{}, {judge: "sim/umm?skill=0.7"}]\n'
            "limit: 3\n"
            f"out: {tmp_path / name}\n"
            f"cache: {tmp_path / 'cache'}\n" + placement
        )
        assert main(["sweep", str(path)]) == 0
        found = {p.parent.relative_to(tmp_path / name).as_posix(): p.read_bytes() for p in (tmp_path / name).glob("*/*/results.jsonl")}
        assert len(found) == 4
        return found

    plain = sweep("plain", "")
    placed = sweep("placed", 'placement:\n  sim/umm: {replicas: 2, cpus: 0.25}\n  "sim/umm?skill=0.7": {cpus: 0.25}\n')
    assert placed == plain  # same run directories (keyed by the spec as written), same bytes
    for run_dir in (tmp_path / "placed").glob("umnibench/*"):
        manifest = json.loads((run_dir / "run.json").read_text())
        summary = RunFolder(run_dir).read_summary()
        assert manifest["config"]["ray"] == "auto"  # placement without ray: joins or starts one
        assert summary.counts.computed == 0 and summary.counts.cached == summary.counts.nodes
    placed_bindings = [json.loads((d / "run.json").read_text())["config"] for d in (tmp_path / "placed").glob("umnibench/*")]
    assert any("placement=ray" in json.dumps(c) and "replicas=2" in json.dumps(c) for c in placed_bindings)


@pytest.mark.parametrize(
    ("first", "then"),
    [("sim/umm", "sim/umm?placement=ray&replicas=2&cpus=0.5"), ("sim/umm?placement=ray&cpus=0.5", "sim/umm")],
    ids=["in-process-then-ray", "ray-then-in-process"],
)
def test_resuming_with_the_model_placed_elsewhere_reuses_the_finished_work(tmp_path: Path, first: str, then: str) -> None:
    import json

    def go(model: str, limit: str, cache: str) -> dict[str, int]:
        args = ["run", "umnibench", "--model", model, "--limit", limit, "--out", str(tmp_path / "run")]
        args += ["--cache", str(tmp_path / cache), "--quiet", "--ray", "auto"]
        assert main(args) == 0
        return json.loads((tmp_path / "run" / "summary.json").read_text())["this_invocation"]["calls"]

    before = go(first, "2", "cache-a")
    # a fresh cache: only the run directory's finished cases can be reused
    resumed = go(then, "4", "cache-b")
    whole = run("sim/umm", tmp_path, "whole")
    whole_calls = json.loads((tmp_path / "whole" / "summary.json").read_text())["this_invocation"]["calls"]
    assert (tmp_path / "run" / "results.jsonl").read_bytes() == whole
    assert 0 < sum(resumed.values()) < sum(whole_calls.values())  # the first two cases were not done again
    assert {r: before.get(r, 0) + resumed.get(r, 0) for r in whole_calls} == whole_calls
