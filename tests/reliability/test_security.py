"""Security: case files cannot reach outside their folder, nothing read is executed, keys stay
secret, and reports escape every piece of model and case text."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from reliability_support import files_containing, letter_by_hash, openai_spec, read_results
from tiny_protocol import DrawAndJudge, ScriptedModel, run_protocol

from tests.support.openai_server import Fault, OpenAIStubServer
from umni.backends.bindings import Bindings
from umni.run.evaluation import RunRequest, evaluate
from umni.util.errors import InputError, InputErrors
from umni_graphs.aegis.cases import load_cases as load_aegis
from umni_graphs.genius.dataset import load_dimension as load_genius_dimension
from umni_graphs.girbench.dataset import load_visual_logic_cases

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("umni", "graphs", "adapters")

# ------------------------------------------------------------------------- image path confinement


def problems(exc: InputError) -> list[InputError]:
    return exc.errors if isinstance(exc, InputErrors) else [exc]


def outside_file(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.png"
    secret.parent.mkdir()
    secret.write_bytes(b"not for the judge")
    return secret


def escapes(tmp_path: Path, folder: Path) -> dict[str, str]:
    """Ways a record can name a file outside `folder`: climbing, absolute, and a symlink inside."""
    secret = outside_file(tmp_path)
    link = folder / "images" / "innocent.png"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(secret)
    return {"dotdot": "../../outside/secret.png", "absolute": str(secret), "symlink": "innocent.png"}


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_aegis_image_paths_stay_in_the_annotation_folder(tmp_path, how):
    folder = tmp_path / "aegis"
    folder.mkdir()
    record = json.loads((REPO / "cases/aegis/annotation.json").read_text())[0]
    record["input_image"] = [escapes(tmp_path, folder)[how]]
    path = folder / "annotation.json"
    path.write_text(json.dumps([record]))
    with pytest.raises(InputError) as caught:
        load_aegis(path)
    assert any(p.field and p.field.startswith("input_image") for p in problems(caught.value)), caught.value.describe()


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_genius_image_tags_stay_in_the_dataset_folder(tmp_path, how):
    root = tmp_path / "genius"
    dimension = root / "implicit_pattern"
    dimension.mkdir(parents=True)
    name = escapes(tmp_path, dimension)[how]
    if how == "dotdot":
        name = "../../../outside/secret.png"
    record = {"id": "001", "context": f"Here is my poster. <image:{name}>", "instruction": "Draw one more.", "rc_hint": "A poster."}
    (dimension / "test_data.json").write_text(json.dumps([record]))
    with pytest.raises(InputError) as caught:
        load_genius_dimension(root, "implicit_pattern")
    assert any(p.field == "context" for p in problems(caught.value)), caught.value.describe()


@pytest.mark.parametrize("field", ["question_image", "answer_image"])
@pytest.mark.parametrize("how", ["dotdot", "absolute"])
def test_girbench_sudoku_images_stay_in_the_data_folder(tmp_path, field, how):
    sudoku = tmp_path / "VisualLogic" / "sudoku"
    sudoku.mkdir(parents=True)
    secret = outside_file(tmp_path)
    value = "../../outside/secret.png" if how == "dotdot" else str(secret)
    (sudoku / "1.json").write_text(json.dumps({"grid_size": 4, field: value}))
    with pytest.raises(InputError) as caught:
        load_visual_logic_cases(tmp_path)
    assert [p.field for p in problems(caught.value)] == [field]


# ------------------------------------------------------------------------------ nothing executed

FORBIDDEN = {
    "eval() / exec() / compile()": re.compile(r"(?<![\w.])(eval|exec|compile)\s*\("),
    "pickle-like deserialisation": re.compile(r"\b(pickle|cPickle|dill|marshal|shelve|joblib)\b"),
    "yaml.load without SafeLoader": re.compile(r"yaml\.(unsafe_load|full_load|load)\s*\((?![^)]*SafeLoader)"),
    "torch.load without weights_only=True": re.compile(r"torch\.load\s*\((?![^)]*weights_only\s*=\s*True)"),
    "numpy load with pickles": re.compile(r"allow_pickle\s*=\s*True"),
    "remote model code": re.compile(r"trust_remote_code\s*=\s*True"),
    "shell commands": re.compile(r"\bos\.(system|popen)\s*\(|shell\s*=\s*True|\bsubprocess\b"),
    "dynamic imports": re.compile(r"\b__import__\s*\(|importlib\.import_module\s*\("),
    "templates marked safe": re.compile(r"\|\s*safe\b|autoescape\s*=\s*False|\bMarkup\s*\("),
}


#: (pattern, file) pairs that are safe by construction, each with the reason
EXEMPT = {
    ("dynamic imports", "umni/_moved.py"): "imports only the targets of its own constant table of moved modules",
    ("shell commands", "umni/run/serving.py"): (
        "runs the serve.command the operator wrote in the sweep file given on the command line, as their own "
        "sbatch script would; nothing read from cases, answers, stores or run folders reaches it"
    ),
}


def source_files() -> list[Path]:
    files = [p for d in SOURCE_DIRS for p in (REPO / d).rglob("*.py")]
    files += list((REPO / "umni").rglob("*.j2"))
    assert len(files) > 20
    return files


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_nothing_read_from_cases_answers_or_run_dirs_is_executed(what):
    pattern = FORBIDDEN[what]
    hits = []
    for path in source_files():
        if (what, str(path.relative_to(REPO))) in EXEMPT:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0] if path.suffix == ".py" else line
            if pattern.search(code):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert hits == [], f"{what}:\n" + "\n".join(hits)


def test_the_source_scan_would_catch_each_pattern():
    """The scan above must be able to fail: each pattern matches its unsafe form, not its safe one."""
    unsafe = ["x = eval(text)", "import pickle", "yaml.load(f)", "torch.load(path)", "np.load(p, allow_pickle=True)",
              "from_pretrained(m, trust_remote_code=True)", "os.system(cmd)", "__import__(name)", "{{ text|safe }}"]  # fmt: skip
    safe = ["model.eval()", "ast.literal_eval(text)", "yaml.load(f, Loader=yaml.SafeLoader)",
            "torch.load(path, weights_only=True)", "re.compile(r'x')"]  # fmt: skip
    for line in unsafe:
        assert any(p.search(line) for p in FORBIDDEN.values()), line
    for line in safe:
        assert not any(p.search(line) for p in FORBIDDEN.values()), line


# ----------------------------------------------------------------------------------------- secrets

SECRET = "sk-umni-test-SECRET-" + "7f3a9c" * 6


def test_the_api_key_is_used_but_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # Servers echo bad keys in error bodies; that echo must not reach a record or a log either.
    echo = Fault.bad_request(f"Incorrect API key provided: {SECRET}", path="/chat/completions")
    with OpenAIStubServer(faults=[Fault.unavailable(), None, echo], responder=letter_by_hash, api_key=SECRET) as server:
        request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", limit=2,
                             model=openai_spec(server), progress=False)  # fmt: skip
        summary = evaluate(request).summary
        assert {r.authorization for r in server.requests} == {f"Bearer {SECRET}"}  # the key was sent
    assert summary.counts.computed > 0 and summary.failures["backend"] == 1
    failures = [n["failure"] for r in read_results(tmp_path / "run") for n in r["nodes"].values() if "failure" in n]
    assert len(failures) == 1 and "Incorrect API key provided: ***" in failures[0]["message"]  # redacted
    written = [tmp_path / "run", tmp_path / "cache"]
    assert sum(1 for root in written for p in root.rglob("*") if p.is_file()) > 5
    assert files_containing(written, SECRET.encode()) == []
    assert files_containing(written, b"7f3a9c7f3a9c") == []  # not even a fragment


# ------------------------------------------------------------------------------------ HTML escaping

SCRIPT = "<script>alert(1)</script>"


def test_report_escapes_case_text(tmp_path):
    record = json.loads((REPO / "cases/umnibench/cases.jsonl").read_text().splitlines()[0])
    record["concept"] = f"cubes {SCRIPT}"
    record["generation"]["instruction"] += f" {SCRIPT}"
    question = record["generation"]["questions"][0]
    question["text"] = f"Which objects? {SCRIPT}"
    question["options"][0] += ' <img src=x onerror="alert(2)">'
    question["answer"] = question["options"][0]
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(record) + "\n", encoding="utf-8")
    evaluate(RunRequest(protocol="umnibench", cases=cases, out=tmp_path / "run", cache=tmp_path / "cache",
                        model="sim/umm", progress=False))  # fmt: skip
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html
    assert "<script" not in html.lower() and "<img src=x" not in html


def test_report_escapes_model_text(tmp_path):
    judge_says = 'Score: 2\n<img src=x onerror="alert(3)"><a href="javascript:alert(4)">more</a>'
    model = ScriptedModel(judge=[judge_says])
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c0", "prompt": f"a red square {SCRIPT}"}) + "\n", encoding="utf-8")
    run_protocol(DrawAndJudge(), cases, tmp_path / "run", Bindings({"generate": model, "judge": model}))
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=" in html and "&lt;a href=" in html
    assert "<script" not in html.lower() and "onerror=\"alert" not in html and "<a href=\"javascript" not in html
    assert "&lt;script&gt;" in html
    assert os.path.exists(tmp_path / "run" / "images")  # the picture itself is linked, not inlined
