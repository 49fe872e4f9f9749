"""Turning a node's inputs into what its kind needs: values, prompt parts, images, key parts.

Outputs of finished nodes are read from the case's outcomes; images come from the blob store
(decoded once and shared there); case image files are stored by content the first time a run
meets them, remembered by `umni.util.filehash.stat_key` (path, size, mtime, inode, ctime).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
from PIL import Image

from umni.graph.graph import ImageFile, Node, Ref
from umni.graph.outcomes import Outcome
from umni.store.cache import Cache
from umni.store.imageref import ImageRef
from umni.util.filehash import stat_key


class InputReader:
    """Reads node inputs for one runner (one cache); every method takes the case's outcomes."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._file_refs: dict[tuple[str, int, int, int, int], ImageRef] = {}

    def values(self, outcomes: Mapping[str, Outcome], refs: Mapping[str, Ref]) -> dict[str, Any]:
        """Input values by name: an image as a PIL image, anything else as the node's value;
        None for an optional input whose node did not finish."""
        values = {}
        for name, ref in refs.items():
            outcome = outcomes[ref.node]
            values[name] = self.plain_value(outcome) if outcome.ok else None
        return values

    def plain_value(self, outcome: Outcome) -> Any:
        image = outcome.image
        if image is not None:
            return self.cache.blobs.open(image)
        return outcome.value

    def file_ref(self, item: ImageFile) -> ImageRef:
        memo = stat_key(Path(item.path))  # a file rewritten in place is read again
        if memo not in self._file_refs:
            self._file_refs[memo] = self.cache.blobs.put_file(Path(item.path))
        return self._file_refs[memo]

    def fingerprints(self, outcomes: Mapping[str, Outcome], node: Node) -> dict[str, Any]:
        """What the node's inputs contribute to its key: each part tagged with its type, so a text
        equal to an image's hash is not that image."""

        def one(item: Any) -> Any:
            if isinstance(item, Ref):
                outcome = outcomes[item.node]
                return {"node_output": outcome.fingerprint if outcome.ok else None}
            if isinstance(item, ImageFile):
                return {"case_image": self.file_ref(item).sha256}
            if isinstance(item, str):
                return {"text": item}
            return {type(item).__name__: item}

        return {
            "prompt": [one(p) for p in node.prompt],
            "images": [one(p) for p in node.images],
            "inputs": {name: one(ref) for name, ref in sorted(node.inputs.items())},
        }

    def produced_images(self, outcomes: Mapping[str, Outcome], node: Node) -> Iterator[ImageRef]:
        """The images of other nodes this node reads (prompt parts, images, named inputs)."""
        for item in (*node.prompt, *node.images, *node.inputs.values()):
            if isinstance(item, Ref):
                outcome = outcomes[item.node]
                if outcome.ok and outcome.image is not None:
                    yield outcome.image

    async def decode_ahead(self, outcomes: Mapping[str, Outcome], node: Node) -> None:
        """Decode, in a worker thread, the images the node is about to read that the blob store
        does not hold decoded, so that decoding a large PNG never holds up the event loop (the
        node's kind then reads them from the store's decoded images)."""
        blobs = self.cache.blobs
        missing = {ref.sha256: ref for ref in self.produced_images(outcomes, node) if not blobs.is_decoded(ref.sha256)}
        if missing:
            await anyio.to_thread.run_sync(lambda: [blobs.open(ref) for ref in missing.values()])

    def blobs_present(self, output: Mapping[str, Any]) -> bool:
        image = output.get("image")
        return image is None or self.cache.blobs.verify(image["sha256"])

    def image(self, outcomes: Mapping[str, Outcome], item: ImageFile | Ref) -> Image.Image:
        if isinstance(item, ImageFile):
            return self.cache.blobs.open(self.file_ref(item))
        outcome = outcomes[item.node]
        if outcome.image is None:
            raise ValueError(f"node '{item.node}' did not produce an image")
        return self.cache.blobs.open(outcome.image)

    def parts(self, outcomes: Mapping[str, Outcome], node: Node) -> list[str | Image.Image]:
        """The node's interleaved prompt: texts, images, and other nodes' outputs in order (an
        optional part whose node was skipped or failed is left out)."""
        parts: list[str | Image.Image] = []
        for item in node.prompt:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, ImageFile):
                parts.append(self.image(outcomes, item))
            else:
                outcome = outcomes[item.node]
                if not outcome.ok:
                    continue
                if outcome.image is not None:
                    parts.append(self.cache.blobs.open(outcome.image))
                else:
                    parts.append(str(outcome.value))
        return parts
