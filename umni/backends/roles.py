"""Roles: the abilities a graph asks for, and the async interfaces a backend implements to fill them.

A graph node names a role (``understand``, ``generate``, ``edit``, ``judge``, or a tool role such as
``ocr``); a binding maps each role of a run to one backend. Interfaces are async and take plain
values (text and PIL images), so a backend may run in this process, behind an HTTP endpoint, or on
another machine without the graph, runner or store knowing.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from umni.util.entrypoints import entry_points, load_entry_point

UNDERSTAND = "understand"
GENERATE = "generate"
EDIT = "edit"
JUDGE = "judge"
OCR = "ocr"
DETECT = "detect"
EMBED = "embed"

MODEL_ROLES = (UNDERSTAND, GENERATE, EDIT, JUDGE)
TOOL_ROLES = (OCR, DETECT, EMBED)
ALL_ROLES = MODEL_ROLES + TOOL_ROLES

#: The in-loop critic/verifier: it decides a reflection loop's trajectory (whether another round
#: runs, and with what feedback), apart from the judge that scores the rounds. Unbound, it uses the
#: judge's backend; re-judging rebinds the scoring judge only, so the loop replays unchanged.
CRITIC = "critic"
#: Roles that, when not bound, are filled by another role's backend.
DERIVED_ROLES: dict[str, str] = {CRITIC: JUDGE}

#: One part of an interleaved prompt: text, or an image placed at that point.
Part = str | Image.Image


@dataclass
class Usage:
    """What one call consumed, so a run can report its cost inputs.

    A token count the backend could not learn (a server that sends no ``usage``) is None, unknown,
    never 0: a sum with an unknown count stays unknown, so a total never understates what was
    spent, and a cost built on it is reported as unknown rather than as $0.
    """

    calls: int = 1
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    images_in: int = 0
    images_out: int = 0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.input_tokens = _add_known(self.input_tokens, other.input_tokens)
        self.output_tokens = _add_known(self.output_tokens, other.output_tokens)
        self.images_in += other.images_in
        self.images_out += other.images_out


def _add_known(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class RequestOptions:
    """How a node asks for its text reply, beyond the prompt: a system message, a sampling
    temperature and extra request-body fields for the server (``chat_template_kwargs``, vendor
    options). A protocol sets them as node parameters (``system=``, ``temperature=``,
    ``extra_body=``), so they enter the node's key; `respond_with` hands them to the backend.
    """

    system: str | None = None
    temperature: float | None = None
    extra_body: Mapping[str, Any] | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RequestOptions | None:
        """The request options a node's parameters name, or None when they name none."""
        system, temperature, extra = params.get("system"), params.get("temperature"), params.get("extra_body")
        if system is None and temperature is None and not extra:
            return None
        return cls(
            system=system, temperature=None if temperature is None else float(temperature), extra_body=extra or None
        )


async def respond_with(
    backend: Any, parts: Sequence[Part], params: Mapping[str, Any], *, max_tokens: int, seed: int
) -> TextReply:
    """Call ``backend.respond`` with the request options the node's `params` name.

    A backend whose ``respond`` takes ``options`` (the OpenAI-compatible one) gets them as they are.
    One that does not (local models, older plugins) gets the system message as a first text part,
    so its instruction still reaches the model; temperature and extra body fields are settings of a
    server request that such a backend has no place for (its own spec parameters decide them).
    """
    options = RequestOptions.from_params(params)
    if options is None:
        return await backend.respond(parts, max_tokens=max_tokens, seed=seed)
    if _takes_options(backend):
        return await backend.respond(parts, max_tokens=max_tokens, seed=seed, options=options)
    if options.system:
        parts = [options.system, *parts]
    return await backend.respond(parts, max_tokens=max_tokens, seed=seed)


def _takes_options(backend: Any) -> bool:
    try:
        return "options" in inspect.signature(backend.respond).parameters
    except (TypeError, ValueError):
        return False


@dataclass
class TextReply:
    """A free-text answer (understanding, judging, planning, rewriting)."""

    text: str
    usage: Usage = field(default_factory=Usage)


@dataclass
class ChoiceReply:
    """A multiple-choice answer.

    ``index`` is the chosen option (0-based), or None when the reply named no valid option; ``mode``
    records how the choice was made (``letter``: the model wrote a letter that was parsed;
    ``likelihood``: the option letters were scored; ``scene``/``pixels``/``guess`` for the reference
    backend), because a score is only comparable with scores made the same way.
    """

    index: int | None
    text: str
    mode: str
    usage: Usage = field(default_factory=Usage)


