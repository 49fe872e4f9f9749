"""Bad case images: `umni cases check` decodes every image a case references (header, structure and
a pixel limit), and at run time such an image is a typed `input` failure of the nodes that read it,
so the run completes with a summary and resumes like any other."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from umni.store.images import MAX_CASE_PIXELS, check_image_file
from umni.store.runfolder import RunFolder
from umni.util.errors import InputError

REPO = Path(__file__).resolve().parents[2]


def bomb_png(width: int = 20000, height: int = 20000) -> bytes:
    """A few hundred bytes of valid PNG that declare width x height pixels (all zero)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    row = b"\x00" * (width + 1)
    compressor = zlib.compressobj(9)
    data = b"".join(compressor.compress(row) for _ in range(16)) + compressor.flush()  # truncated rows: enough for the header
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


BAD_IMAGES = {
    "not-a-png": b"this is a text file with a .png name\n",
    "bomb": bomb_png(),
}


def umni(*args: str | Path, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "umni", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def genius_copy(tmp_path: Path, bad: bytes) -> tuple[Path, Path]:
    root = tmp_path / "genius"
    shutil.copytree(REPO / "cases/genius/dataset", root)
    target = root / "implicit_pattern/images/ip_warm_sun.png"
    target.write_bytes(bad)
    return root, target


def aegis_copy(tmp_path: Path, bad: bytes) -> tuple[Path, Path]:
    root = tmp_path / "aegis"
    shutil.copytree(REPO / "cases/aegis", root)
    target = root / "images/physics/4_1_input.png"
    target.write_bytes(bad)
    return root / "annotation.json", target


def girbench_copy(tmp_path: Path, bad: bytes) -> tuple[Path, Path]:
    root = tmp_path / "girbench"
    shutil.copytree(REPO / "cases/girbench", root)
    images = sorted(p for p in root.rglob("*.png") if p.is_file())
    assert images, "the bundled GIR-Bench cases reference images"
    images[0].write_bytes(bad)
    return root, images[0]


COPIES = {"genius": genius_copy, "aegis": aegis_copy, "girbench": girbench_copy}


@pytest.mark.parametrize("kind", sorted(BAD_IMAGES))
def test_check_image_file_refuses_bad_images(tmp_path, kind):
    path = tmp_path / "x.png"
    path.write_bytes(BAD_IMAGES[kind])
    with pytest.raises(InputError) as caught:
        check_image_file(path)
    assert caught.value.path == str(path)
    assert "object at 0x" not in str(caught.value)


def test_the_pixel_limit_is_a_product_of_the_sides(tmp_path):
    path = tmp_path / "wide.png"
    path.write_bytes(bomb_png(MAX_CASE_PIXELS // 4 + 1, 4))
    with pytest.raises(InputError, match="exceeds the limit"):
        check_image_file(path)


@pytest.mark.parametrize("protocol", sorted(COPIES))
@pytest.mark.parametrize("kind", sorted(BAD_IMAGES))
def test_cases_check_decodes_every_referenced_image(tmp_path, protocol, kind):
    cases, bad = COPIES[protocol](tmp_path, BAD_IMAGES[kind])
    done = umni("cases", "check", protocol, cases)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(bad) in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("protocol", ["genius", "aegis"])
@pytest.mark.parametrize("kind", sorted(BAD_IMAGES))
def test_a_bad_case_image_is_an_input_failure_and_the_run_completes(tmp_path, protocol, kind):
    cases, bad = COPIES[protocol](tmp_path, BAD_IMAGES[kind])
    out, cache = tmp_path / "run", tmp_path / "cache"
    args = ("run", protocol, "--cases", cases, "--model", "sim/umm", "--out", out, "--cache", cache, "--quiet")
    first = umni(*args)
    assert first.returncode == 0, first.stderr
    summary = RunFolder(out).read_summary()
    assert summary.failures["input"] >= 1 and summary.counts.computed > 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().split("\n") if line]
    messages = [n["failure"]["message"] for r in records for n in r["nodes"].values() if n.get("failure", {}).get("kind") == "input"]
    assert messages and all(str(bad) in m for m in messages)
    resumed = umni(*args)  # resuming a run with a bad image works too
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "summary.json").read_text())["failures"] == summary.failures
