"""A sweep file's `placement:` section (issue 14): what it turns into, and the mistakes it refuses
with the file and field named. No Ray cluster is needed to read a sweep file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from umni.backends.pool_shape import PoolShape
from umni.run.sweep import expand, load_sweep
from umni.util.errors import ConfigError, InputError
from umni.util.spec import Spec


def sweep_file(tmp_path: Path, placement: str, extra: str = "") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "protocols: [umnibench]\n"
        'models: ["sim/umm?skill=0.5"]\n'
        'roles: [{}, {judge: "sim/umm?skill=0.7"}]\n' + extra + "placement:\n" + placement
    )
    return path


def test_placement_becomes_the_spec_parameters_of_each_placed_binding(tmp_path: Path) -> None:
    sweep = load_sweep(
        sweep_file(tmp_path, '  "sim/umm?skill=0.5": {replicas: 2, cpus: 0.5, max_restarts: 1}\n  "sim/umm?skill=0.7": {gpus: 1}\n')
    )
    assert sweep.ray == "auto"  # a placement section without ray: joins or starts a cluster
    first, second = expand(sweep)
    assert first.model is not None and Spec.parse(first.model).options == {
        "skill": "0.5", "placement": "ray", "replicas": "2", "cpus": "0.5", "max_restarts": "1",
    }
    assert second.roles == ["judge=sim/umm?gpus=1&placement=ray&replicas=1&skill=0.7"]
    assert [r.out for r in expand(load_sweep(sweep_file(tmp_path, "  {}\n")))] == [first.out, second.out]  # same run dirs


def test_an_address_given_is_kept(tmp_path: Path) -> None:
    sweep = load_sweep(sweep_file(tmp_path, '  "sim/umm?skill=0.5": {}\n', extra="ray: 10.0.0.1:6379\n"))
    assert sweep.ray == "10.0.0.1:6379"


def test_a_spec_the_sweep_does_not_use_is_refused(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, "  sim/umm: {replicas: 2}\n")
    with pytest.raises(InputError, match="no model or role binding of this sweep is spelt 'sim/umm'") as refused:
        load_sweep(path)
    assert refused.value.path == str(path) and refused.value.field == "placement.sim/umm"


def test_an_unknown_setting_is_refused_with_its_field(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, '  "sim/umm?skill=0.5": {replica: 2}\n')
    with pytest.raises(InputError) as refused:
        load_sweep(path)
    assert refused.value.path == str(path) and refused.value.field == "placement.sim/umm?skill=0.5.replica"


def test_placing_a_spec_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "protocols: [umnibench]\n"
        'models: ["sim/umm?placement=ray"]\n'
        'placement: {"sim/umm?placement=ray": {replicas: 2}}\n'
    )
    with pytest.raises(InputError, match="already sets placement"):
        load_sweep(path)


def test_replicas_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="greater than or equal to 1"):
        load_sweep(sweep_file(tmp_path, '  "sim/umm?skill=0.5": {replicas: 0}\n'))


def test_bundles_runtime_env_and_labels_become_spec_parameters(tmp_path: Path) -> None:
    (tmp_path / "mods" / "helper").mkdir(parents=True)
    sweep = load_sweep(
        sweep_file(
            tmp_path,
            '  "sim/umm?skill=0.5": {bundles: 2, strategy: SPREAD, gpus: 1, labels: {zone: "in(a,b)", gpu: h100},\n'
            '    runtime_env: {env_vars: {HF_HOME: /data}, py_modules: [mods/helper]}}\n',
        )
    )
    model = expand(sweep)[0].model
    assert model is not None
    options = Spec.parse(model).options
    assert options["bundles"] == "2" and options["strategy"] == "SPREAD" and options["labels"] == "gpu:h100,zone:in(a,b)"
    # a relative py_modules folder is read from the sweep file's folder, so the run may start elsewhere
    assert json.loads(options["runtime_env"]) == {"env_vars": {"HF_HOME": "/data"}, "py_modules": [str((tmp_path / "mods" / "helper").resolve())]}
    shape = PoolShape.of(Spec.parse(model))
    assert shape.labels == {"gpu": "h100", "zone": "in(a,b)"} and shape.demand() == {"CPU": 2.0, "GPU": 2.0}
    node = {"Alive": True, "Labels": {"zone": "b", "gpu": "h100"}, "Resources": {"CPU": 8.0, "GPU": 4.0}}
    assert shape.never_fits(Spec.parse(model), [node]) is None
    assert "no node of the Ray cluster has labels" in str(shape.never_fits(Spec.parse(model), [{**node, "Labels": {"zone": "c"}}]))


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ("{runtime_env: {py_modules: [missing]}}", "runtime_env.py_modules", "missing does not exist"),
        ("{strategy: PACK}", "strategy", "give bundles: K"),
        ("{strategy: TIGHT, bundles: 2}", "strategy", "PACK"),
    ],
    ids=["missing-py-module", "strategy-without-bundles", "unknown-strategy"],
)
def test_a_bad_placement_is_refused_with_its_field(tmp_path: Path, entry: str, field: str, message: str) -> None:
    path = sweep_file(tmp_path, f'  "sim/umm?skill=0.5": {entry}\n')
    with pytest.raises(InputError, match=message) as refused:
        load_sweep(path)
    assert refused.value.field == f"placement.sim/umm?skill=0.5.{field}"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("runtime_env=%7Bnot", "runtime_env is not JSON"),
        ('runtime_env={"env_vars":{"HF_TOKEN":"hf_abc"}}', "HF_TOKEN looks like a credential"),
        ("labels=zone", "key:value pairs"),
        ("bundles=0", "at least 1"),
    ],
)
def test_a_bad_placement_parameter_is_refused_before_any_cluster_work(params: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        PoolShape.of(Spec.parse(f"sim/umm?placement=ray&{params}"))
    assert "hf_abc" not in str(refused.value)
