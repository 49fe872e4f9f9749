"""A run whose blob store or result store is refused, or out of reach, leaves no trace (issue 34
item 8): no half-made run folder (.lock, INCOMPLETE, run.json, run.db), and a finished run folder
given again with such a store stays byte for byte as it was, still complete. Real servers on
127.0.0.1: moto's S3 server and PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pg_server import PostgresServer
from s3_server import S3Server
from store_runs import RUN_TIMEOUT

#: Each refused setting: the flag and its value (from the servers), and the exit code it ends with.
REFUSED: dict[str, tuple[str, Callable[[S3Server, PostgresServer], str], int]] = {
    "credentials in blobs": ("--blobs", lambda s3, pg: f"s3://umni-blobs/r?endpoint_url={s3.endpoint}&aws_secret_access_key=x", 2),
    "unknown blob scheme": ("--blobs", lambda s3, pg: "gs://umni-blobs/r", 2),
    "unknown blobs parameter": ("--blobs", lambda s3, pg: f"s3://umni-blobs/r?endpoint_url={s3.endpoint}&colour=blue", 2),
    "missing bucket": ("--blobs", lambda s3, pg: f"s3://no-such-bucket/r?endpoint_url={s3.endpoint}", 2),
    "file URL with a host": ("--blobs", lambda s3, pg: "file://elsewhere/blobs", 2),
    "unknown store scheme": ("--cache", lambda s3, pg: "mysql://127.0.0.1/umni", 2),
    "missing database": ("--cache", lambda s3, pg: pg.url("no_such_database"), 1),
    "no database server": ("--cache", lambda s3, pg: "postgresql://umni@127.0.0.1:1/umni", 1),
}


def umni_run(tmp: Path, out: Path, *store: str) -> subprocess.CompletedProcess[str]:
    settings = {"--cache": str(tmp / "cache"), "--blobs": str(tmp / "blobs")}
    settings.update(dict(zip(store[::2], store[1::2], strict=True)))
    command = [sys.executable, "-m", "umni", "run", "umnibench", "--model", "sim/umm", "--limit", "2", "--out", str(out), "--quiet",
               *(part for pair in settings.items() for part in pair)]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=tmp, env=os.environ.copy())


def contents(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the command the tests give again (its .lock stays, as a finished run leaves it)."""
    tmp = tmp_path_factory.mktemp("finished")
    done = umni_run(tmp, tmp / "run")
    assert done.returncode == 0, done.stderr
    return tmp


@pytest.mark.parametrize("refusal", REFUSED)
def test_a_refused_store_leaves_no_run_folder(s3: S3Server, pg_server: PostgresServer, tmp_path: Path, refusal: str) -> None:
    flag, value, code = REFUSED[refusal]
    done = umni_run(tmp_path, tmp_path / "run", flag, value(s3, pg_server))
    assert done.returncode == code and done.stderr.startswith("umni: error: ") and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("refusal", REFUSED)
def test_a_refused_store_leaves_a_finished_run_exactly_as_it_was(
    s3: S3Server, pg_server: PostgresServer, finished: Path, tmp_path: Path, refusal: str
) -> None:
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)  # the run folder with the cache and blobs it was made with
    before = contents(tmp_path / "run")
    flag, value, code = REFUSED[refusal]
    done = umni_run(tmp_path, tmp_path / "run", flag, value(s3, pg_server))
    assert done.returncode == code, done.stderr
    assert contents(tmp_path / "run") == before  # no INCOMPLETE: the finished run still reads as finished
