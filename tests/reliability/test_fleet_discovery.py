"""base_url discovery from a file a launcher rewrites (issue 26 item 5): the fleet follows the file,
servers joining and leaving are recorded, a file caught mid-rewrite changes nothing, and the
identity (so the cache) does not depend on which servers are listed."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from reliability_support import letter_by_hash

from tests.support.openai_server import OpenAIStubServer
from umni.backends import create_backend
from umni.util.errors import ConfigError
from umni.util.spec import Spec


def rewrite(path: Path, text: str) -> None:
    temp = path.with_suffix(".tmp")
    temp.write_text(text)
    os.replace(temp, path)


def test_the_fleet_follows_the_file(tmp_path: Path) -> None:
    servers = tmp_path / "servers.txt"
    with OpenAIStubServer(responder=letter_by_hash) as a, OpenAIStubServer(responder=letter_by_hash) as b:
        rewrite(servers, f"# written by the launcher\n{a.base_url}\n")
        backend = create_backend(Spec.parse(f"openai/stub-umm?base_url_file={servers}"))
        events: list[tuple[str, dict[str, object]]] = []
        backend.observe(lambda event, **fields: events.append((event, fields)))
        rewrite(tmp_path / "other.txt", f"{b.base_url}\n")
        other = create_backend(Spec.parse(f"openai/stub-umm?base_url_file={tmp_path / 'other.txt'}"))
        assert backend.identity() == other.identity()  # the servers are not the model

        async def calls(n: int) -> None:
            for _ in range(n):
                await backend.respond(["Q? Options: A) x B) y"])

        async def scenario() -> None:
            await backend.ensure_started()
            await calls(3)
            assert a.count("/chat/completions") == 3 and b.count() == 0
            await anyio.sleep(1.1)  # the file is looked at once a second at most
            rewrite(servers, "")  # a launcher mid-rewrite: nothing changes
            await calls(1)
            assert a.count("/chat/completions") == 4
            await anyio.sleep(1.1)
            rewrite(servers, f"{b.base_url}\n")
            await calls(3)
            assert a.count("/chat/completions") == 4 and b.count("/chat/completions") == 3
            await backend.ensure_closed()

        anyio.run(scenario)
        names = (a.base_url, b.base_url)
    assert [(e, f["server"]) for e, f in events] == [("server.removed", names[0]), ("server.added", names[1])]


def test_a_missing_or_bad_file_is_refused_with_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="base_url_file .* is missing, empty") as refused:
        create_backend(Spec.parse(f"openai/m?base_url_file={tmp_path / 'none.txt'}"))
    assert refused.value.field == "base_url_file"
    (tmp_path / "bad.txt").write_text("gpu-box:8000\n")
    with pytest.raises(ConfigError, match="not an http"):
        create_backend(Spec.parse(f"openai/m?base_url_file={tmp_path / 'bad.txt'}"))