@dataclass
class ImageReply:
    """An image made by a generate or edit call.

    ``notes`` says what the backend could not honour without failing, as ``"kind: detail"`` lines
    (``images_ignored: …``, ``prompt_truncated: …``): the node records them and the run summary counts
    them by kind (``node_notes``), so a silently weakened input is never invisible.
    """

    image: Image.Image
    usage: Usage = field(default_factory=Usage)
    notes: tuple[str, ...] = ()
    #: The image already in umni's stored encoding (``umni.store.images.encode_png``), when the backend
    #: has it (a replica in another process sends these bytes): stored as they are, with ``image``
    #: only opened lazily for its size, so the image is not decoded and re-encoded on the way.
    png: bytes | None = None


@dataclass
class OcrLine:
    """One line of recognised text, its box (x0, y0, x1, y1 in pixels) and confidence."""

    text: str
    box: tuple[float, float, float, float]
    confidence: float


@dataclass
class Detection:
    """One detected object: label asked for, box (x0, y0, x1, y1 in pixels), score."""

    label: str
    box: tuple[float, float, float, float]
    score: float


@runtime_checkable
class Understander(Protocol):
    """Fills ``understand`` and ``judge``: reads an interleaved prompt and answers.

    ``respond`` may also take ``options: RequestOptions | None`` (a node's system message,
    temperature and extra request fields); `respond_with` passes them only to a backend whose
    ``respond`` has that keyword, so backends without it keep working.
    """

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply: ...

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply: ...


@runtime_checkable
class Generator(Protocol):
    """Fills ``generate``: draws one image from an interleaved prompt (text, maybe images)."""

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply: ...


@runtime_checkable
class Editor(Protocol):
    """Fills ``edit``: changes the given image(s) as the instruction says."""

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply: ...


@runtime_checkable
class TextReader(Protocol):
    """Fills ``ocr``."""

    async def read_text(self, image: Image.Image) -> list[OcrLine]: ...


@runtime_checkable
class ObjectDetector(Protocol):
    """Fills ``detect``: open-vocabulary boxes for the labels asked for."""

    async def detect(self, image: Image.Image, labels: Sequence[str]) -> list[Detection]: ...


@runtime_checkable
class ImageEmbedder(Protocol):
    """Fills ``embed``: one feature vector per image (rows of the returned array)."""

    async def embed(self, images: Sequence[Image.Image]) -> np.ndarray: ...


#: The interface each role requires of the backend bound to it.
ROLE_INTERFACE: dict[str, type] = {
    UNDERSTAND: Understander,
    JUDGE: Understander,
    GENERATE: Generator,
    EDIT: Editor,
    OCR: TextReader,
    DETECT: ObjectDetector,
    EMBED: ImageEmbedder,
}


#: Tool roles added beyond the built-in ones, with the interface each needs of its backend. The
#: engine's tool modules fill this through `register_tool_role`; a plugin's tool modules are named in
#: its ``umni.tools`` entry-point group and loaded here, so a binding knows every role a graph may
#: ask for without the backend layer importing the node kinds.
_PLUGIN_TOOL_ROLES: dict[str, type] = {}
_plugins_loaded = False


def register_tool_role(name: str, interface: type) -> None:
    """Make `name` a role a binding may fill, served by backends implementing `interface`."""
    if name not in ROLE_INTERFACE:
        _PLUGIN_TOOL_ROLES[name] = interface


def _load_tool_plugins() -> None:
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        for ep in entry_points(group="umni.tools"):
            load_entry_point(ep)


def known_roles() -> tuple[str, ...]:
    """Every role a binding may fill: the model roles, the built-in tool roles and each tool role a
    plugin registers."""
    _load_tool_plugins()
    return ALL_ROLES + tuple(sorted(set(_PLUGIN_TOOL_ROLES) - set(ALL_ROLES)))


def role_interface(role: str) -> type | None:
    """The interface a backend bound to `role` must implement (None: no such role)."""
    if role in ROLE_INTERFACE:
        return ROLE_INTERFACE[role]
    _load_tool_plugins()
    return _PLUGIN_TOOL_ROLES.get(role)


def option_letter(index: int) -> str:
    """A, B, C, … for option 0, 1, 2, …"""
    return chr(ord("A") + index)
