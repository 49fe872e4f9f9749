"""A sweep file's `placement:` section (issue 14): what it turns into, and the mistakes it refuses
with the file and field named. No Ray cluster is needed to read a sweep file."""

from __future__ import annotations

from pathlib import Path

import pytest

from umni.run.sweep import expand, load_sweep
from umni.util.errors import InputError
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
