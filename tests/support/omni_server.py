"""A server on 127.0.0.1 in the shapes vLLM-Omni serves unified models with (read from its code, see
below), drawing deterministic pictures instead of running a model.

Shapes reproduced (vllm-project/vllm-omni):

* ``POST /v1/chat/completions`` (``entrypoints/openai/serving_chat.py``): a request whose top-level
  ``modalities`` holds ``"image"`` is answered by ``_create_image_choice``: one choice
  ``{"index": 0, "message": {"role": "assistant", "content": [{"type": "image_url", "image_url":
  {"url": "data:image/png;base64,…"}}]}, "finish_reason": "stop", "logprobs": null, "stop_reason":
  null}``. The diffusion fields are read as top-level request fields (``height``, ``width``,
  ``num_inference_steps``, ``guidance_scale``, ``seed``, ``negative_prompt``; examples/online_serving/
  bagel, ``diffusion_request_utils.py``); input images are the ``image_url`` parts of the user
  message. The full generator keeps only the outputs of the requested modalities and lists one
  choice per stage output in order, so a request for text and image (BAGEL's thinker, then its DiT)
  gets the text in ``choices[0]`` and the image in ``choices[1]`` (``split_choices``). With no image
  produced, the content is ``[{"type": "text", "text": "Image generation completed but no images
  were produced."}]``. A request without image output is answered with text, as vLLM does.
* ``POST /v1/images/generations`` (``protocol/images.py``, ``api_server.py``): JSON with ``prompt``
  (required), ``n`` (1-10), ``size`` (``WIDTHxHEIGHT``), ``response_format`` (``b64_json`` only) and
  the extensions ``negative_prompt``, ``num_inference_steps`` (1-200), ``guidance_scale`` (0-20),
  ``true_cfg_scale``, ``seed``; a validation error is FastAPI's 422 ``{"detail": [...]}``. Answers
  ``{"created": …, "data": [{"b64_json": …, "url": null, "revised_prompt": null}]}``.
* ``POST /v1/images/edits`` (``api_server.py`` ``edit_images``): multipart with ``image`` or
  ``image[]`` files (repeated for several), ``url``/``url[]`` fields (data URLs), ``prompt``
  (required), ``size`` (default ``auto``: the first input's size), ``response_format`` (``b64_json``
  only, else 400) and the same extensions; no input image is 422 ``{"detail": "Field 'image' or 'url'
  is required"}``. Answers like generations, plus ``"output_format": "png", "size": "WxH"``.
* ``GET /v1/models``: vLLM's model list, ``{"object": "list", "data": [{"id", "object": "model",
  "created", "owned_by": "vllm", "root", "parent": null, "max_model_len", "permission": [...]}]}``.
* A route the server does not have answers FastAPI's ``404 {"detail": "Not Found"}``.

``chat_images=False`` makes a chat server that ignores ``modalities`` (a plain vLLM: text only);
``images_endpoints=False`` leaves the images routes out (a chat-only deployment); ``chat=False``
leaves chat out (an images-only server, as SGLang Diffusion is).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image, ImageDraw

NO_IMAGE_TEXT = "Image generation completed but no images were produced."


@dataclass
class Seen:
    """One request as the server read it."""

    method: str
    path: str
    authorization: str | None
    json: Any = None
    form: dict[str, list[str]] = field(default_factory=dict)
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (field, bytes)
    status: int = 0


def picture(key: dict[str, Any], size: tuple[int, int]) -> Image.Image:
    """A picture that depends only on `key` (prompt, seed, fields, inputs): colour and a rectangle."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).digest()
    width, height = size
    image = Image.new("RGB", size, tuple(digest[0:3]))
    x0, y0 = digest[3] % max(width // 2, 1), digest[4] % max(height // 2, 1)
    ImageDraw.Draw(image).rectangle([x0, y0, x0 + width // 3, y0 + height // 3], fill=tuple(digest[5:8]))
    return image


def png_b64(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


class OmniServer:
    """``with OmniServer(model=…) as server``; ``server.base_url`` ends in /v1; `seen` lists requests."""

    def __init__(
        self,
        model: str = "ByteDance-Seed/BAGEL-7B-MoT",
        *,
        chat: bool = True,
        chat_images: bool = True,
        images_endpoints: bool = True,
        split_choices: bool = False,
        responder: Callable[[list[str]], str] | None = None,
        draw_nothing: bool = False,
        image_url: Callable[[str], str] | None = None,
        json_edits: bool = False,
    ) -> None:
        """
        split_choices: answer an image request with a text choice first and the image in choices[1].
        responder: the text reply to a text request, from its text parts (default: a fixed sentence).
        draw_nothing: image requests produce no image (vLLM-Omni's "no images were produced" text).
        image_url: turns a drawn image's data URL into the URL put in the reply (another host, say).
        json_edits: /images/edits takes OpenAI's JSON form instead of multipart (``{"prompt", "images":
            [{"image_url": "data:…"}], …}``, as OpenAI's API reference gives it).
        """
        self.model = model
        self.chat = chat
        self.chat_images = chat_images
        self.images_endpoints = images_endpoints
        self.split_choices = split_choices
        self.responder = responder or (lambda texts: "A plain answer.")
        self.draw_nothing = draw_nothing
        self.image_url = image_url
        self.json_edits = json_edits
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        handler = type("OmniHandler", (_Handler,), {"omni": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> OmniServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def requests(self, path_suffix: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path.endswith(path_suffix)]

    # -- replies -----------------------------------------------------------------------------------

    def models(self) -> dict[str, Any]:
        card = {"id": self.model, "object": "model", "created": 0, "owned_by": "vllm", "root": f"/models/{self.model}",
                "parent": None, "max_model_len": 32768, "permission": [{"id": "modelperm-0", "object": "model_permission"}]}
        return {"object": "list", "data": [card]}

    def chat_completion(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return 422, {"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required"}]}
        texts, images = [], []
        first_size: tuple[int, int] | None = None
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            for part in parts:
                if part.get("type") == "text":
                    texts.append(part.get("text", ""))
                elif part.get("type") == "image_url":
                    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                    images.append(_digest(data))
                    first_size = first_size or Image.open(io.BytesIO(data)).size
        modalities = body.get("modalities")
        wants_image = isinstance(modalities, list) and "image" in modalities and self.chat_images
        choices: list[dict[str, Any]] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        wants_text = not wants_image or self.split_choices
        if wants_text:
            reply = self.responder(texts)
            choices.append({"index": 0, "message": {"role": "assistant", "content": reply, "tool_calls": [],
                                                    "reasoning_content": None},
                            "logprobs": None, "finish_reason": "stop", "stop_reason": None})
            words = sum(len(t.split()) for t in texts)
            usage = {"prompt_tokens": words, "completion_tokens": len(reply.split()), "total_tokens": words + len(reply.split())}
        if wants_image:
            width, height = body.get("width"), body.get("height")
            size = (min(int(width), 256), min(int(height), 256)) if width and height else first_size or (64, 64)
            key = _key("\n".join(texts), images, body)
            if self.draw_nothing:
                content: list[dict[str, Any]] = [{"type": "text", "text": NO_IMAGE_TEXT}]
            else:
                url = "data:image/png;base64," + png_b64(picture(key, size))
                content = [{"type": "image_url", "image_url": {"url": self.image_url(url) if self.image_url else url}}]
            choices.append({"index": 0, "message": {"role": "assistant", "content": content},
                            "logprobs": None, "finish_reason": "stop", "stop_reason": None})
        return 200, {"id": "chatcmpl-omni", "object": "chat.completion", "created": 0, "model": self.model,
                     "choices": choices, "usage": usage, "prompt_logprobs": None, "kv_transfer_params": None}

    def generations(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return 422, {"detail": [{"type": "missing", "loc": ["body", "prompt"], "msg": "Field required", "input": body}]}
        problems = _image_field_problems(body, form=False)
        if problems:
            return 422, {"detail": problems}
        size = _size(body.get("size")) or (64, 64)
        key = _key(body["prompt"], [], body)
        data = [{"b64_json": png_b64(picture(key, size)), "url": None, "revised_prompt": None}]
        return 200, {"created": 0, "data": data}

    def edits(self, form: dict[str, list[str]], files: list[tuple[str, bytes]]) -> tuple[int, dict[str, Any]]:
        if not form.get("prompt"):
            return 422, {"detail": [{"type": "missing", "loc": ["body", "prompt"], "msg": "Field required", "input": None}]}
        inputs = [data for name, data in files if name in ("image", "image[]")]
        inputs += [base64.b64decode(u.split(",", 1)[1]) for u in form.get("url", []) + form.get("url[]", [])]
        if not inputs:
            return 422, {"detail": "Field 'image' or 'url' is required"}
        if form.get("response_format", ["b64_json"])[0] != "b64_json":
            return 400, {"detail": "Only response_format 'b64_json' is supported now."}
        fields = {k: v[0] for k, v in form.items()}
        problems = _image_field_problems(fields, form=True)
        if problems:
            return 422, {"detail": problems}
        size = _size(fields.get("size", "auto")) or Image.open(io.BytesIO(inputs[0])).size
        key = _key(fields["prompt"], [_digest(i) for i in inputs], fields)
        data = [{"b64_json": png_b64(picture(key, size)), "url": None, "revised_prompt": None}]
        return 200, {"created": 0, "data": data, "output_format": "png", "size": f"{size[0]}x{size[1]}"}

    def json_edit(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        references = body.get("images")
        if not isinstance(body.get("prompt"), str) or not isinstance(references, list) or not references:
            return 400, {"error": {"message": "prompt and images are required", "type": "invalid_request_error"}}
        inputs = [base64.b64decode(r["image_url"].split(",", 1)[1]) for r in references]
        size = Image.open(io.BytesIO(inputs[0])).size
        key = _key(body["prompt"], [_digest(i) for i in inputs], body)
        return 200, {"created": 0, "data": [{"b64_json": png_b64(picture(key, size))}]}


def _key(prompt: str, inputs: list[str], fields: dict[str, Any]) -> dict[str, Any]:
    """What a picture depends on, with form fields read as the numbers they spell (as FastAPI does),
    so one request drawn through chat or through the images endpoints gives the same picture."""
    kinds = {"seed": int, "num_inference_steps": int, "guidance_scale": float, "negative_prompt": str}
    return {"prompt": prompt, "inputs": inputs, **{k: kind(fields[k]) if fields.get(k) is not None else None for k, kind in kinds.items()}}


def _size(raw: Any) -> tuple[int, int] | None:
    if not raw or raw == "auto":
        return None
    width, height = str(raw).lower().split("x")
    return min(int(width), 256), min(int(height), 256)


def _image_field_problems(fields: dict[str, Any], *, form: bool) -> list[dict[str, Any]]:
    """The validation vLLM-Omni's pydantic request model (or its Form fields) applies."""
    problems = []
    checks = {"n": (int, 1, 10), "num_inference_steps": (int, 1, 200), "guidance_scale": (float, 0.0, 20.0),
              "true_cfg_scale": (float, 0.0, 20.0), "seed": (int, None, None)}
    for name, (kind, low, high) in checks.items():
        if fields.get(name) is None:
            continue
        try:
            value = kind(fields[name])
        except (TypeError, ValueError):
            problems.append({"type": "parsing", "loc": ["body", name], "msg": f"Input should be a valid {kind.__name__}"})
            continue
        if (low is not None and value < low) or (high is not None and value > high):
            problems.append({"type": "range", "loc": ["body", name], "msg": f"Input should be between {low} and {high}"})
    size = fields.get("size")
    if size is not None and "x" not in str(size) and not (form and size == "auto"):
        problems.append({"type": "value_error", "loc": ["body", "size"],
                         "msg": "Value error, size must be in format 'WIDTHxHEIGHT' (e.g., '1024x1024')"})
    if not form and fields.get("response_format", "b64_json") != "b64_json":
        problems.append({"type": "value_error", "loc": ["body", "response_format"],
                         "msg": "Value error, Only 'b64_json' response format is supported"})
    return problems


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    omni: OmniServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        omni = self.omni
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0]
        seen = Seen(method, path, self.headers.get("Authorization"))
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("multipart/form-data"):
            seen.form, seen.files = _multipart(content_type, raw)
        elif raw:
            try:
                seen.json = json.loads(raw)
            except json.JSONDecodeError:
                seen.json = None
        with omni._lock:
            omni.seen.append(seen)
        status, body = 404, {"detail": "Not Found"}
        if method == "GET" and path == "/v1/models":
            status, body = 200, omni.models()
        elif method == "POST" and path == "/v1/chat/completions" and omni.chat:
            status, body = omni.chat_completion(seen.json if isinstance(seen.json, dict) else {})
        elif method == "POST" and path == "/v1/images/generations" and omni.images_endpoints:
            if not content_type.startswith("application/json"):
                status, body = 422, {"detail": [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be a valid dictionary"}]}
            else:
                status, body = omni.generations(seen.json)
        elif method == "POST" and path == "/v1/images/edits" and omni.images_endpoints and omni.json_edits:
            status, body = omni.json_edit(seen.json if isinstance(seen.json, dict) else {})
        elif method == "POST" and path == "/v1/images/edits" and omni.images_endpoints:
            if not content_type.startswith("multipart/form-data"):
                status, body = 422, {"detail": [{"type": "missing", "loc": ["body", "prompt"], "msg": "Field required"}]}
            else:
                status, body = omni.edits(seen.form, seen.files)
        seen.status = status
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _multipart(content_type: str, raw: bytes) -> tuple[dict[str, list[str]], list[tuple[str, bytes]]]:
    """A multipart body's fields (each value of a repeated one, in order) and files (field, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, list[str]] = {}
    files: list[tuple[str, bytes]] = []
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition"))
        payload = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            files.append((name, payload))
        else:
            fields.setdefault(name, []).append(payload.decode("utf-8", "replace"))
    return fields, files
