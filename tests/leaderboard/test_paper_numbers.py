"""The papers' own numbers (graphs/<protocol>/paper.json): every stored value is the one the paper
prints in that row (checked against the paper's text, so a typo fails), every metric is a score the
protocol's paper layout shows, and a run's label finds its model by name, alias or group prefix."""

from __future__ import annotations

import json

import pytest

from tests.support.paper_text import find_rows, paper_lines
from umni.protocols.paper import PaperNumbers, load_paper_numbers
from umni.protocols.protocol import get_protocol
from umni.reporting.layouts import aegis, genius, girbench, umnibench, wise
from umni_graphs.aegis.cases import DOMAIN_GROUPS
from umni_graphs.umnibench.cases import DOMAINS

PROTOCOLS = ["umnibench", "genius", "aegis", "wise", "girbench"]


def _numbers(protocol: str) -> PaperNumbers:
    path = get_protocol(protocol).paper_numbers
    assert path is not None and path.exists(), f"{protocol} names no paper.json"
    return load_paper_numbers(path)


def mismatches(numbers: PaperNumbers, lines: list[str]) -> list[str]:
    """Every stored row whose values are not what its printed line holds (all of them, or the first
    ones where the table says why it keeps fewer)."""
    wrong = []
    for table in numbers.tables:
        printed = find_rows(lines, table.caption, [row.printed for row in table.rows])
        for row, (index, values) in zip(table.rows, printed):
            expected = values[: len(row.values)] if table.truncated else values
            if row.values != expected:
                wrong.append(f"{table.id}, row {row.printed!r} (text line {index + 1}): stored {row.values}, printed {values}")
    return wrong


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_stored_value_is_the_one_the_paper_prints(protocol):
    numbers = _numbers(protocol)
    assert mismatches(numbers, paper_lines(protocol)) == []
    assert numbers.protocol == protocol


def test_a_mistyped_value_fails_the_check():
    numbers = _numbers("wise")
    lines = paper_lines("wise")
    row = numbers.tables[0].rows[10]
    assert row.printed == "GPT4o" and row.values[-1] == 0.80
    row.values[-1] = 0.08
    assert mismatches(numbers, lines) == ["Table 1, row 'GPT4o' (text line 106): stored "
                                          "[0.81, 0.71, 0.89, 0.83, 0.79, 0.74, 0.08], printed [0.81, 0.71, 0.89, 0.83, 0.79, 0.74, 0.8]"]


def _layout_keys(protocol: str) -> set[str]:
    """The score keys each protocol's paper layout shows (its cells' flattened keys)."""
    if protocol == "umnibench":
        return ({"overall"} | {f"questions/{q}" for qs in umnibench.STAGES.values() for q in qs}
                | {f"stages/{s}" for s in umnibench.STAGES} | {f"domains/{d}" for d in DOMAINS})
    if protocol == "genius":
        return {"overall"} | {f"dimensions/{d}/{m}" for d in genius.DIMENSIONS for m in genius.METRICS}
    if protocol == "aegis":
        assert list(aegis.GROUPS) == list(DOMAIN_GROUPS)
        return {"overall"} | {f"main_table/{task}/{g}" for task, _ in aegis.TASKS for g in aegis.GROUPS}
    if protocol == "wise":
        return {"overall", *wise.CATEGORIES}
    return ({f"metrics/{k}/score" for _, keys in girbench.PAPER_GROUPS for k in keys} | {f"{g}/overall" for g in girbench.GROUP_KEYS}
            | {f"uni/{side}/{d}" for _, side in girbench.UNI_SIDES for d in [*girbench.UNI_DOMAINS, "overall"]})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_metric_is_a_score_the_paper_layout_shows(protocol):
    numbers = _numbers(protocol)
    keys = {cell.key for table in numbers.tables for cell in table.cells()}
    assert keys <= _layout_keys(protocol), keys - _layout_keys(protocol)


