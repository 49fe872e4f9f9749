"""A throwaway PostgreSQL server for the store tests: Debian's binaries, a temporary data directory,
listening on 127.0.0.1 only, stopped (and its files removed) by `stop`.

initdb refuses to run as root, so under root the server runs as the `postgres` system user (created
by Debian's postgresql package). A missing installation fails the tests, with the command to fix it:
``apt-get install -y postgresql``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bin_dir() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).parent
    raise RuntimeError("PostgreSQL server binaries not found (pg_ctl); install them: apt-get install -y postgresql")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """`start()` then `url(database)`; `create_database(name)`; `stop()`."""

    def __init__(self, *, durable: bool = False, settings: dict[str, str] | None = None) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="umni-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.durable = durable
        #: further server settings (``-c NAME=VALUE``)
        self.settings = settings or {}
        self._as: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr or done.stdout}")

    def start(self) -> PostgresServer:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "umni", "--no-sync", "-E", "UTF8"
        )
        self._options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c max_connections=200"
        if not self.durable:  # the tests kill clients, never the server: spare the shared disk the fsyncs
            self._options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._start_server()
        return self

    def _start_server(self) -> None:
        log = str(self.root / "server.log")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", log, "-o", self._options, "-w", "-t", "60", "start")

    def restart(self, down_for: float = 0.0) -> float:
        """Stop the server (fast: every client's connection is cut, open transactions abort), wait
        `down_for` seconds, start it again on the same port; returns the seconds it was away."""
        import time

        started = time.monotonic()
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(down_for)
        self._start_server()
        return time.monotonic() - started

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://umni@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
