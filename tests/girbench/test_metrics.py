"""GIR-Bench metrics against hand-computed numbers (boxes, OCR lines and images built in the test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from umni.backends.roles import Detection, OcrLine
from umni_graphs.girbench import masks
from umni_graphs.girbench.metrics import (
    accuracy,
    count_labels,
    digits_to_grid,
    frechet_distance,
    frechet_distance_between,
    join_ocr_text,
    mask_iou,
    mean_cosine_similarity,
    normalize_text,
    normalized_fid,
    numerical_case_correct,
    reasoning_perception_iou,
    relation_holds,
    spatial_case,
    sudoku_accuracy,
    union_box,
    word_continuous_score,
)

# ------------------------------------------------------------------------------------------------
# Numerical reasoning


def test_counts_come_from_detection_labels_loosely_matched():
    dets = [Detection("duck", (0, 0, 1, 1), 0.9), Detection("Duck", (0, 0, 1, 1), 0.8), Detection("dog_1", (0, 0, 1, 1), 0.7)]
    assert count_labels(dets + [Detection("cat", (0, 0, 1, 1), 0.9)], ["duck", "dog"]) == {"duck": 2, "dog": 1}


@pytest.mark.parametrize(
    ("counts", "missing", "correct"),
    [
        ({"duck": 3, "dog": 1}, (), True),
        ({"duck": 3, "dog": 1, "cat": 5}, (), True),  # objects not asked for do not matter
        ({"duck": 3, "dog": 2}, (), False),  # one count off fails the whole case
        ({"duck": 3}, (), False),  # dog absent from the counts is missing
        ({"duck": 3, "dog": 1}, ("dog",), False),  # detector said dog is missing
    ],
)
def test_numerical_case_needs_every_count_exact(counts, missing, correct):
    assert numerical_case_correct({"duck": 3, "dog": 1}, counts, missing) is correct


def test_accuracy_is_a_fraction_and_refuses_an_empty_set():
    assert accuracy([True, False, True, True]) == 0.75
    with pytest.raises(ValueError):
        accuracy([])


# ------------------------------------------------------------------------------------------------
# Spatial layout


def test_clear_horizontal_offset_is_left_only():
    # centres (5,5) and (105,5): offset (-100, 0), unit (-1, 0)
    subject, obj = (0, 0, 10, 10), (100, 0, 110, 10)
    assert relation_holds(subject, obj, "left")
    assert not relation_holds(subject, obj, "right")
    assert not relation_holds(subject, obj, "above")
    assert not relation_holds(subject, obj, "below")
    assert relation_holds(obj, subject, "right")


def test_overlapping_boxes_satisfy_no_direction():
    # offset (-20, -10); margins 0.25*(100+100) = 50 on both axes: inside on every axis
    for direction in ("left", "right", "above", "up", "below", "down"):
        assert not relation_holds((0, 0, 100, 100), (20, 10, 120, 110), direction)


def test_margin_boundary_is_exclusive():
    # two 10x10 boxes: margin 0.25*(10+10) = 5. Offset exactly -5 is still "on top of each other".
    assert not relation_holds((0, 0, 10, 10), (5, 0, 15, 10), "left")
    assert relation_holds((0, 0, 10, 10), (5.01, 0, 15.01, 10), "left")


def test_diagonal_uses_unit_offset_component_above_half():
    # offset (-30, -40): unit (-0.6, -0.8) -> both left and above hold (image y grows downward)
    s, o = (0, 0, 10, 10), (30, 40, 40, 50)
    assert relation_holds(s, o, "left") and relation_holds(s, o, "above") and relation_holds(s, o, "up")
    assert not relation_holds(s, o, "below") and not relation_holds(s, o, "right")
    # offset (-20, -40): unit (-0.447, -0.894) -> above only
    o2 = (20, 40, 30, 50)
    assert relation_holds(s, o2, "above") and not relation_holds(s, o2, "left")


def test_a_direction_the_official_check_does_not_know_never_holds():
    # compared exactly, as officially: "Left" is not "left"; "behind" and a missing direction are nothing
    s, o = (0, 0, 10, 10), (30, 0, 40, 10)
    assert relation_holds(s, o, "left")
    assert not any(relation_holds(s, o, word) for word in ("Left", "LEFT", " left", "behind", "", None))


def test_group_is_placed_by_union_box():
    assert union_box([(0, 0, 10, 10), (0, 20, 10, 30)]) == (0, 0, 10, 30)
    dets = [
        ("cat", (0, 0, 10, 10)),
        ("dog", (0, 20, 10, 30)),
        ("car", (100, 0, 120, 30)),
        ("bicycle", (130, 0, 150, 30)),
    ]
    labels = ["cat", "dog", "car", "bicycle"]
    verdict = spatial_case(dets, labels, [(["cat", "dog"], "left", ["car", "bicycle"])])
    assert verdict.all_detected_once and verdict.relations == [True] and verdict.correct
    # the dog alone sits below the cat: (5,25) - (5,5) = (0, 20), margin 0.25*(10+10) = 5
    assert spatial_case(dets, labels, [("dog", "below", "cat")]).correct


def test_duplicate_or_missing_detection_fails_the_case_but_relations_are_still_reported():
    dets = [Detection("cat", (0, 0, 10, 10), 0.9), Detection("cat", (0, 50, 10, 60), 0.8), Detection("car", (100, 0, 110, 10), 0.9)]
    verdict = spatial_case(dets, ["cat", "car"], [("cat", "left", "car")])
    assert verdict.counts == {"cat": 2, "car": 1}
    assert verdict.relations == [True] and not verdict.all_detected_once and not verdict.correct

    missing = spatial_case(dets[2:], ["cat", "car"], [("cat", "left", "car")])
    assert missing.relations == [False] and not missing.correct


def test_layout_score_is_fraction_of_fully_correct_cases():
    good = spatial_case([("a", (0, 0, 10, 10)), ("b", (50, 0, 60, 10))], ["a", "b"], [("a", "left", "b")])
    bad = spatial_case([("a", (0, 0, 10, 10)), ("b", (50, 0, 60, 10))], ["a", "b"], [("a", "right", "b")])
    assert accuracy(v.correct for v in (good, bad, good, good)) == 0.75


# ------------------------------------------------------------------------------------------------
# Text rendering


def test_normalisation_deletes_punctuation_and_collapses_spaces():
    assert normalize_text("  Don't   Stop, Believin'! ") == "dont stop believin"
    assert normalize_text("Make-It") == "makeit"


@pytest.mark.parametrize(
    ("ocr", "score"),
    [
        ("Make It Happen", 1.0),  # paper appendix H, case A
        ("Poster says xxxx Make It Happen", 1.0),  # case B: extra words are free
        ("MakeItHappen", 1.0),  # case C: merged OCR output
        ("Make It", 2 / 3),  # case D: one word missing
        ("", 0.0),
    ],
)
def test_word_continuous_score_matches_the_paper_examples(ocr, score):
    assert word_continuous_score("Make It Happen", ocr) == pytest.approx(score)


def test_repeated_words_are_credited_once_like_the_official_code():
    assert word_continuous_score("to be or not to be", "To be, or not to be") == pytest.approx(4 / 6)
    assert word_continuous_score("to be or not to be", "To be, or not to be", distinct_words=False) == 1.0


def test_words_match_inside_longer_words():
    assert word_continuous_score("it works", "a kit") == 0.5


def test_ground_truth_without_latin_characters_cannot_be_scored():
    with pytest.raises(ValueError):
        word_continuous_score("你好", "anything")


def test_ocr_lines_are_kept_above_half_confidence_in_order():
    lines = [
        OcrLine("JUST DO", (0, 0, 10, 10), 0.9),
        OcrLine("IT!", (0, 0, 10, 10), 0.5),
        OcrLine("  ", (0, 0, 10, 10), 0.99),
        ("it", (0, 0, 10, 10), 0.51),
    ]
    text = join_ocr_text(lines)
    assert text == "JUST DO it"
    assert word_continuous_score("Just do it", text) == 1.0
    assert word_continuous_score("Just do it", join_ocr_text(lines[:3])) == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------------------
# Uni and visual puzzle


def test_mean_cosine_against_each_reference():
    refs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # cosines 1, 0 and 1/sqrt(2)
    assert mean_cosine_similarity(np.array([2.0, 0.0]), refs) == pytest.approx((1 + 0 + 1 / math.sqrt(2)) / 3)
    assert mean_cosine_similarity(np.array([[1.0, 0.0]]), np.array([3.0, 0.0])) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        mean_cosine_similarity(np.zeros(2), refs)
    with pytest.raises(ValueError):
        mean_cosine_similarity(np.ones(3), refs)


def test_frechet_distance_of_shifted_sets_is_squared_shift():
    a = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    d = frechet_distance_between(a, a + np.array([3.0, 4.0]))  # same covariance, |shift|^2 = 25
    assert d == pytest.approx(25.0, abs=1e-9)
    assert normalized_fid(d) == pytest.approx(math.exp(-25 / 60))


def test_frechet_distance_one_dimensional_by_hand():
    # a: mean 1, variance 2; b: mean 2, variance 8 -> 1 + 2 + 8 - 2*sqrt(16) = 3
    assert frechet_distance_between(np.array([[0.0], [2.0]]), np.array([[0.0], [4.0]])) == pytest.approx(3.0)
    assert frechet_distance(np.array([1.0]), np.array([[2.0]]), np.array([2.0]), np.array([[8.0]])) == pytest.approx(3.0)


def test_frechet_distance_survives_singular_covariances():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 6))  # 3 samples in 6 dims: rank-2 covariance
    assert frechet_distance_between(a, a) == pytest.approx(0.0, abs=1e-3)
    shifted = frechet_distance_between(a, a + 1.0)  # shift of 1 in 6 dims
    assert shifted == pytest.approx(6.0, abs=1e-3)
    with pytest.raises(ValueError):
        frechet_distance_between(a[:1], a)


def test_normalized_fid_edges():
    assert normalized_fid(0.0) == 1.0
    assert normalized_fid(-0.5) == 1.0
    assert normalized_fid(60.0) == pytest.approx(math.exp(-1))


# ------------------------------------------------------------------------------------------------
# Visual logic (sudoku): a 4x4 puzzle drawn at 100 px per cell, radius max(0.6*100, 60) = 60 px

GRID = [[1, 0, 0, 4], [0, 4, 1, 0], [0, 1, 4, 0], [4, 0, 0, 1]]
SOLUTION = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]
BOX = (0.0, 0.0, 400.0, 400.0)


def at(text, row, col, confidence=0.9, dx=0.0, dy=0.0):
    cx, cy = col * 100 + 50 + dx, row * 100 + 50 + dy
    return OcrLine(text, (cx - 15, cy - 20, cx + 15, cy + 20), confidence)


def full_board(board):
    return [at(str(board[r][c]), r, c) for r in range(4) for c in range(4)]


def test_perfect_solution_scores_one():
    score = sudoku_accuracy(full_board(SOLUTION), GRID, SOLUTION, grid_box=BOX)
    assert (score.accuracy, score.correct, score.empty_cells, score.wrong_givens) == (1.0, 8, 8, 0)


def test_wrong_fills_and_overwritten_givens():
    board = [row[:] for row in SOLUTION]
    board[0][1], board[0][2] = 3, 2  # two empty cells filled wrongly
    assert sudoku_accuracy(full_board(board), GRID, SOLUTION, grid_box=BOX).accuracy == 6 / 8
    board = [row[:] for row in SOLUTION]
    board[0][0] = 2  # a given overwritten: one more cell in the denominator
    score = sudoku_accuracy(full_board(board), GRID, SOLUTION, grid_box=BOX)
    assert (score.accuracy, score.wrong_givens) == (8 / 9, 1)


def test_erased_givens_cost_nothing_and_low_confidence_digits_are_ignored():
    lines = [at(str(SOLUTION[r][c]), r, c, 0.5 if (r, c) == (0, 1) else 0.9) for r in range(4) for c in range(4) if GRID[r][c] == 0]
    assert sudoku_accuracy(lines, GRID, SOLUTION, grid_box=BOX).accuracy == 7 / 8


def test_multi_digit_line_is_split_into_character_slots():
    lines = [OcrLine("23", (100, 30, 300, 70), 0.9)]  # spans cells (0,1) and (0,2): slot centres x=150, 250
    score = sudoku_accuracy(lines, GRID, SOLUTION, grid_box=BOX)
    assert score.correct == 2 and score.accuracy == 2 / 8


def test_conflicting_digits_in_a_cell_are_not_credited():
    lines = [at("2", 0, 1), at("3", 0, 1, dx=5)]
    score = sudoku_accuracy(lines, GRID, SOLUTION, grid_box=BOX)
    assert (score.correct, score.conflicting_cells) == (0, 1)


def test_digit_midway_between_two_cells_goes_to_the_first_in_row_major_order():
    lines = [OcrLine("2", (190, 30, 210, 70), 0.9)]  # centre (200, 50): 50 px from (0,1) and (0,2)
    assert sudoku_accuracy(lines, GRID, SOLUTION, grid_box=BOX).correct == 1


def test_match_radius_is_max_of_sixty_percent_cell_and_60px():
    big = (0.0, 0.0, 1000.0, 1000.0)  # cell 250 -> radius 150; centre of (0,0) is (125,125)
    near = OcrLine("2", (115, -40, 135, 0), 0.9)  # centre (125, -20): 145 px away
    far = OcrLine("2", (115, -50, 135, -10), 0.9)  # centre (125, -30): 155 px away
    grid = [[0, 0, 0, 4], [0, 4, 1, 0], [0, 1, 4, 0], [4, 0, 0, 1]]
    solution = [[2, 1, 3, 4], [3, 4, 1, 2], [1, 2, 4, 3], [4, 3, 2, 1]]
    assert sudoku_accuracy([near], grid, solution, grid_box=big).correct == 1
    score = sudoku_accuracy([far], grid, solution, grid_box=big)
    assert (score.correct, score.unplaced_digits) == (0, 1)
    # small cells: 4x4 in 100 px -> cell 25, radius max(15, 60) = 60; a digit read 52.5 px above
    # the centre (12.5, 12.5) of cell (0,0) still lands there
    small = (0.0, 0.0, 100.0, 100.0)
    assert sudoku_accuracy([OcrLine("2", (10, -45, 15, -35), 0.9)], grid, solution, grid_box=small).correct == 1


def test_givens_can_be_read_back_from_a_rendered_question():
    lines = [at(str(GRID[r][c]), r, c) for r in range(4) for c in range(4) if GRID[r][c]]
    assert digits_to_grid(lines, 4, grid_box=BOX) == GRID
    with pytest.raises(ValueError):
        digits_to_grid(lines + [at("3", 0, 0, dx=3)], 4, grid_box=BOX)


# ------------------------------------------------------------------------------------------------
# Reasoning perception


def canvas(size=512, colour=(255, 255, 255)):
    return np.full((size, size, 3), colour, dtype=np.uint8)


def mask_of(size, *regions):
    m = np.zeros((size, size), dtype=np.uint8)
    for y0, y1, x0, x1 in regions:
        m[y0:y1, x0:x1] = 255
    return m


def test_solid_green_rectangle_iou_by_hand():
    img = canvas()
    img[100:200, 100:300] = (0, 255, 0)
    gt = mask_of(512, (100, 200, 150, 350))
    # intersection 100*150 = 15000; union 20000 + 20000 - 15000 = 25000
    score = reasoning_perception_iou(Image.fromarray(img), Image.fromarray(gt))
    assert score.method == "colour"
    assert score.iou == pytest.approx(0.6)
    assert (score.predicted_px, score.target_px) == (20000, 20000)


def test_images_are_resized_to_512_before_comparison():
    img = canvas(1024)
    img[200:400, 200:600] = (20, 230, 40)  # greenish enough for the colour box (R,B <= 100, G >= 155)
    gt = mask_of(256, (50, 100, 75, 175))  # at 512: rows 100-200, cols 150-350
    assert reasoning_perception_iou(img, gt).iou == pytest.approx(0.6)


def test_regions_under_three_percent_are_dropped():
    img = canvas()
    img[0:100, 0:100] = (0, 255, 0)  # 10000 px >= int(0.03 * 512 * 512) = 7864: kept
    img[300:380, 300:380] = (0, 255, 0)  # 6400 px: dropped
    assert reasoning_perception_iou(img, mask_of(512, (0, 100, 0, 100))).iou == 1.0


def test_translucent_green_falls_back_to_channel_ratios():
    original = canvas(colour=(120, 120, 120))
    edited = original.copy()
    # R = 110 > 100 misses the colour box; G/R = G/B = 1.36 > 1.15, green gain 30 > 10,
    # saturation 255*40/150 = 68 >= 60
    edited[100:300, 100:300] = (110, 150, 110)
    gt = mask_of(512, (100, 300, 100, 300))
    score = reasoning_perception_iou(edited, gt, original)
    assert score.method == "ratio"
    # the 3x3 cross opening can only cost the four corner pixels of the 200x200 square
    assert 1 - 4 / 40000 <= score.iou <= 1.0
    assert reasoning_perception_iou(edited, gt).iou == score.iou  # without original: ratios alone


def test_fallback_requires_green_to_have_increased_when_the_original_is_known():
    already_green = canvas(colour=(120, 120, 120))
    already_green[100:300, 100:300] = (110, 150, 110)
    gt = mask_of(512, (100, 300, 100, 300))
    unchanged = reasoning_perception_iou(already_green, gt, already_green)
    assert unchanged.predicted_px == 0 and unchanged.iou == 0.0
    assert reasoning_perception_iou(already_green, gt).iou > 0.99


def test_fallback_hole_filling_keeps_the_official_corner_quirk():
    # a fallback region touching the top-left pixel makes the flood fill claim the whole image
    img = canvas(colour=(120, 120, 120))
    img[0:300, 0:300] = (110, 150, 110)
    score = reasoning_perception_iou(img, mask_of(512, (0, 300, 0, 300)))
    assert score.predicted_px == 512 * 512
    assert score.iou == pytest.approx(90000 / 262144)


def test_plain_image_gives_empty_mask_and_iou_helpers():
    mask, method = masks.extract_green_mask(canvas(64))
    assert method == "ratio" and not mask.any()
    assert mask_iou(np.zeros((4, 4), bool), np.zeros((4, 4), bool)) == 1.0
    with pytest.raises(ValueError):
        mask_iou(np.zeros((4, 4), bool), np.zeros((5, 4), bool))
    assert masks.binary_mask(np.array([[127, 128]], dtype=np.uint8)).tolist() == [[False, True]]


def test_morphology_and_resizing_match_opencv_when_available():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(1)
    m = rng.random((40, 50)) > 0.55
    u8 = m.astype(np.uint8) * 255
    for kernel in (masks._RECT3, masks._RECT5, masks._CROSS3, masks._DISC5):
        k = kernel.astype(np.uint8)
        assert ((cv2.morphologyEx(u8, cv2.MORPH_OPEN, k) > 0) == masks.morph_open(m, kernel)).all()
        assert ((cv2.morphologyEx(u8, cv2.MORPH_CLOSE, k) > 0) == masks.morph_close(m, kernel)).all()
    img = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    linear = cv2.resize(img, (64, 48), interpolation=cv2.INTER_LINEAR).astype(int)
    assert np.abs(linear - masks.resize_linear(img, (48, 64)).astype(int)).max() <= 1  # fixed-point rounding
    nearest = cv2.resize(img[:, :, 0], (64, 48), interpolation=cv2.INTER_NEAREST)
    assert (nearest == masks.resize_nearest(img[:, :, 0], (48, 64))).all()
