"""Case images read as a person means them, and refused commands that leave no trace (issue 25,
items 5, 8, 9 and 12)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from umni.cli import main
from umni.protocols.caseio import file_problem, shown_missing
from umni.store.images import check_image_file, load_case_image
from umni.util.errors import InputError
from umni.util.filehash import file_sha256


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def run(out: Path, tmp_path: Path, *extra: str) -> int:
    return main(["run", "umnibench", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet", *extra])


# ---------------------------------------------------------------------------- item 5: refused --out


def test_a_folder_that_is_not_a_run_directory_is_left_exactly_as_found(tmp_path, capsys):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "thesis.tex").write_text("\\begin{document}")
    before = listing(folder)
    assert run(folder, tmp_path, "--limit", "1") == 2
    assert "not a umni run directory" in capsys.readouterr().err
    assert listing(folder) == before  # no .lock, no INCOMPLETE


def test_a_run_directory_of_another_command_is_left_exactly_as_found(tmp_path, capsys):
    out = tmp_path / "run"
    assert run(out, tmp_path, "--limit", "1") == 0
    (out / ".lock").unlink()  # as a user copying the folder elsewhere would have it
    before = {p: (out / p).read_bytes() for p in listing(out) if (out / p).is_file()}
    assert run(out, tmp_path, "--limit", "1", "--seed", "7") == 2
    assert "different command" in capsys.readouterr().err
    after = {p: (out / p).read_bytes() for p in listing(out) if (out / p).is_file()}
    assert after == before


def test_a_run_db_of_another_command_gets_no_incomplete_marker(tmp_path, capsys):
    out = tmp_path / "run"
    assert run(out, tmp_path, "--limit", "1") == 0
    (out / "run.json").unlink()
    (out / ".lock").unlink()
    assert run(out, tmp_path, "--limit", "1", "--seed", "7") == 2
    assert not (out / "INCOMPLETE").exists() and not (out / ".lock").exists()


def test_a_shrinking_limit_on_a_run_of_all_cases_says_how_to_resume(tmp_path, capsys):
    out = tmp_path / "run"
    assert run(out, tmp_path) == 0
    capsys.readouterr()
    assert run(out, tmp_path, "--limit", "2") == 2
    err = capsys.readouterr().err
    assert "None" not in err and "Resume or extend it with no --limit" in err


# ------------------------------------------------------------------------- items 8, 9: pixels


def test_exif_orientation_is_applied_when_a_case_image_is_read(tmp_path):
    photo = Image.new("RGB", (40, 20), "red")
    photo.paste((0, 0, 255), (0, 0, 10, 20))  # blue on the left edge as stored
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to display"
    path = tmp_path / "photo.jpg"
    photo.save(path, exif=exif, quality=95)
    upright = load_case_image(path)
    assert upright.size == (20, 40)
    top = np.asarray(upright)[2, 10]
    assert top[2] > 150 and top[0] < 100  # the stored left edge is now on top, as a viewer shows it


def test_a_16_bit_png_keeps_its_grey_levels(tmp_path):
    gradient = np.linspace(0, 65535, 16 * 256).round().astype(np.uint16).reshape(16, 256)
    path = tmp_path / "depth.png"
    Image.fromarray(gradient).save(path)
    grey = np.asarray(load_case_image(path))
    assert grey.dtype == np.uint8 and len(np.unique(grey)) == 256
    assert grey.min() == 0 and grey.max() == 255


def test_a_plain_image_reads_as_before(tmp_path):
    path = tmp_path / "plain.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(path)
    assert load_case_image(path).getpixel((3, 3)) == (10, 20, 30)


# -------------------------------------------------------------------------- item 12: odd files


def test_a_fifo_given_as_a_case_image_is_named_as_such_and_never_opened(tmp_path):
    fifo = tmp_path / "image.png"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as refused:
        check_image_file(fifo)  # opening it would block until a writer came
    assert "FIFO" in str(refused.value)
    assert file_problem(fifo) == "a FIFO (named pipe), not a file"
    assert shown_missing("image.png", fifo) == "image.png (a FIFO (named pipe), not a file)"
    assert file_problem(tmp_path / "absent.png") == "missing"
    assert shown_missing("absent.png", tmp_path / "absent.png") == "absent.png"


def test_a_fifo_case_image_in_aegis_is_skipped_saying_what_it_is(tmp_path, capsys):

    cases = tmp_path / "aegis"
    (cases / "images" / "physics").mkdir(parents=True)
    record = {
        "id": 4, "task": "editing", "input_type": "single_image", "category": "physics",
        "keywords": "ice", "refined_keywords": "ice", "ref_text": "", "ref_image": [], "input_image": ["physics/in.png"],
        "prompt": "Melt the ice in <image1>.", "clear_prompt": "Edit <image1>: remove the ice cube.",
        "reasoning_type": "temporal reasoning", "refined_question": ["[Image] Is the ice cube gone?"],
    }  # fmt: skip

    (cases / "annotation.json").write_text(json.dumps([record]))
    os.mkfifo(cases / "images" / "physics" / "in.png")
    code = main(["cases", "check", "aegis", str(cases / "annotation.json")])
    out = capsys.readouterr()
    assert "FIFO" in out.out + out.err, (code, out)


def test_the_file_hash_memo_follows_the_umask(tmp_path, monkeypatch):
    monkeypatch.setenv("UMNI_CACHE", str(tmp_path / "cache"))
    picture = tmp_path / "x.bin"
    picture.write_bytes(b"abc")
    old = os.umask(0o002)
    try:
        file_sha256(picture)
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "cache" / "file-hashes.db").stat().st_mode)
    assert mode == 0o664
