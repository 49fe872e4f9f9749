"""Models take turns on a cluster too small for all of them (issue 26 item 2), and the placement a
UMM needs (item 3): a runtime_env per model, placement groups, node labels. One local cluster of
2 CPUs, labelled zone=lab, serves every test of the module."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from umni.backends import create_backend
from umni.cli import main
from umni.util.errors import ConfigError
from umni.util.spec import Spec

ray = pytest.importorskip("ray")

from umni.backends.placement import RayPool  # noqa: E402

MODELS = ["sim/umm?skill=0.5", "sim/umm?skill=0.6", "sim/umm?skill=0.7"]


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, labels={"zone": "lab"}, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield
    ray.shutdown()


def sweep(tmp_path: Path, name: str, placement: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        "protocols: [umnibench, wise]\n"
        f"models: {json.dumps(MODELS)}\n"
        "limit: 2\n"
        f"out: {tmp_path / name}\n"
        f"cache: {tmp_path / name}-cache\n" + placement
    )
    assert main(["sweep", str(path)]) == 0
    return tmp_path / name


def results(out: Path) -> dict[str, bytes]:
    return {p.parent.relative_to(out).as_posix(): p.read_bytes() for p in out.glob("*/*/results.jsonl")}


def test_three_models_take_turns_on_room_for_two(tmp_path: Path) -> None:
    """Each model needs 1 of the 2 CPUs: every pool is loaded exactly once, never more than two at a
    time, and the results are byte for byte those of the same sweep in one process without Ray."""
    placement = "placement:\n" + "".join(f'  "{m}": {{cpus: 1}}\n' for m in MODELS)
    placed = sweep(tmp_path, "turns", placement)
    plain = sweep(tmp_path, "plain", "")
    assert results(placed) == results(plain) and len(results(plain)) == 6

    events = [json.loads(line) for line in (placed / "events.jsonl").read_text().splitlines()]
    loads = [e["spec"] for e in events if e["event"] == "pool.load"]
    releases = [e for e in events if e["event"] == "pool.release"]
    assert sorted(loads) == sorted(str(Spec.parse(f"{m}&placement=ray&cpus=1&replicas=1")) for m in MODELS)
    assert len(releases) == 3 and not any(e.get("early") for e in releases)
    # each hold as an interval (release time minus seconds held): at most two overlap at any moment
    spans = [(datetime.fromisoformat(e["time"]).timestamp() - e["seconds"], datetime.fromisoformat(e["time"]).timestamp()) for e in releases]
    for start, _ in spans:
        assert sum(1 for s, e in spans if s <= start + 1e-3 < e) <= 2
    pools = json.loads((placed / "sweep.json").read_text())["pools"]
    assert [p["loads"] for p in pools] == [1, 1, 1]
    assert all(p["cpu_hours"] > 0 and p["gpu_hours"] == 0 for p in pools)
    assert "Ray pools" in (placed / "report.html").read_text()
    assert not (plain / "events.jsonl").exists() and "pools" not in json.loads((plain / "sweep.json").read_text())

    # the same sweep again: every run is finished, so no model is loaded at all
    assert main(["sweep", str(tmp_path / "turns.yaml")]) == 0
    assert (placed / "events.jsonl").read_text().count('"pool.load"') == 3
    assert results(placed) == results(plain)


def test_sweep_shards_take_turns_too_and_the_assembling_step_loads_nothing(tmp_path: Path) -> None:
    """`umni sweep --shard I/N` schedules its share the same way; the shard that finishes last
    assembles the leaderboard from finished runs without loading any model."""
    path = tmp_path / "split.yaml"
    path.write_text(
        f'protocols: [umnibench]\nmodels: {json.dumps(MODELS)}\nlimit: 2\nout: {tmp_path / "split"}\n'
        f"cache: {tmp_path / 'split-cache'}\nplacement:\n" + "".join(f'  "{m}": {{cpus: 1}}\n' for m in MODELS)
    )
    assert main(["sweep", str(path), "--shard", "1/2"]) == 0
    assert main(["sweep", str(path), "--shard", "2/2"]) == 0
    out = tmp_path / "split"
    loads = [json.loads(line)["spec"] for line in (out / "events.jsonl").read_text().splitlines() if '"pool.load"' in line]
    assert sorted(loads) == sorted(set(loads)) and len(loads) == 3  # each model loaded once, by the shard that ran it
    assert (out / "leaderboard.md").is_file() and [p["loads"] for p in json.loads((out / "sweep.json").read_text())["pools"]] == [1, 1, 1]


def test_a_pool_kept_for_later_is_released_early_rather_than_waiting_forever(tmp_path: Path) -> None:
    """Models A, B and judges J, C of 1 CPU each on 2 CPUs: after (A, J) the judge J is kept for (B, J)
    but (A, C) cannot start beside it, so J is released early (A, which (A, C) needs, is kept) and
    loaded again for (B, J); nothing hangs and the results are still those of one process."""
    a, b, j, c = "sim/umm?skill=0.2", "sim/umm?skill=0.4", "sim/umm?skill=0.6", "sim/umm?skill=0.8"

    def go(name: str, placement: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(
            f'protocols: [umnibench]\nmodels: ["{a}", "{b}"]\nroles: [{{judge: "{j}"}}, {{judge: "{c}"}}]\nlimit: 1\n'
            f"out: {tmp_path / name}\ncache: {tmp_path / name}-cache\n" + placement
        )
        assert main(["sweep", str(path)]) == 0
        return tmp_path / name

    placed = go("evict", "placement:\n" + "".join(f'  "{m}": {{cpus: 1}}\n' for m in (a, b, j, c)))
    assert results(placed) == results(go("plain", "")) and len(results(placed)) == 4
    releases = [json.loads(line) for line in (placed / "events.jsonl").read_text().splitlines() if '"pool.release"' in line]
    loads = {p["spec"].split("skill=")[1]: p["loads"] for p in json.loads((placed / "sweep.json").read_text())["pools"]}
    assert loads == {"0.2": 1, "0.4": 1, "0.6": 2, "0.8": 1}
    assert [e["spec"].split("skill=")[1] for e in releases if e.get("early")] == ["0.6"]


def test_a_model_that_can_never_fit_is_refused_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(
        f'protocols: [umnibench]\nmodels: ["sim/umm"]\nlimit: 1\nout: {tmp_path / "big"}\n'
        'placement: {"sim/umm": {replicas: 2, cpus: 1.5}}\n'
    )
    assert main(["sweep", str(path)]) != 0
    assert "need 3 CPU in all, the Ray cluster has 2" in capsys.readouterr().err
    assert not list((tmp_path / "big").glob("umnibench/*/results.jsonl"))


def test_placement_parameters_identify_the_pool_but_not_the_outputs() -> None:
    plain = create_backend(Spec.parse("sim/umm?skill=0.5"))
    placed = create_backend(
        Spec.parse('sim/umm?skill=0.5&placement=ray&bundles=2&strategy=SPREAD&labels=zone:lab&runtime_env={"env_vars":{"A":"1"}}')
    )
    assert placed.identity() == plain.identity() and placed.identity_hash() == plain.identity_hash()
    assert isinstance(placed, RayPool) and placed.demand() == {"CPU": 2.0}
    other = Spec.parse("sim/umm?skill=0.5&placement=ray&bundles=2&strategy=PACK&labels=zone:lab")
    assert str(other) != str(placed.spec)  # a sweep's shared backends are keyed by this text: two pools


def write_plugin(root: Path) -> list[str]:
    """A backend provider, its entry point and a helper module it imports when it starts, as three
    py_modules folders; the helper exists nowhere else, so only a runtime_env can make it importable."""
    package = root / "umni_envprobe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import os\n"
        "from umni.backends.contract import Backend\n"
        "from umni.backends.roles import TextReply, Usage\n"
        "class Probe(Backend):\n"
        "    roles = frozenset({'understand'})\n"
        "    async def start(self):\n"
        "        import umni_envprobe_helper\n"
        "        self.text = umni_envprobe_helper.WORD + ' ' + os.environ.get('UMNI_PROBE', 'unset')\n"
        "    async def respond(self, parts, *, max_tokens=512, seed=0):\n"
        "        return TextReply(text=self.text, usage=Usage())\n"
    )
    dist = root / "umni_envprobe-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: umni-envprobe\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[umni.backends]\nenvprobe = umni_envprobe:Probe\n")
    helper = root / "helper" / "umni_envprobe_helper"
    helper.mkdir(parents=True)
    (helper / "__init__.py").write_text("WORD = 'from-py-modules'\n")
    return [str(package), str(dist), str(helper)]


def test_runtime_env_reaches_the_actor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modules = write_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver reads the provider's entry point too
    env = json.dumps({"env_vars": {"UMNI_PROBE": "seen"}, "py_modules": modules})
    pool = create_backend(Spec(provider="envprobe", name="x", params=(("cpus", "0.5"), ("placement", "ray"), ("runtime_env", env))))

    async def scenario() -> str:
        await pool.ensure_started()
        try:
            return str((await pool.respond(["hi"])).text)  # type: ignore[attr-defined]
        finally:
            await pool.ensure_closed()

    assert asyncio.run(scenario()) == "from-py-modules seen"


def test_a_placement_group_per_replica_is_placed_and_removed() -> None:
    from ray.util.placement_group import placement_group_table

    pool = create_backend(Spec.parse("sim/umm?placement=ray&bundles=2&cpus=0.25&strategy=PACK&labels=zone:lab"))
    before = set(placement_group_table())

    async def scenario() -> tuple[list[dict[str, object]], str]:
        await pool.ensure_started()
        try:
            groups = [g for key, g in placement_group_table().items() if key not in before]
            return groups, (await pool.respond(["hello"])).text  # type: ignore[attr-defined]
        finally:
            await pool.ensure_closed()

    groups, text = asyncio.run(scenario())
    assert [(g["state"], g["strategy"], len(g["bundles"])) for g in groups] == [("CREATED", "PACK", 2)]
    local = asyncio.run(create_backend(Spec.parse("sim/umm")).respond(["hello"]))  # type: ignore[attr-defined]
    assert text == local.text
    assert placement_group_table()[groups[0]["placement_group_id"]]["state"] == "REMOVED"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("labels=zone:mars", "no node of the Ray cluster has labels zone=mars \\(the nodes' labels: zone=lab\\)"),
        ("bundles=2&strategy=STRICT_SPREAD&cpus=0.5", "STRICT_SPREAD puts each of 2 bundles on its own node"),
    ],
    ids=["label-no-node-has", "strict-spread-on-one-node"],
)
def test_a_placement_no_node_can_take_is_refused_at_once(params: str, message: str) -> None:
    pool = create_backend(Spec.parse(f"sim/umm?placement=ray&{params}"))
    with pytest.raises(ConfigError, match=message):
        asyncio.run(pool.ensure_started())


def test_one_run_whose_pools_do_not_fit_together_takes_turns(tmp_path: Path) -> None:
    """Issue 35 item 7: `umni run` with its model on 1 CPU and its understand role on 2 CPUs of a 2-CPU
    cluster cannot hold both pools at once; it runs the model's nodes, releases it, then loads the
    judge, each pool once, and writes the results and counts of the run where both fit."""
    model, judge = "sim/umm?skill=0.5", "sim/umm?skill=0.7"

    def run(name: str, gen: str, und: str, *extra: str) -> Path:
        # a pool started at its first node (a run that fits, a --phase run) asks for its room at
        # once: wait until Ray has freed what the pools before it held (it does so a moment later)
        deadline = time.monotonic() + 30
        while ray.available_resources().get("CPU", 0.0) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        out = tmp_path / name
        args = ["run", "umnibench", "--limit", "3", "--quiet", "--model", model + gen, "--role", f"understand={judge}{und}",
                "--out", str(out), "--cache", str(tmp_path / f"{name}-cache"), *extra]
        assert main(args) == 0
        return out

    turns = run("turns", "&placement=ray&cpus=1", "&placement=ray&cpus=2", "--ray", "auto")
    fits = run("fits", "&placement=ray&cpus=1", "&placement=ray&cpus=1", "--ray", "auto")
    plain = run("plain", "", "")
    assert (turns / "results.jsonl").read_bytes() == (plain / "results.jsonl").read_bytes() == (fits / "results.jsonl").read_bytes()
    counts = [json.loads((out / "summary.json").read_text())["counts"] for out in (turns, fits, plain)]
    assert counts[0] == counts[1] == counts[2] and counts[0]["computed"] > 0 and counts[0]["cached"] == 0
    nodes = [json.loads((out / "summary.json").read_text())["this_invocation"]["nodes"] for out in (turns, plain)]
    assert nodes[0] == nodes[1]

    events = [json.loads(line) for line in (turns / "events.jsonl").read_text().splitlines()]
    pools = [(e["event"], e["spec"].split("skill=")[1].split("&")[0]) for e in events if e["event"] in ("pool.load", "pool.release")]
    assert pools == [("pool.load", "0.5"), ("pool.release", "0.5"), ("pool.load", "0.7"), ("pool.release", "0.7")]
    loaded = [e["event"] for e in events if e["event"] == "pool.load"]
    assert len(loaded) == 2 and not any(e.get("early") for e in events)
    # the same command again: every case is finished, so no pool is loaded
    run("turns", "&placement=ray&cpus=1", "&placement=ray&cpus=2", "--ray", "auto")
    assert (turns / "events.jsonl").read_text().count('"pool.load"') == 2
    # a run whose images were made by an earlier `--phase generate,edit` loads only the judge
    resumed = run("resumed", "&placement=ray&cpus=1", "&placement=ray&cpus=2", "--ray", "auto", "--phase", "generate,edit")
    run("resumed", "&placement=ray&cpus=1", "&placement=ray&cpus=2", "--ray", "auto")
    loads = [json.loads(line)["spec"] for line in (resumed / "events.jsonl").read_text().splitlines() if '"pool.load"' in line]
    assert [spec.split("skill=")[1].split("&")[0] for spec in loads] == ["0.7"]
    assert (resumed / "results.jsonl").read_bytes() == (plain / "results.jsonl").read_bytes()
