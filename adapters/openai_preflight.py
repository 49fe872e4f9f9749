"""What an OpenAI-compatible server offers, asked before a run without a single model call.

One GET of ``/models`` (reachable, key accepted, model served: the ids it lists are recorded) and,
when image roles are bound, an empty request to each images endpoint they could call (404, 405 or
501: the server has none; any other answer, such as 422 for the missing prompt, means it is there).
From these the backend decides where `image_api=auto` sends its image requests. Every exchange is
held to the spec's deadline (at most `PREFLIGHT_TIMEOUT_S`) and body cap like any call, so a server
that trickles bytes or streams garbage cannot stall or swell a run before it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from umni.plugin import BackendError

from .endpoints import public_url
from .http_limits import send_bounded, strict_json
from .openai_params import OpenAIParams

#: Seconds a pre-flight exchange may take at most (less when the spec's `timeout` is shorter).
PREFLIGHT_TIMEOUT_S = 10.0
#: How a server says it has no such endpoint (FastAPI's 404/405; 501 from stubs of unimplemented APIs).
ABSENT_STATUS = frozenset({404, 405, 501})
IMAGE_PATHS = ("/images/generations", "/images/edits")


@dataclass
class ServerReport:
    """What one server answered: problems to warn about, the models it lists, its images endpoints."""

    server: str
    reached: bool = False
    problems: list[str] = field(default_factory=list)
    #: the ids (and, for vLLM-style cards, the weights' path as ``root``) of the models it serves
    models: list[dict[str, str]] = field(default_factory=list)
    #: the status each images endpoint probed answered with (unprobed or unanswered ones missing)
    endpoints: dict[str, int] = field(default_factory=dict)

    def has(self, path: str) -> bool | None:
        """Whether the server has this endpoint (None: not known)."""
        status = self.endpoints.get(path)
        return None if status is None else status not in ABSENT_STATUS

    def record(self) -> dict[str, Any]:
        """What run.json keeps of it."""
        out: dict[str, Any] = {"server": self.server, "models": self.models}
        if self.endpoints:
            out["images_endpoints"] = {path: self.has(path) for path in sorted(self.endpoints)}
        return out


async def probe_server(
    url: str, *, model: str, params: OpenAIParams, key: str | None, image_paths: list[str]
) -> ServerReport:
    """Ask the server at `url` what it offers; never raises for what the server does."""
    who = f"openai/{model} at {public_url(url)}"
    report = ServerReport(public_url(url))
    deadline = min(params.timeout_s, PREFLIGHT_TIMEOUT_S)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    timeout = httpx.Timeout(deadline, connect=min(params.connect_timeout_s, deadline))
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout) as client:

        async def exchange(request: httpx.Request) -> httpx.Response:
            what = f"{who} {request.method} {request.url.path}"
            return await send_bounded(client, request, max_bytes=params.max_response_bytes, deadline_s=deadline, who=what)

        try:
            listed = await exchange(client.build_request("GET", "/models"))
        except httpx.HTTPError as exc:
            report.problems.append(f"{who}: no answer ({type(exc).__name__}); is base_url right and the server up?")
            return report
        except BackendError as exc:  # past the deadline or the size cap
            report.problems.append(str(exc))
            return report
        report.reached = True
        if listed.status_code in (401, 403):
            given = f"the key from {params.api_key_env}" if key else f"no key ({params.api_key_env} is not set)"
            report.problems.append(f"{who}: HTTP {listed.status_code}, the server refused {given}")
            return report
        if listed.status_code == 200:
            report.models = served_models(listed.content)
            ids = [m["id"] for m in report.models]
            if ids and model not in ids:
                report.problems.append(f"{who}: the server does not serve '{model}' (it serves {', '.join(ids[:5])}); wrong model name?")
        for path in image_paths:
            empty = client.build_request("POST", path, json={}) if path == "/images/generations" else (
                client.build_request("POST", path, data={"x": ""})
            )
            try:
                answer = await exchange(empty)
            except (httpx.HTTPError, BackendError):
                continue  # it answered /models: a failure here is left to the run's retries
            report.endpoints[path] = answer.status_code
    return report


def served_models(body: bytes) -> list[dict[str, str]]:
    """The models a ``/models`` reply lists (OpenAI's ``{"data": [{"id": …}]}``); none when it is not that."""
    try:
        data = strict_json(body)
    except (ValueError, UnicodeDecodeError):
        return []
    cards = data.get("data") if isinstance(data, dict) else None
    found = []
    for card in cards if isinstance(cards, list) else []:
        if isinstance(card, dict) and card.get("id") is not None:
            entry = {"id": str(card["id"])[:200]}
            if isinstance(card.get("root"), str) and card["root"] != entry["id"]:
                entry["root"] = card["root"][:200]
            found.append(entry)
    return found[:20]
