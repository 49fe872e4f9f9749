"""The top-level package exports what a user writes first, and `import umni` stays light."""

import subprocess
import sys
from pathlib import Path

import umni


def test_every_exported_name_resolves():
    for name in umni.__all__:
        assert getattr(umni, name) is not None, name
    assert sorted(dir(umni)) == sorted(umni.__all__)


def test_unknown_name_is_an_attribute_error():
    try:
        umni.not_a_thing  # noqa: B018
    except AttributeError as exc:
        assert "not_a_thing" in str(exc)
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("umni.not_a_thing resolved")


def test_evaluate_from_the_top_package(tmp_path):
    from umni import RunConfig, evaluate

    result = evaluate(RunConfig(protocol="umnibench", model="sim/umm", out=tmp_path / "run", cache=tmp_path / "cache", limit=1, progress=False))
    assert result.summary.counts.cases == 1
    assert result.report.is_file()


def test_import_does_not_load_the_engine():
    code = "import sys, umni; print('umni.run.evaluation' in sys.modules, 'anyio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_package_is_marked_typed():
    assert (Path(umni.__file__).parent / "py.typed").is_file()
