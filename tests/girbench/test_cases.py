"""GIR-Bench loaders: valid files load, every bad record is reported with file, record and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from umni.util.errors import InputError, InputErrors
from umni_graphs.girbench.dataset import (
    NUMERICAL_FILE,
    find_task_file,
    load_numerical_cases,
    load_perception_cases,
    load_puzzle_cases,
    load_spatial_cases,
    load_text_cases,
    load_uni_cases,
    load_visual_logic_cases,
    missing_images,
    output_name,
)
from umni_graphs.girbench.metrics import spatial_case
from umni_graphs.girbench.validation import confined_path


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def touch_png(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4)).save(path)
    return path


# ------------------------------------------------------------------------------------------------
# JSON task files


def test_numerical_cases_load(tmp_path):
    path = write_json(
        tmp_path / "prompt" / NUMERICAL_FILE,
        [
            {"id": 1, "prompt": "ducks and dogs, 10 legs, 4 animals", "task": {"objects": ["duck", "dog"], "number": [3, 1]}},
            {"id": "2", "prompt": "p", "task": {"objects": ["cat"], "number": [2]}, "extra": "ignored"},
        ],
    )
    assert find_task_file(tmp_path, NUMERICAL_FILE) == path
    cases = load_numerical_cases(path)
    assert [c.id for c in cases] == [1, 2]
    assert cases[0].expected_counts == {"duck": 3, "dog": 1}
    assert output_name(cases[0].id) == "001.png"


def test_all_bad_numerical_records_are_reported_at_once(tmp_path):
    path = write_json(
        tmp_path / "n.json",
        [
            {"id": 1, "prompt": "ok", "task": {"objects": ["duck"], "number": [1]}},
            {"id": 2, "prompt": "p", "task": {"objects": ["duck", "dog"], "number": [3]}},
            {"id": 3, "prompt": "p", "task": {"objects": ["duck"], "number": [0]}},
            {"id": 1, "prompt": "p", "task": {"objects": ["cat"], "number": [1]}},
            {"prompt": "p", "task": {"objects": ["cat"], "number": [1]}},
            "not an object",
        ],
    )
    with pytest.raises(InputErrors) as info:
        load_numerical_cases(path)
    errors = info.value.errors
    where = [(e.record, e.field) for e in errors]
    assert ("1 (id 2)", "task") in where  # count/object mismatch
    assert ("2 (id 3)", "task.number[0]") in where  # counts must be >= 1
    assert ("3 (id 1)", "id") in where  # duplicate id
    assert ("4", "id") in where  # missing id
    assert ("5", None) in where  # not an object
    assert len(errors) == 5
    assert all(e.path == str(path) for e in errors)
    assert "2 objects but 1 counts" in str(info.value)
    assert "duplicate id 1" in str(info.value)


def test_malformed_json_names_the_line(tmp_path):
    path = tmp_path / "n.json"
    path.write_text('[\n{"id": 1,\n oops}\n]', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_numerical_cases(path)
    assert info.value.line == 3 and info.value.path == str(path)
    with pytest.raises(InputError, match="expected a JSON list"):
        load_numerical_cases(write_json(tmp_path / "d.json", {"id": 1}))
    with pytest.raises(InputError, match="not found"):
        load_numerical_cases(tmp_path / "absent.json")


def test_spatial_cases_with_groups_and_colours(tmp_path):
    path = write_json(
        tmp_path / "s.json",
        [
            {
                "id": 7,
                "prompt": "animals left of vehicles",
                "task": {
                    "objects": [["cat", "dog"], ["car", "bicycle"]],
                    "colors": [["black", ""], ["red", ""]],
                    "relative_position": [{"subject": ["cat", "dog"], "direction": "left", "object": ["car", "bicycle"]}],
                },
            },
            {
                "id": 8,
                "prompt": "a cup above a book",
                "task": {"objects": ["cup", "book"], "relative_position": [{"subject": "cup", "direction": "up", "object": "book"}]},
            },
        ],
    )
    grouped, simple = load_spatial_cases(path)
    assert grouped.labels == ["black cat", "dog", "red car", "bicycle"]
    assert grouped.relations == [(["black cat", "dog"], "left", ["red car", "bicycle"])]
    assert simple.labels == ["cup", "book"] and simple.relations == [("cup", "up", "book")]
    # the loaded case feeds the metric directly
    dets = [("black cat", (0, 0, 10, 10)), ("dog", (0, 20, 10, 30)), ("red car", (100, 0, 120, 30)), ("bicycle", (130, 0, 150, 30))]
    assert spatial_case(dets, grouped.labels, grouped.relations).correct


def test_bad_spatial_records_name_the_field(tmp_path):
    path = write_json(
        tmp_path / "s.json",
        [
            {"id": 1, "prompt": "p", "task": {"objects": ["a", "b"], "relative_position": [{"subject": "a", "direction": ["left"], "object": "b"}]}},
            {"id": 2, "prompt": "p", "task": {"objects": ["a", "b"], "relative_position": [{"subject": "a", "direction": "left", "object": "c"}]}},
            {"id": 3, "prompt": "p", "task": {"objects": ["a", "b"], "colors": ["red"], "relative_position": [{"subject": "a", "direction": "left", "object": "b"}]}},
            {"id": 4, "prompt": "p", "task": {"objects": ["a", ["b"]], "relative_position": [{"subject": "a", "direction": "left", "object": "b"}]}},
        ],
    )
    with pytest.raises(InputErrors) as info:
        load_spatial_cases(path)
    where = {(e.record, e.field) for e in info.value.errors}
    assert ("0 (id 1)", "task.relative_position[0].direction") in where
    assert ("1 (id 2)", "task") in where
    assert ("2 (id 3)", "task") in where
    assert ("3 (id 4)", "task.objects") in where  # names and groups mixed
    text = str(info.value)
    assert "['c'], which are not among the objects" in text and "1 colors for 2 objects" in text


def test_text_cases_must_have_scorable_text(tmp_path):
    path = write_json(tmp_path / "t.json", [{"id": 1, "prompt": "Nike slogan", "text": "Just do it"}])
    assert load_text_cases(path)[0].text == "Just do it"
    bad = write_json(tmp_path / "bad.json", [{"id": 1, "prompt": "p", "text": "¡¿…?!"}])
    with pytest.raises(InputError) as info:
        load_text_cases(bad)
    assert info.value.field == "text" and info.value.record == "0 (id 1)"


# ------------------------------------------------------------------------------------------------
# Folder-based sets


def test_uni_reference_sets(tmp_path):
    touch_png(tmp_path / "Zoology" / "2_snow_leopard" / "b.png")
    touch_png(tmp_path / "Zoology" / "2_snow_leopard" / "a.jpg")
    (tmp_path / "Zoology" / "2_snow_leopard" / "notes.txt").write_text("x")
    touch_png(tmp_path / "Zoology" / "10_okapi" / "x.webp")
    touch_png(tmp_path / "Botany" / "1_baobab" / "1.png")
    (tmp_path / "Botany" / "README").write_text("loose file, ignored")
    cases = load_uni_cases(tmp_path, categories=("Zoology", "Botany"))
    assert [c.id for c in cases] == ["Zoology/10", "Zoology/2", "Botany/1"]
    leopard = cases[1]
    assert leopard.display_name == "snow leopard" and leopard.entity_id == 2
    assert [p.name for p in leopard.references] == ["a.jpg", "b.png"]
    assert missing_images(cases) == []


def test_uni_folder_problems_are_collected(tmp_path):
    touch_png(tmp_path / "Zoology" / "okapi" / "a.png")
    (tmp_path / "Zoology" / "3_empty").mkdir(parents=True)
    touch_png(tmp_path / "Zoology" / "4_a" / "a.png")
    touch_png(tmp_path / "Zoology" / "4_b" / "a.png")
    with pytest.raises(InputErrors) as info:
        load_uni_cases(tmp_path)
    messages = str(info.value)
    assert "okapi" in messages and "<id>_<name>" in messages
    assert "3_empty" in messages and "no reference images" in messages
    assert "id 4 already used" in messages
    assert "Botany" in messages and "Geography" in messages  # absent category folders


def test_perception_cases_report_missing_counterparts(tmp_path):
    base = tmp_path / "ReasoningPerception"
    touch_png(base / "image" / "10.png")
    touch_png(base / "mask" / "10.png")
    touch_png(base / "image" / "2.png")
    cases = load_perception_cases(tmp_path)
    assert [c.id for c in cases] == ["2", "10"]
    assert missing_images(cases) == [("2", base / "mask" / "2.png")]


def test_visual_logic_cases(tmp_path):
    base = tmp_path / "VisualLogic"
    write_json(
        base / "sudoku" / "1.json",
        {"grid_size": 4, "puzzle": [[1, 0, 0, 4], [0, 4, 1, 0], [0, 1, 4, 0], [4, 0, 0, 1]],
         "answer": [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]},
    )
    write_json(base / "sudoku" / "2.json", {"grid_size": 9})
    touch_png(base / "question" / "1.png")
    touch_png(base / "answer" / "1.png")
    one, two = load_visual_logic_cases(tmp_path)
    assert one.spec.grid[0] == [1, 0, 0, 4] and one.spec.solution[3] == [4, 3, 2, 1]
    assert two.spec.grid is None and two.spec.grid_size == 9
    assert missing_images([one, two]) == [("2", base / "question" / "2.png"), ("2", base / "answer" / "2.png")]


def test_bad_sudoku_files_are_all_reported(tmp_path):
    sudoku = tmp_path / "VisualLogic" / "sudoku"
    write_json(sudoku / "1.json", {"grid_size": 4, "grid": [[0, 0], [0, 0]]})
    write_json(sudoku / "2.json", {"grid_size": 4, "grid": [[1, 0, 0, 4]] * 4, "solution": [[2, 1, 3, 4]] * 4})
    write_json(sudoku / "3.json", {"grid_size": 4, "question_image": "../../../etc/passwd"})
    write_json(sudoku / "4.json", {"grid_size": 4, "answer_image": "/etc/hosts"})
    write_json(sudoku / "5.json", [1, 2])
    (sudoku / "6.json").write_text("{", encoding="utf-8")
    write_json(sudoku / "7.json", {"grid_size": 4, "grid": [[1, 2, 3, 4]] * 4})
    with pytest.raises(InputErrors) as info:
        load_visual_logic_cases(tmp_path)
    by_record = {e.record: e for e in info.value.errors}
    assert set(by_record) == {"1", "2", "3", "4", "5", None, "7"}
    assert "must be 4x4" in by_record["1"].message
    assert "givens disagree with the solution" in by_record["2"].message
    assert by_record["3"].field == "question_image" and "outside the data directory" in by_record["3"].message
    assert by_record["4"].field == "answer_image"
    assert by_record[None].path.endswith("6.json") and by_record[None].line == 1
    assert "no empty cell" in by_record["7"].message


def test_sudoku_image_overrides_inside_the_data_dir_are_allowed(tmp_path):
    base = tmp_path / "VisualLogic"
    write_json(base / "sudoku" / "1.json", {"grid_size": 4, "question_image": str(base / "q" / "x.png"), "answer_image": "a/../a/y.png"})
    (case,) = load_visual_logic_cases(tmp_path)
    assert case.question_image == base / "q" / "x.png"
    assert case.answer_image == base / "a" / "y.png"


def test_puzzle_cases_pair_question_and_solution(tmp_path):
    base = tmp_path / "VisualPuzzle"
    touch_png(base / "solution" / "001.png")
    touch_png(base / "solution" / "012.png")
    touch_png(base / "question" / "001.png")
    cases = load_puzzle_cases(tmp_path)
    assert [c.id for c in cases] == [1, 12]
    assert missing_images(cases) == []
    assert cases[0].missing_input() is None
    assert cases[1].question_image is None and "012.png (or 12.png) in VisualPuzzle/question/" in (cases[1].missing_input() or "")
    touch_png(base / "solution" / "final.png")
    with pytest.raises(InputError, match="must be a number"):
        load_puzzle_cases(tmp_path)
    with pytest.raises(InputError, match="puzzle_inputs"):
        load_puzzle_cases(tmp_path, inputs="elsewhere")


def test_missing_directories_are_input_errors(tmp_path):
    for loader in (load_perception_cases, load_visual_logic_cases, load_puzzle_cases, load_uni_cases):
        with pytest.raises(InputError, match="not found"):
            loader(tmp_path / "nowhere")


def test_confined_path_is_lexical(tmp_path):
    root = tmp_path / "data"
    assert confined_path(root, "a/b.png") == root / "a" / "b.png"
    assert confined_path(root, "a/../b.png") == root / "b.png"
    for escape in ("../b.png", "a/../../b.png", "/etc/passwd", str(tmp_path / "data2" / "x.png")):
        with pytest.raises(InputError, match="outside the data directory"):
            confined_path(root, escape, source="f.json", record=3, field="image")
