"""A sweep's Slurm jobs (issue 35 items 1, 2, 6, 8): one array per phase and resource class, a
submit.sh that chains them and an assemble job, each model loaded once per task with `group: model`,
environment variables passed by name, and a model server a task starts and stops itself."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from umni.cli import main
from umni.run.sweep_file import load_sweep, work_units
from umni.run.sweep_jobs import arrays
from umni_adapters.sim import SimBackend

JUDGE = "sim/umm?seed=1&skill=0.5"


def lab_sweep(tmp: Path, out: str, *, group: str = "model", extra: str = "") -> Path:
    """2 protocols x 2 models, each run judged by an API-style judge that asks for no GPU (3 models)."""
    path = tmp / f"{out}.yaml"
    path.write_text(
        f"out: {tmp / out}\ncache: {tmp / out}-store\nprotocols: [umnibench, wise]\n"
        f'models: [sim/umm, "sim/umm?skill=0.6"]\nroles: [{{judge: "{JUDGE}"}}]\nlimit: 3\nshards: 2\n'
        f"group: {group}\nphases: [[generate, edit, understand], [judge]]\n"
        "slurm: {time: '01:00:00', max_jobs: 4}\n"
        "resources:\n"
        '  sim/umm: {partition: gpu, gres: "gpu:1", cpus-per-task: 4, mem: 32G}\n'
        '  "sim/umm?skill=0.6": {partition: big, gres: "gpu:a100:2", mem: 64G, time: "02:00:00"}\n'
        f'  "{JUDGE}": none\n' + extra
    )
    return path


def fake_sbatch(tmp: Path) -> Path:
    """A folder holding an `sbatch` that records its arguments and answers job ids as --parsable does."""
    folder = tmp / "bin"
    folder.mkdir()
    script = folder / "sbatch"
    script.write_text(
        "#!/bin/bash\n"
        f'log={tmp / "sbatch.log"}\n'
        'touch "$log"; n=$(( $(wc -l < "$log") + 101 ))\n'
        'echo "$n $*" >> "$log"\n'
        'echo "$n;cluster1"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def directives(script: Path) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([a-z-]+)=(.*)$", script.read_text(), re.M))


#: what summary.json says about the invocation that wrote it (an assembling one computed nothing)
INVOCATION = ("calls", "usage", "wall_seconds", "this_invocation", "run_dir")


def run_files(out: Path) -> dict[str, bytes]:
    """What the assembled runs wrote (the shards' own folders left out): results.jsonl and
    tables.json as they are, summary.json less what describes the invocation."""
    found = sorted(p for name in ("results.jsonl", "tables.json") for p in out.glob(f"*/*/{name}") if "-shard" not in p.parent.name)
    files = {str(p.relative_to(out)): p.read_bytes() for p in found}
    for path in out.glob("*/*/summary.json"):
        if "-shard" not in path.parent.name:
            summary = {k: v for k, v in json.loads(path.read_text()).items() if k not in INVOCATION}
            summary["counts"] = {k: v for k, v in summary["counts"].items() if k not in ("computed", "cached")}
            files[str(path.relative_to(out))] = json.dumps(summary, sort_keys=True).encode()
    return files


def test_submit_chains_phases_and_assembles_what_one_process_does(tmp_path: Path) -> None:
    whole = lab_sweep(tmp_path, "whole")
    assert main(["sweep", str(whole)]) == 0
    split = lab_sweep(tmp_path, "split")
    assert main(["sweep", str(split), "--emit", "slurm"]) == 0
    out = tmp_path / "split"
    scripts = sorted((out / "slurm").glob("*.sbatch"))
    for script in [*scripts, out / "submit.sh"]:
        subprocess.run(["bash", "-n", str(script)], check=True)
    env = {**os.environ, "PATH": f"{fake_sbatch(tmp_path)}:{os.environ['PATH']}"}
    submitted = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True, check=True)
    assert "assemble=104" in submitted.stdout  # the ids with the cluster name cut off
    calls = [line.split() for line in (tmp_path / "sbatch.log").read_text().splitlines()]
    order = [Path(call[-1]).name for call in calls]
    assert order == ["generate-edit-understand-1.sbatch", "generate-edit-understand-2.sbatch", "judge-1.sbatch", "assemble.sbatch"]
    assert all("--parsable" in call for call in calls)
    assert "--dependency=afterok:101:102" in calls[2] and not any(a.startswith("--dependency") for c in calls[:2] for a in c)
    assert "--dependency=afterany:101:102:103" in calls[3]
    # each model's array asks its resources; the judge's and the assemble job ask for no GPU
    first, second, judge, assemble = (directives(Path(call[-1])) for call in calls)
    assert {k: first[k] for k in ("partition", "gres", "cpus-per-task", "mem", "time", "array")} == {
        "partition": "gpu", "gres": "gpu:1", "cpus-per-task": "4", "mem": "32G", "time": "01:00:00", "array": "1-1%4"}
    assert {k: second[k] for k in ("partition", "gres", "mem", "time")} == {"partition": "big", "gres": "gpu:a100:2", "mem": "64G", "time": "02:00:00"}
    for plain in (judge, assemble):
        assert not {"gres", "partition", "mem", "cpus-per-task"} & set(plain) and plain["time"] == "01:00:00"
    # run by hand in dependency order, as Slurm would
    for call in calls[:3]:
        tasks = int(re.search(r"--array=1-(\d+)", Path(call[-1]).read_text()).group(1))  # type: ignore[union-attr]
        for task in range(1, tasks + 1):
            done = subprocess.run(["bash", call[-1]], env={**os.environ, "SLURM_ARRAY_TASK_ID": str(task)}, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-2000:]
    assert not (out / "leaderboard.md").exists()  # the tasks leave it to the assemble job
    assembled = subprocess.run(["bash", calls[3][-1]], capture_output=True, text=True, timeout=300)
    assert assembled.returncode == 0, assembled.stderr[-2000:]
    assert set(re.findall(r"(\d+) computed", assembled.stdout)) == {"0"}  # every node from the store
    assert run_files(out) == run_files(tmp_path / "whole") and len(run_files(out)) == 12


def test_the_assemble_job_names_the_units_not_done(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    split = lab_sweep(tmp_path, "split")
    jobs = arrays(load_sweep(split), work_units(load_sweep(split)), split)
    assert main(["sweep", str(split), "--task", f"{jobs[0].name}:1"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(split), "--assemble"]) == 1
    printed = capsys.readouterr()
    assert "unit(s) not done" in printed.err and "pending" in printed.out
    assert not (tmp_path / "split" / "leaderboard.md").exists()


def starts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each sim/umm spec loads (`start`), counted around the real start."""
    counted: Counter[str] = Counter()
    real = SimBackend.start

    async def counting(self: SimBackend) -> None:
        counted[str(self.spec)] += 1
        await real(self)

    monkeypatch.setattr(SimBackend, "start", counting)
    return counted


@pytest.mark.parametrize("group", ["model", "unit"])
def test_group_model_loads_each_model_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: str) -> None:
    loads = starts(monkeypatch)
    path = lab_sweep(tmp_path, "s", group=group)
    sweep = load_sweep(path)
    jobs = arrays(sweep, work_units(sweep), path)
    for job in jobs:
        for task in range(1, len(job.tasks) + 1):
            assert main(["sweep", str(path), "--task", f"{job.name}:{task}"]) == 0
    assert main(["sweep", str(path), "--assemble"]) == 0
    assert set(loads) == {"sim/umm", "sim/umm?skill=0.6", JUDGE}
    if group == "model":  # every model's units ran in one task, which loaded it once
        assert [len(job.tasks) for job in jobs] == [1, 1, 1] and set(loads.values()) == {1}
    else:  # a task per unit loads its models again (a case shard with no case loads nothing)
        assert min(loads.values()) >= 2


