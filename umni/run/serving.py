"""Models a sweep task serves itself (``serve:`` in the sweep file): a server command started on the
task's node before the task's units that call the model, waited for with a health check and stopped
when the task ends, also when it fails. An entry is keyed by the spec exactly as written under
``models:`` or ``roles:`` (e.g. an OpenAI-compatible spec whose ``base_url`` is the local server):

    serve:
      "openai/Qwen/Qwen2.5-VL-72B-Instruct?base_url=http://127.0.0.1:8000/v1":
        command: "vllm serve Qwen/Qwen2.5-VL-72B-Instruct --port 8000"
        health: http://127.0.0.1:8000/health
        timeout: 900
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field

from umni.util.credentials import redact_url
from umni.util.errors import ConfigError

#: seconds a stopped server gets to exit after SIGTERM before it is killed
STOP_GRACE_S = 10.0


class Serve(BaseModel):
    """How a task starts one model's server and knows it is ready."""

    model_config = ConfigDict(extra="forbid")

    #: a shell command line, run from the folder the sweep was emitted in
    command: str = Field(min_length=1)
    #: a URL that answers 2xx once the server is ready (polled every half second)
    health: str = Field(pattern=r"^https?://\S+$")
    #: seconds to wait for the health check before the task gives up
    timeout: float = Field(600.0, gt=0, le=86_400)


@contextlib.contextmanager
def serving(servers: dict[str, Serve]) -> Iterator[None]:
    """Start every server (`servers`: by spec), wait until each is healthy, and stop them all on exit."""
    started: list[tuple[str, subprocess.Popen[bytes]]] = []
    try:
        for spec, serve in servers.items():
            process = subprocess.Popen(serve.command, shell=True, start_new_session=True)  # noqa: S602 (the sweep file's own command)
            started.append((spec, process))
            _wait_healthy(spec, serve, process)
        yield
    finally:
        for _, process in reversed(started):
            _stop(process)


def _wait_healthy(spec: str, serve: Serve, process: subprocess.Popen[bytes]) -> None:
    import urllib.error  # with http.client and ssl: only a task that serves a model pays for them
    import urllib.request

    deadline = time.monotonic() + serve.timeout
    while True:
        code = process.poll()
        if code is not None:
            raise ConfigError(f"the server of '{spec}' (serve.command) exited with status {code} before {redact_url(serve.health)} answered")
        try:
            with urllib.request.urlopen(serve.health, timeout=5) as answer:  # noqa: S310 (http(s) only, checked by Serve)
                if 200 <= answer.status < 300:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet
        if time.monotonic() > deadline:
            raise ConfigError(f"the server of '{spec}' did not answer {redact_url(serve.health)} within {serve.timeout:g} s (serve.timeout)")
        time.sleep(0.5)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's whole process group (a shell and what it started), SIGKILL after a
    grace. Stopped means the group is gone, not just the shell: the server it started can outlive it
    by a moment, and the port is free only once that process has exited."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_GRACE_S)
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(process.pid) or process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
