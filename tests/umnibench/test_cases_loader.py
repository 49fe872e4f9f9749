"""Bad UmniBench case files stop before any model call, naming file, line and field."""

import json

import pytest

from umni.util.errors import InputError
from umni_graphs.umnibench import PROTOCOL


def good_case(case_id="c1"):
    def q(qid, answer="red"):
        return {"id": qid, "text": f"question {qid}?", "options": ["red", "blue", "green", "white"], "answer": answer}

    return {
        "id": case_id,
        "domain": "Animal",
        "concept": "predation",
        "generation": {"instruction": "a lion left of a zebra", "entities": ["lion", "zebra"], "questions": [q("Q1"), q("Q2"), q("Q3")]},
        "interaction": {"instruction": "the lion chases the zebra; its mane turns red", "entities": ["lion", "zebra"], "questions": [q("Q4"), q("Q5"), q("Q6")]},
        "counterfactual": {"instruction": "replace the lion with an elephant", "entities": ["elephant", "zebra"], "questions": [q("Q7"), q("Q8"), q("Q9")]},
    }


def write(tmp_path, lines):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(path):
    return PROTOCOL.load(path, PROTOCOL.parse_options({}))


def test_valid_file_loads(tmp_path):
    path = write(tmp_path, [json.dumps(good_case("a")), json.dumps(good_case("b"))])
    assert [c.id for c in load(path).cases] == ["a", "b"]


def test_invalid_json_names_line(tmp_path):
    path = write(tmp_path, [json.dumps(good_case()), "{not json"])
    with pytest.raises(InputError) as info:
        load(path)
    assert f"{path}:2" in info.value.describe() and "invalid JSON" in info.value.describe()


def test_answer_not_an_option_names_field(tmp_path):
    case = good_case()
    case["interaction"]["questions"][1]["answer"] = "purple"
    path = write(tmp_path, [json.dumps(case)])
    with pytest.raises(InputError) as info:
        load(path)
    text = info.value.describe()
    assert f"{path}:1" in text and "record c1" in text and "interaction.questions.1" in text and "purple" in text


def test_missing_and_mistyped_fields(tmp_path):
    case = good_case()
    del case["concept"]
    case["generation"]["questions"][0]["options"] = "red"
    path = write(tmp_path, [json.dumps(case)])
    with pytest.raises(InputError) as info:
        load(path)
    text = info.value.describe()
    assert "field 'concept'" in text and "field 'generation.questions.0.options'" in text


def test_duplicate_ids(tmp_path):
    path = write(tmp_path, [json.dumps(good_case("x")), json.dumps(good_case("x"))])
    with pytest.raises(InputError, match="duplicate id"):
        load(path)


def test_counterfactual_must_change_exactly_one_entity(tmp_path):
    case = good_case()
    case["counterfactual"]["entities"] = ["elephant", "giraffe"]
    with pytest.raises(InputError, match="exactly one entity"):
        load(write(tmp_path, [json.dumps(case)]))


def test_exported_json_schema_matches_the_model():
    from umni_cases import bundled
    from umni_graphs.umnibench.cases import UmniCase

    assert json.loads((bundled("umnibench") / "schema.json").read_text()) == UmniCase.model_json_schema()
