"""Checks on the bundled UmniBench case set (cases/umnibench/cases.jsonl).

Each rule is a function that returns a list of problems, so a failure names the case and question, and
so each rule can be shown to fire on a deliberately broken copy of the real data.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

try:
    from umni_graphs.umnibench.cases import DOMAINS, UmniCase
except ImportError:  # the package init of graphs/umnibench may not exist yet; load the schema file itself
    _schema_path = Path(__file__).resolve().parents[1] / "graphs" / "umnibench" / "cases.py"
    _spec = importlib.util.spec_from_file_location("_umnibench_cases_schema", _schema_path)
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _module  # pydantic resolves the schema's annotations through sys.modules
    _spec.loader.exec_module(_module)
    DOMAINS, UmniCase = _module.DOMAINS, _module.UmniCase

CASES_FILE = Path(__file__).resolve().parents[1] / "cases" / "umnibench" / "cases.jsonl"
STAGES = ("generation", "interaction", "counterfactual")
LETTERS = "ABCD"
#: The five questions that check what the image shows (the paper's perception-oriented questions).
PERCEPTION_QUESTIONS = {"Q1", "Q2", "Q3", "Q4", "Q7"}
#: The counterfactual outcome and principle: the model has to reason them out, so the instruction must not say them.
REASONING_QUESTIONS = {"Q8", "Q9"}

#: Words that name a colour, material or surface texture: an attribute edit must use at least one.
ATTRIBUTE_WORDS = set(
    """red orange yellow green blue purple violet pink white black grey gray brown gold golden silver teal
    turquoise lime navy cobalt crimson emerald lavender beige cream maroon magenta cyan rainbow neon cherry
    sky jet metallic glossy matte shiny glittery glitter sparkly frosted fuzzy furry fur fluffy velvet rough
    smooth polished rusty striped stripes stripe spots spotted dots polka checks checkered checkerboard
    speckles speckled plaid tartan leopard tiger zebra wood wooden metal steel iron copper brass glass plastic
    ceramic clay stone marble paper fabric wool silk leather rubber enamel""".split()
)
#: An edit instruction asks for the attribute change with one of these verbs.
CHANGE_VERBS = {"make", "change", "turn", "recolour", "recolor", "paint", "repaint", "cover", "give"}

STOPWORDS = set(
    """a an the of to in on at by for with and or but is are was were be been it its this that these those
    there their them they as from into onto off up out now still so than then not no nothing all some any
    what which who why how where when does do did has have had just only very same one two new""".split()
)


# ------------------------------------------------------------------------------------------ loading
def parse_lines(lines: list[str]) -> tuple[list, list[str]]:
    """Parses JSONL text into UmniCase objects; problems name the 1-based line number."""
    cases, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            problems.append(f"line {number}: empty line")
            continue
        try:
            cases.append(UmniCase.model_validate_json(line))
        except Exception as error:  # pydantic.ValidationError or a JSON error; both carry a readable message
            problems.append(f"line {number}: {error}")
    return cases, problems


def raw_lines() -> list[str]:
    return CASES_FILE.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def cases() -> list:
    parsed, problems = parse_lines(raw_lines())
    assert not problems, "\n".join(problems)
    return parsed


def questions(case):
    for stage in STAGES:
        for question in case.stage(stage).questions:
            yield stage, question


# ------------------------------------------------------------------------------------------ rules
def domain_problems(cases) -> list[str]:
    problems = []
    if len(cases) < 26:
        problems.append(f"only {len(cases)} cases, want at least 26")
    ids = Counter(c.id for c in cases)
    problems += [f"id {i!r} used {n} times" for i, n in ids.items() if n > 1]
    per_domain = Counter(c.domain for c in cases)
    problems += [f"domain {d!r} has {per_domain[d]} cases, want 2" for d in DOMAINS if per_domain[d] != 2]
    for c in cases:
        if not re.fullmatch(r"[a-z]+(-[a-z]+)*-\d{2}", c.id):
            problems.append(f"{c.id}: id should look like 'spatial-01'")
    return problems


def option_problems(cases) -> list[str]:
    problems = []
    for c in cases:
        for _, q in questions(c):
            if len(q.options) != 4:
                problems.append(f"{c.id} {q.id}: {len(q.options)} options, want 4")
            if re.search(rf"\b{re.escape(q.answer)}\b", q.text, flags=re.IGNORECASE):
                problems.append(f"{c.id} {q.id}: the answer {q.answer!r} is written in the question")
    return problems


def position_problems(cases, limit: float = 0.40) -> list[str]:
    positions = Counter(LETTERS[q.answer_index] for c in cases for _, q in questions(c))
    total = sum(positions.values())
    return [
        f"answer letter {letter} holds {count}/{total} answers (more than {limit:.0%})"
        for letter, count in sorted(positions.items())
        if count > limit * total
    ]


def _attribute_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) & ATTRIBUTE_WORDS


def attribute_edit_problems(cases, stage: str = "interaction", question_id: str = "Q4") -> list[str]:
    """The stage's detail question asks about an attribute change that the stage's instruction requests."""
    problems = []
    for c in cases:
        instruction = c.stage(stage).instruction
        question = next(q for q in c.stage(stage).questions if q.id == question_id)
        shared = _attribute_words(question.answer) & _attribute_words(instruction)
        if not shared:
            problems.append(
                f"{c.id} {question_id}: answer {question.answer!r} names no colour/material/texture that the "
                f"{stage} instruction asks for"
            )
        if not set(re.findall(r"[a-z]+", instruction.lower())) & CHANGE_VERBS:
            problems.append(f"{c.id}: the {stage} instruction asks for no attribute change ({sorted(CHANGE_VERBS)})")
    return problems


def counterfactual_problems(cases) -> list[str]:
    problems = []
    for c in cases:
        before, after = set(c.interaction.entities), set(c.counterfactual.entities)
        added, removed = after - before, before - after
        if len(added) != 1 or len(removed) != 1:
            problems.append(f"{c.id}: counterfactual must replace exactly one entity ({sorted(before)} -> {sorted(after)})")
            continue
        (new,) = added
        if new.lower() not in c.counterfactual.instruction.lower():
            problems.append(f"{c.id}: the new entity {new!r} is not named in the counterfactual instruction")
        if set(c.generation.entities) != before:
            problems.append(f"{c.id}: the interaction stage must keep the generation stage's entities")
    return problems


def _stem(word: str, *, coarse: bool = False) -> str:
    """A light stemmer, so that 'floats', 'floating' and 'floated' (or 'bubble' and 'bubbles') compare equal.

    Plurals first ('berries' -> 'berry', 'boxes' -> 'box'), then -ing/-ed with a doubled final consonant undone
    ('stopped' -> 'stop'); stems keep at least three letters, so short words ('red', 'bed', 'ring') stay whole.
    `coarse` also drops a final 'e', so 'move' meets 'moving'; that merges a few distinct words ('plane' and
    'plan'), which is the safe side for spotting a giveaway but not for telling options apart."""
    if len(word) > 4 and word.endswith(("ies", "ied")):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("eed"):
            word = word[: -len(suffix)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if coarse and len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _content_words(text: str, *, coarse: bool = False) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower().replace("'s", ""))  # "the fan's air": 'fan', 'air'
    return {_stem(w, coarse=coarse) for w in words if w not in STOPWORDS}


def grounding_problems(cases) -> list[str]:
    """Every perception answer (Q1-Q4, Q7) is what the instructions so far describe: it shares more content words
    with them than any distractor does. This keeps those questions answerable from a faithful image (and by the
    word-matching offline reference backend), rather than from the question text. The outcome and principle of
    the counterfactual stage (Q8, Q9) are exempt on purpose: the model has to work them out (see
    `giveaway_problems`)."""
    problems = []
    for c in cases:
        described = ""
        for stage in STAGES:
            described += " " + c.stage(stage).instruction
            scene = _content_words(described)
            for q in c.stage(stage).questions:
                if q.id not in PERCEPTION_QUESTIONS:
                    continue
                overlap = {o: len(_content_words(o) & scene) for o in q.options}
                best_distractor = max(n for o, n in overlap.items() if o != q.answer)
                if overlap[q.answer] <= best_distractor:
                    problems.append(f"{c.id} {q.id}: answer is not the option the instructions describe best {overlap}")
    return problems


def _distinctive_words(question) -> set[str]:
    """Content words of the answer that no wrong option uses: the words that tell the answer apart."""
    others = set().union(*(_content_words(o, coarse=True) for o in question.options if o != question.answer))
    return _content_words(question.answer, coarse=True) - others


def giveaway_problems(cases) -> list[str]:
    """The counterfactual instruction names the replacement and the new attribute but not the outcome: no word
    that singles out the Q8 (outcome) or Q9 (principle) answer appears in it. Otherwise those questions test
    copying words from the instruction, not reasoning about what the replacement changes."""
    problems = []
    for c in cases:
        instruction = _content_words(c.counterfactual.instruction, coarse=True)
        for q in c.counterfactual.questions:
            if q.id not in REASONING_QUESTIONS:
                continue
            leaked = _distinctive_words(q) & instruction
            if leaked:
                problems.append(
                    f"{c.id} {q.id}: the counterfactual instruction gives away the answer {q.answer!r} "
                    f"(shares {sorted(leaked)})"
                )
    return problems


# ------------------------------------------------------------------------------------------ tests on the real set
def test_every_line_parses_as_a_case():
    lines = raw_lines()
    cases, problems = parse_lines(lines)
    assert not problems, "\n".join(problems)
    assert len(cases) == len(lines)


def test_two_cases_per_domain_with_unique_ids(cases):
    assert domain_problems(cases) == []


def test_four_options_and_answer_not_in_question(cases):
    assert option_problems(cases) == []


def test_answer_positions_are_spread(cases):
    assert position_problems(cases) == []
    counts = Counter(LETTERS[q.answer_index] for c in cases for _, q in questions(c))
    assert set(counts) == set(LETTERS), counts  # every letter is used


def test_interaction_asks_for_an_attribute_change(cases):
    assert attribute_edit_problems(cases, "interaction", "Q4") == []


def test_counterfactual_asks_for_another_attribute_change(cases):
    assert attribute_edit_problems(cases, "counterfactual", "Q7") == []


def test_counterfactual_replaces_exactly_one_named_entity(cases):
    assert counterfactual_problems(cases) == []


def test_answers_are_grounded_in_the_instructions(cases):
    assert grounding_problems(cases) == []


def test_counterfactual_instruction_does_not_give_the_outcome_away(cases):
    assert giveaway_problems(cases) == []


# ------------------------------------------------------------------------------------------ the rules can fail
def _broken_copy(edit) -> list:
    """A parsed copy of the real set with one record edited as raw JSON (so the edit bypasses nothing)."""
    records = [json.loads(line) for line in raw_lines()]
    edit(records)
    cases, problems = parse_lines([json.dumps(r) for r in records])
    assert not problems, problems
    return cases


def test_parse_reports_the_line_number_of_a_bad_record():
    lines = raw_lines()
    record = json.loads(lines[4])
    record["generation"]["questions"][1]["answer"] = "an option that does not exist"
    lines[4] = json.dumps(record)
    lines[9] = lines[9][:-5]  # truncated JSON
    _, problems = parse_lines(lines)
    assert [p.split(":")[0] for p in problems] == ["line 5", "line 10"]


def test_domain_rule_catches_a_duplicate_id_and_a_third_case():
    def edit(records):
        records.append(dict(records[0]))

    problems = domain_problems(_broken_copy(edit))
    assert any("used 2 times" in p for p in problems)
    assert any("'Spatial' has 3 cases" in p for p in problems)


def test_position_rule_catches_answers_piled_on_one_letter():
    def edit(records):
        for record in records:
            for stage in STAGES:
                for question in record[stage]["questions"]:
                    question["options"].remove(question["answer"])
                    question["options"].insert(0, question["answer"])

    assert position_problems(_broken_copy(edit)) == ["answer letter A holds 234/234 answers (more than 40%)"]


def test_option_rule_catches_an_answer_written_in_its_question():
    def edit(records):
        question = records[0]["generation"]["questions"][1]
        question["text"] = f"Is the cube {question['answer'].lower()}?"

    assert option_problems(_broken_copy(edit)) == ["spatial-01 Q2: the answer 'Red' is written in the question"]


def test_attribute_rule_catches_an_edit_without_attribute_change():
    def edit(records):
        interaction = records[0]["interaction"]
        interaction["instruction"] = "Lift the bowl and set it on top of the cube."
        q4 = interaction["questions"][0]
        q4["options"][q4["options"].index(q4["answer"])] = q4["answer"] = "Balanced up high"

    problems = attribute_edit_problems(_broken_copy(edit))
    assert len(problems) == 2 and all(p.startswith("spatial-01") for p in problems)


def test_counterfactual_rule_catches_an_unnamed_replacement():
    def edit(records):
        records[1]["counterfactual"]["entities"][0] = "chandelier"

    assert counterfactual_problems(_broken_copy(edit)) == [
        "spatial-02: the new entity 'chandelier' is not named in the counterfactual instruction"
    ]


def test_grounding_rule_catches_an_answer_the_instructions_never_describe():
    def edit(records):
        q2 = records[0]["generation"]["questions"][1]
        q2["options"][q2["options"].index("Green")] = "Green with red flecks"

    problems = grounding_problems(_broken_copy(edit))
    assert len(problems) == 1 and problems[0].startswith("spatial-01 Q2")


def test_grounding_rule_ignores_the_counterfactual_reasoning_questions():
    def edit(records):
        q8 = records[0]["counterfactual"]["questions"][1]
        q8["options"][q8["options"].index(q8["answer"])] = q8["answer"] = "No, it is out of sight"

    assert grounding_problems(_broken_copy(edit)) == []


def test_stemmer_matches_plurals_and_verb_forms():
    assert {_stem(w) for w in ("float", "floats", "floating", "floated")} == {"float"}
    assert _stem("bubbles") == _stem("bubble") and _stem("boxes") == _stem("box") and _stem("berries") == "berry"
    assert _stem("stopped") == _stem("stop") and _stem("dried") == _stem("dries") == "dry"
    assert [_stem(w) for w in ("red", "glass", "glasses", "speed", "plane")] == ["red", "glass", "glass", "speed", "plane"]
    assert _stem("moving", coarse=True) == _stem("moves", coarse=True) == _stem("move", coarse=True)
    assert _content_words("the fan's air") == {"fan", "air"}


def test_giveaway_rule_catches_an_instruction_that_states_the_outcome():
    def edit(records):
        counterfactual = next(r for r in records if r["id"] == "fluid-01")["counterfactual"]
        counterfactual["instruction"] += " Cork is lighter than water, so it floats on the surface."

    assert giveaway_problems(_broken_copy(edit)) == [
        "fluid-01 Q8: the counterfactual instruction gives away the answer "
        "'Floating on the surface, half above the waterline' (shares ['float', 'surfac'])",
        "fluid-01 Q9: the counterfactual instruction gives away the answer 'It is lighter than water' (shares ['lighter'])",
    ]


def test_giveaway_rule_ignores_words_that_wrong_options_share():
    def edit(records):
        counterfactual = next(r for r in records if r["id"] == "fluid-01")["counterfactual"]
        counterfactual["instruction"] += " The tank stays on the bench and the water is calm."  # 'tank', 'water'

    assert giveaway_problems(_broken_copy(edit)) == []