def test_group_model_bounds_a_task_by_max_units_per_task(tmp_path: Path) -> None:
    path = lab_sweep(tmp_path, "s", extra="max_units_per_task: 3\n")
    sweep = load_sweep(path)
    jobs = arrays(sweep, work_units(sweep), path)
    # 4 generation units per model (2 protocols x 2 shards) in tasks of 3 and 1; the judge's 4 likewise
    assert [[len(t) for t in job.tasks] for job in jobs] == [[3, 1], [3, 1], [3, 1]]


def test_resources_one_job_cannot_ask_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"out: {tmp_path / 'o'}\nprotocols: [wise]\nmodels: [sim/umm]\nroles: [{{judge: \"{JUDGE}\"}}]\n"
        f'resources:\n  sim/umm: {{partition: gpu}}\n  "{JUDGE}": {{partition: cpu}}\n'
    )
    assert main(["sweep", str(path), "--emit", "slurm"]) == 2
    err = capsys.readouterr().err
    assert f"resources.{JUDGE}.partition" in err and "'sim/umm' asks partition=gpu" in err
    path.write_text(f"out: {tmp_path / 'o'}\nprotocols: [wise]\nmodels: [sim/umm]\nresources:\n  sim/umm: {{mem: lots}}\n")
    assert main(["sweep", str(path), "--emit", "slurm"]) == 2
    assert "resources.sim/umm.mem" in capsys.readouterr().err
    path.write_text(f"out: {tmp_path / 'o'}\nprotocols: [wise]\nmodels: [sim/umm]\nphases: [[generate]]\n")
    assert main(["sweep", str(path), "--emit", "slurm"]) == 2
    assert "uses role(s) judge, which no phase lists" in capsys.readouterr().err


