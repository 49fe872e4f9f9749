"""Credentials in store URLs never reach run.json, a message or a log (issue 34 items 1 and 2),
against real servers on 127.0.0.1: moto's S3 server for ``--blobs``, PostgreSQL for ``--cache``.

A blobs URL takes no credential at all (they come from the AWS environment variables or profile):
one in it is refused before anything is made, naming the variables to use and never repeating the
credential. A PostgreSQL URL may carry a password (libpq reads it): it is used, and removed from
everything umni shows or stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from pg_server import PostgresServer
from s3_server import S3Server
from store_runs import RUN_TIMEOUT

SECRET = "umni-s3-secret-" + "7f3a" * 6
KEY_ID = "AKIAUMNITESTKEY0042"
PASSWORD = "pg-Pa55-" + "d00d" * 6


def umni(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One `umni` command as a user runs it; its stdout and stderr are what a Slurm log would keep."""
    return subprocess.run([sys.executable, "-m", "umni", *map(str, args)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, cwd=cwd, env=os.environ.copy())  # fmt: skip


def holding(root: Path, secret: str) -> list[str]:
    """Files under `root` whose name or bytes hold `secret`."""
    return sorted(str(p) for p in root.rglob("*") if secret in str(p) or (p.is_file() and secret.encode() in p.read_bytes()))


def said(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


# ------------------------------------------------------------------------------- item 1: --blobs

BLOB_FORMS = ["query", "query in other case", "session token", "user information", "user information of the endpoint"]


def credentialed(server: S3Server, form: str, prefix: str = "p") -> str:
    endpoint = f"endpoint_url={server.endpoint}"
    return {
        "query": f"s3://umni-blobs/{prefix}?{endpoint}&aws_secret_access_key={SECRET}",
        "query in other case": f"s3://umni-blobs/{prefix}?AWS_Secret_Access_Key={SECRET}&{endpoint}",
        "session token": f"s3://umni-blobs/{prefix}?{endpoint}&X-Amz-Security-Token={SECRET}",
        "user information": f"s3://{KEY_ID}:{SECRET}@umni-blobs/{prefix}?{endpoint}",  # botocore saw it as the bucket
        "user information of the endpoint": f"s3://umni-blobs/{prefix}?endpoint_url=http://{KEY_ID}:{SECRET}@127.0.0.1:{server.port}",
    }[form]


def assert_refused_without_echo(done: subprocess.CompletedProcess[str]) -> None:
    text = said(done)
    assert done.returncode == 2, text
    assert SECRET not in text and KEY_ID not in text and "Traceback" not in text
    assert "credentials do not belong" in text
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        assert variable in text


@pytest.mark.parametrize("form", BLOB_FORMS)
def test_umni_run_refuses_credentials_in_blobs_without_echoing_or_saving_them(s3: S3Server, tmp_path: Path, form: str) -> None:
    done = umni("run", "umnibench", "--model", "sim/umm", "--limit", "2", "--blobs", credentialed(s3, form),
                "--out", tmp_path / "R", "--cache", tmp_path / "C", "--quiet", cwd=tmp_path)  # fmt: skip
    assert_refused_without_echo(done)
    assert "--blobs" in done.stderr
    assert not (tmp_path / "R").exists()
    assert holding(tmp_path, SECRET) == [] and holding(tmp_path, KEY_ID) == []


@pytest.mark.parametrize("form", ["query", "user information"])
def test_umni_status_refuses_credentials_in_blobs_without_echoing_them(s3: S3Server, tmp_path: Path, form: str) -> None:
    made = umni("run", "umnibench", "--model", "sim/umm", "--limit", "1", "--out", tmp_path / "R", "--cache", tmp_path / "C",
                "--quiet", cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert_refused_without_echo(umni("status", tmp_path / "C", "--blobs", credentialed(s3, form), cwd=tmp_path))


@pytest.mark.parametrize("form", ["query", "user information"])
def test_a_sweep_file_with_credentials_in_blobs_is_refused_before_anything_is_made(s3: S3Server, tmp_path: Path, form: str) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"out: {tmp_path / 'S'}\ncache: {tmp_path / 'C'}\nblobs: '{credentialed(s3, form)}'\n"
                     "protocols: [umnibench]\nmodels: [sim/umm]\nlimit: 1\nshards: 2\n")  # fmt: skip
    for command in (["sweep", sweep], ["sweep", sweep, "--shard", "1/2"], ["sweep", sweep, "--emit", "slurm"]):
        done = umni(*command, cwd=tmp_path)
        assert_refused_without_echo(done)
        assert str(sweep) in done.stderr and "blobs" in done.stderr  # names the file and the field
    assert not (tmp_path / "S").exists() and not (tmp_path / "C").exists()


def test_umni_view_never_shows_a_credential_an_older_umni_saved_in_run_json(s3: S3Server, tmp_path: Path) -> None:
    """run.json written before the refusal could hold the credential: the viewer opens no store from
    such a URL, and neither its pages nor its log repeat it."""
    made = umni("run", "umnibench", "--model", "sim/umm", "--limit", "2", "--out", tmp_path / "R", "--cache", tmp_path / "C",
                "--blobs", f"s3://umni-blobs/view?endpoint_url={s3.endpoint}", "--quiet", cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    manifest = json.loads((tmp_path / "R" / "run.json").read_text())
    manifest["blobs"] = manifest["config"]["blobs"] = credentialed(s3, "query", "view")
    (tmp_path / "R" / "run.json").write_text(json.dumps(manifest))
    viewer = subprocess.Popen([sys.executable, "-m", "umni", "view", str(tmp_path / "R")], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    pages = []
    try:
        base = viewer.stdout.readline().split()[2]  # type: ignore[union-attr]
        for path in ("", "api/index.json", "api/tables.json", "api/cases?limit=5"):
            with urllib.request.urlopen(base + path, timeout=30) as reply:
                pages.append(reply.read().decode())
        case = json.loads(pages[-1])["cases"][0]
        with urllib.request.urlopen(base + f"api/case?run={urllib.request.quote(case['run'], safe='')}&id={case['case_id']}", timeout=30) as reply:
            pages.append(reply.read().decode())
    finally:
        viewer.terminate()
        out, err = viewer.communicate(timeout=30)
    assert all(SECRET not in text for text in [*pages, out, err])


# ---------------------------------------------------------------------------- item 2: --cache

PG_FORMS = ["password parameter", "postgres scheme", "sslpassword parameter", "user information"]


def with_password(url: str, form: str) -> tuple[str, str]:
    """`url` (postgresql://umni@host:port/db) carrying PASSWORD, and the URL umni may show for it."""
    if form == "password parameter":
        return f"{url}?password={PASSWORD}", url
    if form == "postgres scheme":
        plain = url.replace("postgresql://", "postgres://")
        return f"{plain}?sslmode=disable&password={PASSWORD}&application_name=umni", f"{plain}?sslmode=disable&application_name=umni"
    if form == "sslpassword parameter":
        return f"{url}?sslpassword={PASSWORD}", url
    return url.replace("umni@", f"umni:{PASSWORD}@"), url


def recorded(shown: str) -> str:
    """The store URL as run.json keeps it: as shown, less the user name (every file umni writes
    loses a URL's user information, `umni.util.secrets.scrub`)."""
    return shown.replace("umni@", "")


@pytest.mark.parametrize("form", PG_FORMS)
def test_a_postgresql_password_is_used_but_never_shown_or_stored(pg_url: str, tmp_path: Path, form: str) -> None:
    url, shown = with_password(pg_url, form)
    run = umni("run", "umnibench", "--model", "sim/umm", "--limit", "2", "--cache", url, "--out", tmp_path / "R", "--quiet",
               cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    manifest = json.loads((tmp_path / "R" / "run.json").read_text())
    assert manifest["cache"] == manifest["config"]["cache"] == recorded(shown)
    store = umni("status", url, cwd=tmp_path)
    assert store.returncode == 0 and f"store: {shown}, 24 results" in store.stdout
    folder = umni("status", tmp_path / "R", cwd=tmp_path)
    assert folder.returncode == 0
    for done in (run, store, folder):
        assert PASSWORD not in said(done)
    assert holding(tmp_path, PASSWORD) == []


#: form -> URL; a store out of reach is a storage fault (exit 1), a URL libpq cannot read is a setting to fix (exit 2)
FAILING = {
    "no server there": "postgresql://umni@127.0.0.1:1/db?password={pw}",
    "name in capitals": "{url}?PASSWORD={pw}",
    "name in mixed case": "{url}?Password={pw}&bogus=1",
    "unknown parameter": "{url}?password={pw}&bogus=1",
    "bad escape in the parameter": "{url}?password={pw}%zz",  # libpq quotes the password it cannot read
    "bad escape in the user information": "{userinfo}",
}


@pytest.mark.parametrize("form", FAILING)
def test_a_store_that_fails_never_shows_the_password(pg_server: PostgresServer, tmp_path: Path, form: str) -> None:
    good = pg_server.url("postgres")
    url = FAILING[form].format(url=good, pw=PASSWORD, userinfo=good.replace("umni@", f"umni:{PASSWORD}%zz@"))
    done = umni("run", "umnibench", "--model", "sim/umm", "--limit", "1", "--cache", url, "--out", tmp_path / "R", "--quiet",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == (1 if form == "no server there" else 2) and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert PASSWORD not in said(done) and "127.0.0.1" in done.stderr  # the store named, its password not
    assert holding(tmp_path, PASSWORD) == []


def test_a_password_in_a_sweep_files_cache_url_is_neither_echoed_nor_saved(pg_url: str, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"out: {tmp_path / 'S'}\ncache: '{pg_url}?password={PASSWORD}'\nblobs: {tmp_path / 'B'}\n"
                     "protocols: [umnibench]\nmodels: [sim/umm]\nlimit: 1\n")  # fmt: skip
    done = umni("sweep", sweep, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in said(done)
    assert holding(tmp_path / "S", PASSWORD) == []
    (manifest,) = [json.loads(p.read_text()) for p in (tmp_path / "S").rglob("run.json")]
    assert manifest["cache"] == manifest["config"]["cache"] == recorded(pg_url)


def test_a_libpq_connection_string_is_refused_without_echoing_it(pg_server: PostgresServer, tmp_path: Path) -> None:
    """``host=… password=…`` is not a store location (it became a folder of that name, password and all)."""
    dsn = f"host=127.0.0.1 port={pg_server.port} dbname=postgres user=umni password={PASSWORD}"
    done = umni("run", "umnibench", "--model", "sim/umm", "--limit", "1", "--cache", dsn, "--out", tmp_path / "R", "--quiet",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "postgresql://" in done.stderr and "--cache" in done.stderr
    assert PASSWORD not in said(done)
    assert holding(tmp_path, PASSWORD) == [] and not (tmp_path / "R").exists()


@pytest.mark.parametrize("variable", ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "PGPASSWORD"])
def test_the_variables_a_refusal_names_are_masked_wherever_they_turn_up(variable: str) -> None:
    """Where the credentials go instead, they are secrets too: a server or a library that repeats
    one (in an error botocore or libpq raises) has it masked in every message and file."""
    probe = f"from umni.util.secrets import scrub; print(scrub('refused: {SECRET}'))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, variable: SECRET})  # fmt: skip
    assert done.stdout.strip() == "refused: ***", done.stderr