def test_a_label_finds_its_model_by_name_alias_or_group_prefix():
    numbers = _numbers("umnibench")
    by_name = numbers.cells_of("bagel")
    assert {c.table.id for c in by_name} == {"Table 2", "Table 3"}
    assert {c.model.printed for c in by_name} == {"Bagel"}
    overall = [c for c in by_name if c.key == "overall"]
    assert [c.value for c in overall] == [75.14, 75.14]
    assert numbers.cells_of("Unified/BAGEL-7B-MoT") == by_name  # an alias, under a --group prefix
    assert numbers.cells_of("Bagel-7B-Think") == []
    # the models of Table 2 whose per-question column the text does not print hold the overall alone
    assert {c.key for c in numbers.cells_of("OneCAT") if c.table.id == "Table 2"} == {"overall"}


def test_genius_rows_keep_the_papers_interleaved_column_as_the_input_format():
    numbers = _numbers("genius")
    first = {c.model.printed: c.options for c in numbers.cells_of("Bagel") + numbers.cells_of("GPT-Image")}
    assert first == {"Bagel": {"input_format": ["interleaved", "fine_grained"]}, "GPT-Image": {"input_format": "edit"}}
    assert {numbers.table_settings(t).roles["judge"] for t in numbers.tables} == {"Gemini-3-Pro", "Qwen2.5-VL-72B"}


def test_a_broken_paper_file_is_one_line_naming_the_file_and_the_field(tmp_path):
    from umni.util.errors import ConfigError

    good = _numbers("wise").model_dump()
    good["tables"][0]["rows"][0]["values"].append(0.5)  # eight values for seven columns
    path = tmp_path / "paper.json"
    path.write_text(json.dumps(good))
    with pytest.raises(ConfigError, match=r"paper\.json: tables\.0: Value error, Table 1: row 'FLUX\.1-dev' has 8 values for 7 columns"):
        load_paper_numbers(path)
    good["tables"][0]["rows"][0]["values"].pop()
    good["tables"][0]["columns"][0]["key"] = None
    path.write_text(json.dumps(good))
    with pytest.raises(ConfigError, match="every metric heading needs the umni score key it is"):
        load_paper_numbers(path)


#: Values the papers' prose states too, a check independent of reading the tables' lines:
#: (protocol, model, score key, value, the sentence's words).
PROSE = [
    ("umnibench", "Bagel-Think", "overall", 77.85, "achieves the highest aggregate performance (77.85)"),
    ("umnibench", "Ovis-U1", "overall", 77.45, "Ovis-U1 attains comparable overall results (77.45)"),
    ("umnibench", "Lumina-DiMOO", "overall", 51.90, "Lumina-DiMOO’s score (51.90)"),
    ("umnibench", "Bagel-Think", "domains/Fluid", 68.05, "Fluid (71.01 vs. 68.05)"),
    ("umnibench", "UniPic2", "domains/Animal", 79.79, "Animal (79.79)"),
    ("genius", "Nano Banana Pro", "overall", 57.19, "achieves an overall score of only 57.19"),
    ("genius", "Bagel", "overall", 26.74, "scoring a mere 26.74"),
    ("aegis", "Gemini Nano Banana", "main_table/understanding/STEM", 64.5, "STEM understanding (64.5) and generation (42.6)"),
    ("aegis", "Gemini Nano Banana", "main_table/generation/STEM", 42.6, "STEM understanding (64.5) and generation (42.6)"),
    ("aegis", "Bagel-7B w/o CoT", "overall", 18.5, "the overall performance improves from 18.5 to 22.3"),
    ("aegis", "Bagel-7B w. CoT", "overall", 22.3, "the overall performance improves from 18.5 to 22.3"),
    ("girbench", "Gemini-2.5-Flash-Image", "metrics/numerical/score", 0.362, "the highest score is just 0.362"),
    ("girbench", "BAGEL-7B w/ CoT", "metrics/numerical/score", 0.249, "(0.249 vs. 0.057)"),
    ("girbench", "BAGEL-7B", "metrics/numerical/score", 0.057, "(0.249 vs. 0.057)"),
]


@pytest.mark.parametrize(("protocol", "model", "key", "value", "words"), PROSE)
def test_values_the_papers_prose_states_match_the_stored_ones(protocol, model, key, value, words):
    assert words in "\n".join(paper_lines(protocol))
    numbers = _numbers(protocol)
    main_tables = [t for t in numbers.tables if t.settings is None]  # not an appendix's other judge
    stored = {c.value for c in numbers.cells_of(model) if c.key == key and c.model.printed == model and c.table in main_tables}
    assert stored == {value}
