"""Fixtures of the store tests: one PostgreSQL server per session, a fresh database per test, and
`store` — the same test run once against SQLite and once against PostgreSQL."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pg_server import PostgresServer  # noqa: E402

_databases = itertools.count()


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
