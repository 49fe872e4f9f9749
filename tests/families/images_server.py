"""A small OpenAI-style image server for a diffusers pipeline, the shape vLLM-Omni and SGLang give
UMMs: ``POST /v1/images/generations`` (JSON) and ``POST /v1/images/edits`` (multipart, ``image`` or
``image[]`` files), both answering ``{"data": [{"b64_json": ...}]}``; ``GET /health``.

Run as ``python images_server.py MODEL_DIR PORT``. It uses diffusers directly, not umni, so the
test that starts it checks umni's OpenAI-compatible backend against an independent server. Requests
are served in threads, one pipeline call at a time; a request's ``seed`` field, when present, seeds
its generator (default 0), and an edit comes back at its first input's size.
"""

from __future__ import annotations

import base64
import email
import email.policy
import io
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch
from diffusers import DiffusionPipeline
from PIL import Image


class ImageService:
    def __init__(self, folder: str) -> None:
        self.pipe = DiffusionPipeline.from_pretrained(folder).to("cpu")
        self.pipe.set_progress_bar_config(disable=True)
        self.lock = threading.Lock()
        self.calls = 0

    def draw(self, prompt: str, images: list[Image.Image], seed: int, size: tuple[int, int] | None) -> Image.Image:
        kwargs: dict[str, Any] = {"num_inference_steps": 1, "generator": torch.Generator("cpu").manual_seed(seed)}
        if images:
            tags = " ".join(f"<img><|image_{n}|></img>" for n in range(1, len(images) + 1))
            kwargs.update(input_images=images, use_input_image_size_as_output=True)
            prompt = f"{tags} {prompt}"
        else:
            width, height = size or (32, 32)
            kwargs.update(width=width, height=height)
        with self.lock:
            self.calls += 1
            image = self.pipe(prompt=prompt, **kwargs).images[0].convert("RGB")
        if images and image.size != images[0].size:
            image = image.resize(images[0].size)
        return image


def _size(raw: Any) -> tuple[int, int] | None:
    if not raw or raw == "auto":
        return None
    width, height = str(raw).lower().split("x")
    return int(width), int(height)


def _multipart(content_type: str, body: bytes) -> tuple[dict[str, str], list[bytes]]:
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body, policy=email.policy.HTTP
    )
    fields: dict[str, str] = {}
    files: list[bytes] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if part.get_filename():
            if name in ("image", "image[]"):
                files.append(data)
        elif name:
            fields[str(name)] = data.decode()
    return fields, files


def handler_for(service: ImageService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"status": "ok", "calls": service.calls})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                if self.path == "/v1/images/generations":
                    request = json.loads(body)
                    image = service.draw(str(request["prompt"]), [], int(request.get("seed", 0)),
                                         _size(request.get("size")))
                elif self.path == "/v1/images/edits":
                    fields, files = _multipart(self.headers["Content-Type"], body)
                    if not files:
                        self._send(400, {"error": {"message": "an edit needs an image file"}})
                        return
                    images = [Image.open(io.BytesIO(data)).convert("RGB") for data in files]
                    image = service.draw(fields.get("prompt", ""), images, int(fields.get("seed", 0)), None)
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
            except (KeyError, ValueError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})
                return
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            self._send(200, {"created": 0, "data": [{"b64_json": base64.b64encode(buffer.getvalue()).decode()}]})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def main() -> None:
    folder, port = sys.argv[1], int(sys.argv[2])
    service = ImageService(folder)
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(service))
    print(f"serving {folder} on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
