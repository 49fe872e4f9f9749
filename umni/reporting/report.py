"""The run's HTML report: the paper-style tables, then every case with its images and answers.

Images are copied next to the report (``images/<sha>.png``, once each; large ones also get a
thumbnail in ``thumbs/``) and referenced by relative path, never inlined, so the page opens from
disk without a server and stays small. All model and case text is HTML-escaped by the template.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from PIL import Image

from umni.protocols.protocol import Protocol, View
from umni.reporting.format import format_cell
from umni.store.atomic import atomic_write_lines
from umni.store.blobs import Blobs
from umni.store.runfolder import IMAGES, THUMBS, CaseRecord, RunFolder, Summary

THUMB_SIDE = 384

_env = Environment(loader=PackageLoader("umni.reporting", "templates"), autoescape=select_autoescape(default=True))


_env.filters["cell"] = format_cell


def export_image(out: Path, sha: str, blobs: Blobs) -> str | None:
    """Copy one image next to the report (a hard link from a folder store); return its relative path."""
    folder = RunFolder(out)  # a sweep's folder keeps its report's images the same way
    target = folder.images / f"{sha}.png"
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() != sha:
        target.unlink()
    if not target.exists() and not blobs.export(sha, target):
        return None  # shown as "image missing"; a damaged blob is never copied or opened
    with Image.open(target) as image:
        if max(image.size) <= THUMB_SIDE:
            return f"{IMAGES}/{sha}.png"
        thumb = folder.thumbs / f"{sha}.png"
        if not thumb.exists():
            thumb.parent.mkdir(parents=True, exist_ok=True)
            image.thumbnail((THUMB_SIDE, THUMB_SIDE))
            image.save(thumb)
    return f"{THUMBS}/{sha}.png"


def write_report(out: Path, protocol: Protocol[Any, Any, Any, Any], summary: Summary, records: Iterable[CaseRecord], blobs: Blobs) -> Path:
    """Render report.html as it is written, one case at a time: a 20,000-case page is never held
    whole in memory, nor are its records."""
    from umni.reporting.leaderboard import build_tables, run_coverage

    coverage, failed = run_coverage(summary)
    scored = build_tables([summary], with_ci=False, layout="tidy")  # the leaderboard's: answered/total beside each score
    written = summary.to_json()  # the template and the protocol's tables read summary.json as written
    chunks = _env.get_template("report.html.j2").generate(
        summary=written, tables=protocol.tables(written), scored=scored, cases=_cases(out, protocol, records, blobs),
        protocol=protocol, coverage=coverage, failed_nodes=failed,
    )
    path = RunFolder(out).report_html
    atomic_write_lines(path, _whole_lines(chunks))
    return path


def _cases(out: Path, protocol: Protocol[Any, Any, Any, Any], records: Iterable[CaseRecord], blobs: Blobs) -> Iterator[dict[str, Any]]:
    for record in records:
        views: list[View] = protocol.views(record)
        panels = []
        for view in views:
            src = export_image(out, view.image, blobs) if view.image else None
            full = f"{IMAGES}/{view.image}.png" if src else None
            panels.append({"view": view, "src": src, "full": full})
        failures = [{"node": nid, **node["failure"]} for nid, node in sorted(record.get("nodes", {}).items()) if "failure" in node]
        yield {"record": record, "panels": panels, "failures": failures}


def _whole_lines(chunks: Iterable[str], size: int = 1 << 16) -> Iterator[str]:
    """The rendered text in pieces of about `size` characters that end at a line's end, so each
    piece is scrubbed of credentials as the whole text would be (none spans a line)."""
    pending: list[str] = []
    held = 0
    for chunk in chunks:
        pending.append(chunk)
        held += len(chunk)
        if held >= size:
            text = "".join(pending)
            cut = text.rfind("\n") + 1
            if cut:
                yield text[:cut]
                pending, held = [text[cut:]], len(text) - cut
    if pending:
        yield "".join(pending)
