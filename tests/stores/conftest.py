"""Fixtures of the store tests: one PostgreSQL server per session, a fresh database per test, one S3
server (moto) per module with its bucket ``umni-blobs``, and `store` — the same test run once
against SQLite and once against PostgreSQL."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pg_server import PostgresServer  # noqa: E402
from s3_server import CLIENT_ENV, S3Server  # noqa: E402

_databases = itertools.count()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One server for the module (it starts in seconds); each test writes under its own prefix."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in CLIENT_ENV.items():
            patch.setenv(name, value)
        for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
            patch.delenv(name, raising=False)
        server = S3Server(tmp_path_factory.mktemp("s3") / "recording.jsonl").start()
        server.create_bucket("umni-blobs")
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def own_s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """A server of the test's own, for a test that stops it (the module's `s3` serves the others)."""
    for name, value in CLIENT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    server = S3Server(tmp_path / "recording.jsonl").start()
    server.create_bucket("umni-blobs")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    return pg_server.create_database(f"t{next(_databases)}")


@dataclass(frozen=True)
class StoreUnderTest:
    """Where a test's results go (`cache`) and its images (`blobs`), as `--cache`/`--blobs` take them."""

    name: str
    cache: str
    blobs: str

    def cli(self) -> list[str]:
        return ["--cache", self.cache, "--blobs", self.blobs]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    blobs = f"file://{tmp_path / 'blobs'}"
    if request.param == "sqlite":
        return StoreUnderTest("sqlite", f"sqlite://{tmp_path / 'cache'}", blobs)
    url = request.getfixturevalue("pg_url")
    return StoreUnderTest("postgresql", url, blobs)