def test_environment_is_passed_by_name_and_a_task_without_it_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "s3cr3t-value-never-written"
    monkeypatch.setenv("UMNI_TEST_TOKEN", secret)
    path = lab_sweep(tmp_path, "s", extra="env: [UMNI_TEST_TOKEN, UMNI_TEST_OTHER]\n")
    monkeypatch.setenv("UMNI_TEST_OTHER", "x")
    assert main(["sweep", str(path), "--emit", "slurm"]) == 0
    out = tmp_path / "s"
    written = [p for p in out.rglob("*") if p.is_file()]
    assert not any(secret in p.read_text(errors="replace") for p in written)
    for script in (out / "slurm").glob("*.sbatch"):
        assert "#SBATCH --export=UMNI_TEST_TOKEN,UMNI_TEST_OTHER\n" in script.read_text()
    submit = (out / "submit.sh").read_text()
    # on the command line, which wins over a site's SBATCH_EXPORT=NONE
    assert submit.count("sbatch --parsable --export=UMNI_TEST_TOKEN,UMNI_TEST_OTHER ") == 4
    env = {k: v for k, v in os.environ.items() if k != "UMNI_TEST_TOKEN"}
    env["PATH"] = f"{fake_sbatch(tmp_path)}:{env['PATH']}"
    refused = subprocess.run(["bash", str(out / "submit.sh")], env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "UMNI_TEST_TOKEN" in refused.stderr and not (tmp_path / "sbatch.log").exists()
    monkeypatch.delenv("UMNI_TEST_TOKEN")
    capsys.readouterr()
    assert main(["sweep", str(path), "--task", "judge-1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "UMNI_TEST_TOKEN not set" in err and "UMNI_TEST_OTHER" not in err
    assert not (out / "units" / "u00001.json").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_task_serves_its_model_and_stops_the_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    log = tmp_path / "served.log"
    server = f"{sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {tmp_path} > {log} 2>&1"
    path = lab_sweep(tmp_path, "s", extra=(
        f'serve:\n  "{JUDGE}": {{command: "{server}", health: "http://127.0.0.1:{port}/", timeout: 30}}\n'))
    assert main(["sweep", str(path), "--task", "generate-edit-understand-1:1"]) == 0
    assert not log.exists()  # no unit of this task calls the judge: its server is not started
    assert main(["sweep", str(path), "--task", "judge-1:1"]) == 0
    assert "GET / " in log.read_text()  # the health check reached it
    assert not answers(port)  # stopped with the task
    # a server that never answers: the task gives up within the timeout, naming the model, and stops it
    path.write_text(path.read_text().replace("timeout: 30", "timeout: 1").replace(f"-m http.server {port}", f"-m http.server {free_port()}"))
    (tmp_path / "s" / "units").joinpath("u00005.json").unlink()  # a judge unit (wise, first model, shard 1)
    capsys.readouterr()
    assert main(["sweep", str(path), "--task", "judge-1:1"]) == 2
    assert f"the server of '{JUDGE}' did not answer" in capsys.readouterr().err


def test_the_lab_example_emits_its_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/lab/sweep.yaml: 3 models with their own resources, the judge's jobs asking no GPU."""
    example = Path(__file__).resolve().parents[2] / "examples" / "lab" / "sweep.yaml"
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(example), "--emit", "slurm"]) == 0
    scripts = {p.stem: directives(p) for p in (tmp_path / "runs" / "sweep-lab" / "slurm").glob("*.sbatch")}
    assert sorted(scripts) == ["assemble", "generate-edit-understand-1", "generate-edit-understand-2", "judge-1"]
    assert [scripts[f"generate-edit-understand-{k}"]["gres"] for k in (1, 2)] == ["gpu:1", "gpu:2"]
    assert "gres" not in scripts["judge-1"] and scripts["judge-1"]["array"] == "1-1"  # group: model
    for script in (tmp_path / "runs" / "sweep-lab").rglob("*.s*"):
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_a_health_url_with_a_password_is_not_echoed(tmp_path: Path) -> None:
    from umni.run.serving import Serve, serving
    from umni.util.errors import ConfigError

    serve = Serve(command=f"{sys.executable} -c 'import time; time.sleep(30)'", health=f"http://u:s3cret@127.0.0.1:{free_port()}/", timeout=0.5)
    with pytest.raises(ConfigError) as caught, serving({"openai/m": serve}):
        pass
    assert "s3cret" not in caught.value.message and "did not answer" in caught.value.message
