"""A real S3-compatible server for tests: moto's server mode, as a subprocess on 127.0.0.1.

The server keeps objects in memory; with `durable` it also records every request to a file and
replays them when started again, so a server killed with SIGKILL comes back with what it stored
(as a real object store would). Credentials are dummy ones moto accepts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import s3fs

#: Environment a client of the test server needs (credentials moto accepts, no AWS config files).
CLIENT_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _drop_torn_entry(recording: Path) -> int:
    """Rewrite the recording as one whole request per line, without the one a SIGKILL tore, and
    return how many there are. moto appends an entry and then its newline in two writes, from
    several threads at once, so entries may run together on one line, and a kill may cut the last
    one short (replaying such a file fails with a 500). The torn request was never answered, as a
    real store loses an unacknowledged write."""
    text, decoder = recording.read_text(), json.JSONDecoder()
    entries: list[str] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            break
        try:
            entry, at = decoder.raw_decode(text, at)
        except ValueError:
            break
        entries.append(json.dumps(entry) + "\n")
    recording.write_text("".join(entries))
    return len(entries)


class S3Server:
    """`start()`, `kill()` (SIGKILL, as a crash), `start()` again on the same port, `stop()`."""

    def __init__(self, recording: Path) -> None:
        self.port = _free_port()
        self.recording = recording
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        env = {**os.environ, "MOTO_ENABLE_RECORDING": "true", "MOTO_RECORDER_FILEPATH": str(self.recording)}
        replay = self.recording.exists() and _drop_torn_entry(self.recording) > 0
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        if replay:  # what the killed server had stored (the replay itself is not recorded again)
            request = urllib.request.Request(f"{self.endpoint}/moto-api/recorder/replay-recording", method="POST")
            urllib.request.urlopen(request, timeout=60).close()
        return self

    def client(self) -> s3fs.S3FileSystem:
        """A plain s3fs client of this server (to create buckets, or damage an object on purpose)."""
        return s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=self.endpoint, skip_instance_cache=True,
                                 client_kwargs={"region_name": "us-east-1"})  # fmt: skip

    def create_bucket(self, name: str) -> None:
        self.client().call_s3("create_bucket", Bucket=name)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
