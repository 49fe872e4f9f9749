"""Tests of the sim/umm reference backend (umni_adapters.sim)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from umni.backends.roles import Editor, Generator, Understander
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec
from umni_adapters.sim import SimBackend, read_image
from umni_adapters.sim_scene import SCENE_KEY

LION = "A large lion with a golden mane stands to the left of a striped zebra on a grassy savanna."


def sim(query: str = "") -> SimBackend:
    return SimBackend(Spec.parse("sim/umm" + (f"?{query}" if query else "")))


def run(fn, *args, **kwargs):
    return anyio.run(lambda: fn(*args, **kwargs))


def png_bytes(image: Image.Image) -> bytes:
    """Save the way the engine does: a PngInfo built from the image's str info values."""
    info = PngInfo()
    for key, value in image.info.items():
        if isinstance(value, str):
            info.add_text(key, value)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def reopen(image: Image.Image) -> Image.Image:
    return Image.open(io.BytesIO(png_bytes(image)))


def generate(backend: SimBackend, prompt: str, seed: int = 0) -> Image.Image:
    return run(backend.generate, [prompt], seed=seed).image


def edit(backend: SimBackend, image: Image.Image, instruction: str) -> Image.Image:
    return run(backend.edit, [image], instruction).image


def choose(backend: SimBackend, image: Image.Image | None, question: str, options: list[str]):
    parts = [image, question] if image is not None else [question]
    return run(backend.choose, parts, options)


# -- spec and identity ---------------------------------------------------------------------------


def test_only_umm_is_a_sim_model():
    with pytest.raises(ConfigError, match="sim/umm is the only sim model"):
        SimBackend(Spec.parse("sim/other"))


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("latency=-1", "latency"),
        ("latency=soon", "latency"),
        ("error_rate=1.5", "error_rate"),
        ("skill=-0.1", "skill"),
        ("skill=nan", "skill"),
        ("seed=1.5", "seed"),
        ("concurrency=0", "concurrency"),
        ("temperature=0.7", "temperature"),
    ],
)
def test_bad_parameters_name_the_field(query, field):
    with pytest.raises(ConfigError) as caught:
        sim(query)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_operational_parameters_keep_the_identity():
    base = sim().identity_hash()
    assert sim("latency=0.5&error_rate=0.2&concurrency=3").identity_hash() == base
    assert sim("skill=1&seed=0").identity_hash() == base  # defaults written out are the same backend
    assert sim("skill=0.5").identity_hash() != base
    assert sim("seed=3").identity_hash() != base
    assert {"latency", "error_rate"} <= SimBackend.operational_params


def test_fills_the_model_roles():
    backend = sim()
    assert backend.fills() == {"understand", "generate", "edit", "judge"}
    assert isinstance(backend, Understander) and isinstance(backend, Generator) and isinstance(backend, Editor)


# -- generate and edit ---------------------------------------------------------------------------


def test_generated_scene_survives_a_png_round_trip():
    backend = sim()
    image = generate(backend, LION)
    assert image.size == (256, 256)
    assert SCENE_KEY in image.info
    reopened = reopen(image)
    scene, _ = read_image(reopened)
    assert scene.source == "scene"
    assert [t.name for t in scene.things] == ["lion", "zebra", "savanna"]
    assert scene.find("lion").parts == {"mane": {"colour": ["golden"]}}
    assert ("lion", "left of", "zebra") in scene.relations
    reply = choose(backend, reopened, "What colour is the lion's mane?", ["red", "golden", "blue"])
    assert (reply.text, reply.mode) == ("golden", "scene")


def test_same_inputs_give_the_same_png_bytes():
    first = png_bytes(generate(sim(), LION, seed=7))
    assert png_bytes(generate(sim(), LION, seed=7)) == first
    # the seed moves the drawing a little (measured: seeds 7 and 8 differ), the scene stays the same
    other = generate(sim(), LION, seed=8)
    assert png_bytes(other) != first
    assert other.info[SCENE_KEY] == Image.open(io.BytesIO(first)).info[SCENE_KEY]


def test_pixels_follow_the_stated_colours_and_relations():
    image = generate(sim(), "A red ball to the left of a blue box.")
    scene, _ = read_image(image)
    assert scene.relations == [("ball", "left of", "box")]
    pixels = image.load()
    reds = [x for x in range(256) for y in range(0, 256, 4) if pixels[x, y] == (214, 40, 40)]
    blues = [x for x in range(256) for y in range(0, 256, 4) if pixels[x, y] == (40, 90, 210)]
    assert reds and blues and max(reds) < min(blues)


def test_quoted_text_is_written_and_recorded():
    scene, _ = read_image(generate(sim(), 'A shop sign that reads "OPEN" above a door.'))
    assert scene.texts == ["OPEN"]
    assert "open" not in {w for t in scene.things for ws in t.attrs.values() for w in ws}


def test_a_new_colour_overrides_the_old_one():
    backend = sim()
    before = generate(backend, LION)
    after = reopen(edit(backend, before, "Make the lion's mane red."))
    question, options = "What colour is the lion's mane?", ["golden", "red", "brown"]
    assert choose(backend, before, question, options).text == "golden"
    assert choose(backend, after, question, options).text == "red"
    scene, _ = read_image(after)
    assert scene.find("lion").parts["mane"] == {"colour": ["red"]}
    assert all("golden" not in fact.words for fact in scene.facts)  # forgotten, not merely outweighed


def test_attribute_of_the_thing_itself_and_other_families():
    backend = sim()
    image = edit(backend, generate(backend, "A small white cup sits on a wooden table."), "Now the cup is huge and black.")
    cup = read_image(image)[0].find("cup")
    assert cup.attrs == {"colour": ["black"], "size": ["huge"]}
    assert choose(backend, image, "How big is the cup?", ["small", "huge"]).text == "huge"


@pytest.mark.parametrize(
    "instruction",
    [
        "Replace the lion with a gray elephant.",
        "Swap the lion for a gray elephant.",
        "The lion becomes a gray elephant.",
        "Turn the lion into a gray elephant.",
    ],
)
def test_replacing_one_entity(instruction):
    backend = sim()
    image = edit(backend, generate(backend, LION), instruction)
    scene, _ = read_image(image)
    assert [t.name for t in scene.things] == ["elephant", "zebra", "savanna"]
    assert scene.find("elephant").attrs == {"colour": ["gray"]}
    assert ("elephant", "left of", "zebra") in scene.relations
    reply = choose(backend, image, "Which animal stands left of the zebra?", ["a lion", "an elephant", "a rhino"])
    assert (reply.text, reply.mode) == ("an elephant", "scene")


def test_added_outcomes_answer_later_questions():
    backend = sim()
    stage1 = generate(backend, LION)
    stage2 = edit(backend, stage1, "The lion chases the zebra, and the zebra runs away in fear.")
    stage3 = edit(backend, stage2, "Replace the lion with a calm elephant. The zebra keeps grazing peacefully.")
    question = "What is the zebra doing now?"
    options = ["running away in fear", "grazing peacefully", "attacking"]
    assert choose(backend, stage2, question, options).text == "running away in fear"
    assert choose(backend, stage3, question, options).text == "grazing peacefully"


def test_removal_negation_and_overrides_within_one_prompt():
    scene, _ = read_image(generate(sim(), "A red ball. Later the ball is painted blue."))
    assert scene.find("ball").attrs == {"colour": ["blue"]}
    assert all("red" not in fact.words for fact in scene.facts)
    backend = sim()
    image = generate(backend, "A cat with a hat sits next to a bowl.")
    scene, _ = read_image(edit(backend, image, "Remove the hat and make the bowl green instead of white."))
    assert scene.find("cat").parts == {} and scene.find("bowl").attrs == {"colour": ["green"]}
    assert [t.name for t in scene.things] == ["cat", "bowl"]


@pytest.mark.parametrize(
    ("relation", "axis", "sign"),
    [("above", 1, -1), ("below", 1, 1), ("on", 1, -1), ("under", 1, 1), ("to the right of", 0, 1), ("left of", 0, -1)],
)
def test_relations_decide_placement(relation, axis, sign):
    from umni_adapters.sim_render import layout

    scene, _ = read_image(generate(sim(), f"A red ball {relation} a blue box."))
    places = layout(scene, seed=0)
    assert sign * (places["ball"][axis] - places["box"][axis]) > 30


def test_generate_folds_context_images_in():
    backend = sim()
    cat = generate(backend, "A fluffy orange cat.")
    image = run(backend.generate, [cat, "Draw a blue ball next to the cat."]).image
    scene, _ = read_image(image)
    assert {t.name for t in scene.things} == {"cat", "ball"}
    assert scene.find("cat").attrs["colour"] == ["orange"]
    assert ("ball", "next to", "cat") in scene.relations


# -- foreign images (no embedded scene) ----------------------------------------------------------


def foreign_image() -> Image.Image:
    image = Image.new("RGB", (320, 200), (200, 30, 35))
    image.paste((30, 60, 200), (0, 0, 80, 200))  # a quarter blue
    return image


def test_foreign_images_are_read_from_pixels():
    backend = sim()
    reply = choose(backend, foreign_image(), "What is the main colour of the picture?", ["blue", "red", "green"])
    assert (reply.text, reply.mode) == ("red", "pixels")
    reply = choose(backend, foreign_image(), "Which colour is not in the picture?", ["green", "yellow"])
    assert reply.mode == "guess"  # neither option is supported by what sim sees


def test_editing_a_foreign_image_starts_from_its_pixels():
    backend = sim()
    image = edit(backend, foreign_image(), "Add a yellow star above the centre.")
    scene, _ = read_image(image)
    assert scene.source == "scene" and scene.background == "red"
    assert scene.find("star").attrs == {"colour": ["yellow"]}
    assert image.getpixel((2, 2)) == (214, 40, 40)


def test_a_sim_image_that_lost_its_scene_falls_back_to_pixels():
    backend = sim()
    image = generate(backend, "A huge green leaf.")
    stripped = Image.open(io.BytesIO(_plain_png(image)))
    reply = choose(backend, stripped, "What colour is the leaf?", ["green", "purple"])
    assert (reply.text, reply.mode) == ("green", "pixels")


def _plain_png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# -- choose: skill and guessing ------------------------------------------------------------------


def test_skill_zero_always_guesses_and_is_deterministic():
    image = generate(sim(), LION)
    guesses = [choose(sim("skill=0"), image, f"Question {i}?", ["a", "b", "c", "d"]) for i in range(40)]
    assert {g.mode for g in guesses} == {"guess"}
    again = [choose(sim("skill=0"), image, f"Question {i}?", ["a", "b", "c", "d"]).index for i in range(40)]
    assert [g.index for g in guesses] == again
    assert len({g.index for g in guesses}) == 4  # the hash spreads over all options


def test_partial_skill_reads_about_that_share():
    image = generate(sim(), LION)
    backend = sim("skill=0.5")
    modes = [choose(backend, image, f"Is the mane golden ({i})?", ["golden", "silver"]).mode for i in range(200)]
    assert 70 <= modes.count("scene") <= 130


def test_without_an_image_it_guesses():
    reply = choose(sim(), None, "What colour is the lion's mane?", ["golden", "red"])
    assert reply.mode == "guess" and reply.text in ("golden", "red")


# -- respond: judges and free text ---------------------------------------------------------------

JUDGE = "Judge the image against the reference.\nReference: {reference}\n\nAnswer in this format:\n{template}"


def judge(backend: SimBackend, image: Image.Image, reference: str, template: str) -> str:
    return run(backend.respond, [image, JUDGE.format(reference=reference, template=template)]).text


def test_judge_templates_are_filled_from_agreement():
    backend = sim()
    image = generate(backend, "A red ball next to a blue box.")  # sim sees: red, ball, blue, box
    template = "Rule Compliance: <0-2>\nScore: <0-1>"
    assert judge(backend, image, "a red ball and a blue box", template) == "Rule Compliance: 2\nScore: 1"
    # 2 of the 4 things sim sees are mentioned: 0.5 -> 1 of 2, and 0.5 rounds up to 1 of 1
    assert judge(backend, image, "a red ball", template) == "Rule Compliance: 1\nScore: 1"
    assert judge(backend, image, "a green tree", template) == "Rule Compliance: 0\nScore: 0"
    markdown = "**Consistency**: <0-2>\n**Realism**: <0-2>\n**Aesthetic Quality**: <0-2>"
    assert judge(backend, image, "a red ball and a blue box", markdown) == (
        "Consistency: 2\nRealism: 2\nAesthetic Quality: 2"
    )


def test_judge_without_images_still_answers_in_format():
    text = run(sim().respond, ["Rate the answer.\nScore: <1-5>"]).text
    label, value = text.split(": ")
    assert label == "Score" and 1 <= int(value) <= 5


CHECKLIST = """Evaluate the output image with the checklist.
1. [Image] Is there a red ball?
2. [Image] Is there a blue box?
3. [Image] Does the image show a purple giraffe?
4. [Consistency] Is the ball next to the box?
Return JSON: {"answer_list": ["Y" or "N" per item], "reason_list": [one reason per item]}"""


def test_answer_list_has_one_entry_per_item():
    backend = sim()
    image = generate(backend, "A red ball next to a blue box.")
    reply = json.loads(run(backend.respond, [image, CHECKLIST]).text)
    assert reply["answer_list"] == ["Y", "Y", "N", "Y"]
    assert len(reply["reason_list"]) == 4
    guessed = json.loads(run(sim("skill=0").respond, [image, CHECKLIST]).text)
    assert len(guessed["answer_list"]) == 4 and set(guessed["answer_list"]) <= {"Y", "N"}


def test_the_checklist_is_the_last_numbered_run():
    prompt = (
        "How to judge:\n1. Look at the image.\n2. Compare with the items.\n\nItems:\n"
        "1. Is there a red ball?\n2. Is there a green tree?\n3. Is there a blue box?\n"
        'Answer with JSON {"answer_list": [...], "reason_list": [...]}.'
    )
    image = generate(sim(), "A red ball next to a blue box.")
    reply = json.loads(run(sim().respond, [image, prompt]).text)
    assert reply["answer_list"] == ["Y", "N", "Y"]


def test_judge_bias_moves_every_mark_along_its_scale_clipped():
    image = generate(sim(), "A red ball next to a blue box.")
    template = "Rule Compliance: <0-2>\nScore: <0-1>"
    # unbiased: 2/1, 1/1, 0/0 (test_judge_templates_are_filled_from_agreement)
    assert judge(sim("judge_bias=1"), image, "a red ball", template) == "Rule Compliance: 2\nScore: 1"
    assert judge(sim("judge_bias=1"), image, "a green tree", template) == "Rule Compliance: 1\nScore: 1"
    assert judge(sim("judge_bias=-1"), image, "a red ball and a blue box", template) == "Rule Compliance: 1\nScore: 0"
    assert judge(sim("judge_bias=-5"), image, "a red ball and a blue box", template) == "Rule Compliance: 0\nScore: 0"
    guessed = run(sim("judge_bias=3").respond, ["Rate the answer.\nScore: <1-5>"]).text
    unbiased = run(sim().respond, ["Rate the answer.\nScore: <1-5>"]).text
    assert guessed == f"Score: {min(5, int(unbiased.split(': ')[1]) + 3)}"


def test_judge_bias_moves_checklist_answers_on_the_two_mark_scale():
    image = generate(sim(), "A red ball next to a blue box.")
    assert json.loads(run(sim("judge_bias=1").respond, [image, CHECKLIST]).text)["answer_list"] == ["Y"] * 4
    assert json.loads(run(sim("judge_bias=-1").respond, [image, CHECKLIST]).text)["answer_list"] == ["N"] * 4


def test_judge_bias_leaves_the_copy_question_and_answers_alone():
    image = generate(sim(), "A red ball next to a blue box.")
    copy = "Is the second image the first again?\nCopy: <0-1>"
    assert run(sim("judge_bias=1").respond, [image, image, copy]).text == "Copy: 0"
    question = [image, "What does the image show?"]
    assert run(sim("judge_bias=2").respond, question).text == run(sim().respond, question).text


def test_judge_bias_is_part_of_the_identity_only_when_set():
    base = sim().identity_hash()
    assert sim("judge_bias=0").identity_hash() == base
    assert sim("judge_bias=1").identity_hash() not in {base, sim("judge_bias=-1").identity_hash()}
    assert sim("judge_bias=1").identity()["params"]["judge_bias"] == "1"


def test_free_text_describes_image_and_prompt():
    backend = sim()
    image = generate(backend, LION)
    reply = run(backend.respond, [image, "Plan the next picture. A small bird sits on the zebra's back."])
    assert reply.text.startswith("The image shows a large lion with a golden mane")
    assert "A small bird sits on the zebra's back." in reply.text
    assert "Plan the next picture" not in reply.text
    assert reply.usage.images_in == 1 and reply.usage.input_tokens == 12
    assert reply.usage.output_tokens == len(reply.text.split())
    short = run(backend.respond, [image, "Describe it."], max_tokens=5).text
    assert len(short.split()) == 5


def test_usage_is_reported():
    backend = sim()
    made = run(backend.generate, ["A red ball."])
    assert (made.usage.calls, made.usage.input_tokens, made.usage.images_in, made.usage.images_out) == (1, 3, 0, 1)
    changed = run(backend.edit, [made.image], "Make the ball blue.")
    assert (changed.usage.input_tokens, changed.usage.images_in, changed.usage.images_out) == (4, 1, 1)
    picked = run(backend.choose, [changed.image, "What colour is the ball?"], ["red", "blue"])
    assert (picked.text, picked.usage.input_tokens, picked.usage.images_in) == ("blue", 7, 1)


_WORDS = st.sampled_from(
    "a the lion's mane red replace with swap for becomes and , . instead of left right on above make it "
    "glass ball shatters fluffy cat sat remove \" 'OPEN' 1. big small blue zebra".split(" ")
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(_WORDS, max_size=25).map(" ".join) | st.text(max_size=80), second=st.text(max_size=80))
def test_any_text_gives_a_readable_image_and_a_valid_choice(first, second):
    backend = sim()
    image = edit(backend, generate(backend, first), second)
    scene, _ = read_image(reopen(image))
    assert scene.source == "scene"
    reply = choose(backend, image, first, ["red", "blue", "a lion"])
    assert reply.index in (0, 1, 2) and reply.mode in ("scene", "guess")


# -- operational parameters ----------------------------------------------------------------------


def attempt(backend: SimBackend, prompt: str) -> bool:
    try:
        run(backend.generate, [prompt])
    except BackendError as error:
        assert error.retryable
        return False
    return True


def test_error_rate_fails_a_share_of_calls_and_retries_can_succeed():
    backend = sim("error_rate=0.3")
    outcomes = [attempt(backend, f"A ball number {i}.") for i in range(300)]
    assert 60 <= outcomes.count(False) <= 120  # expected 90
    failed = [i for i, ok in enumerate(outcomes) if not ok]
    for i in failed[:10]:  # retrying the same call eventually works (30 % per attempt)
        assert any(attempt(backend, f"A ball number {i}.") for _ in range(12))
    # the failures are a function of (seed, call, attempt): a fresh backend fails the same calls
    fresh = sim("error_rate=0.3")
    assert [attempt(fresh, f"A ball number {i}.") for i in range(300)] == outcomes


def test_error_rate_extremes():
    assert not any(attempt(sim("error_rate=1"), f"A ball {i}.") for i in range(5))
    assert all(attempt(sim("error_rate=0"), f"A ball {i}.") for i in range(5))


def test_latency_waits_per_call_and_overlaps_across_calls(monkeypatch):
    """Each call waits the latency once, and waits of concurrent calls overlap (no lock serialises
    them): counted on a recording sleep, not timed, so the test cannot flake on a busy machine."""
    import umni_adapters.sim as sim_module

    waits: list[float] = []
    state = {"sleeping": 0, "peak": 0}

    async def recording_sleep(seconds: float) -> None:
        waits.append(seconds)
        state["sleeping"] += 1
        state["peak"] = max(state["peak"], state["sleeping"])
        for _ in range(3):  # let every other started call reach its own wait before this one ends
            await anyio.lowlevel.checkpoint()
        state["sleeping"] -= 1

    monkeypatch.setattr(sim_module.anyio, "sleep", recording_sleep)
    backend = sim("latency=0.1")
    run(backend.generate, ["A cube."])
    assert waits == [0.1] and state["peak"] == 1

    async def many() -> None:
        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(backend.generate, [f"A cube {i}."])

    anyio.run(many)
    assert waits == [0.1] * 9 and state["peak"] == 8


# -- the UmniBench flow by hand ------------------------------------------------------------------


def umnibench_cases():
    import umni_cases
    from umni_graphs.umnibench.cases import UmniCase

    path = Path(umni_cases.__file__).parent / "umnibench" / "cases.jsonl"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [UmniCase.model_validate_json(line) for line in lines]


def umnibench_accuracy(backend: SimBackend, cases, *, image_of_case=None) -> float:
    """Generate, edit, edit; answer each stage's questions on that stage's image (optionally another case's)."""
    from umni_graphs.umnibench.cases import STAGES

    async def stage_images(case) -> list[Image.Image]:
        images = [(await backend.generate([case.generation.instruction])).image]
        for stage in STAGES[1:]:
            images.append((await backend.edit([images[-1]], case.stage(stage).instruction)).image)
        return images

    async def main() -> float:
        images = {case.id: await stage_images(case) for case in cases}
        right = total = 0
        for number, case in enumerate(cases):
            shown = images[(image_of_case or (lambda n, case=case: case.id))(number)]
            for stage, image in zip(STAGES, shown):
                for question in case.stage(stage).questions:
                    reply = await backend.choose([image, question.text], question.options)
                    right += reply.index == question.answer_index
                    total += 1
        return right / total

    return anyio.run(main)


def test_umnibench_flow_reads_images_above_chance():
    cases = umnibench_cases()
    assert len(cases) >= 20
    chance = sum(1 / len(q.options) for c in cases for s in ("generation", "interaction", "counterfactual")
                 for q in c.stage(s).questions) / (9 * len(cases))
    # measured on the bundled cases: about 0.82 at skill=1 (stage 3 asks for reasoning sim cannot do), 0.24 at skill=0 (chance 0.25), and about 0.3
    # when each case's questions are asked about the next case's images
    reading = umnibench_accuracy(sim(), cases)
    guessing = umnibench_accuracy(sim("skill=0"), cases)
    wrong_images = umnibench_accuracy(sim(), cases, image_of_case=lambda n: cases[(n + 1) % len(cases)].id)
    assert reading >= chance + 0.45
    assert abs(guessing - chance) <= 0.1
    assert wrong_images <= chance + 0.15  # the answers come from the image, not from the question


def _png(image: Image.Image) -> bytes:
    from umni.store.images import encode_png

    return encode_png(image)


def test_a_kept_drawing_gives_the_bytes_a_fresh_drawing_gives(monkeypatch):
    """Issue 27: drawings are kept by scene, without changing a byte of any image sim returns."""
    from umni_adapters import sim_render

    first = run(sim().generate, [LION]).image
    monkeypatch.setattr(sim_render, "_DRAWINGS", sim_render.OrderedDict())  # nothing kept: drawn afresh
    fresh = run(sim().generate, [LION]).image
    again = run(sim().generate, [LION]).image  # from the drawing kept by the call before
    assert _png(first) == _png(fresh) == _png(again)
    again.paste((0, 0, 0), (0, 0, 256, 256))  # a caller changing its copy leaves the kept drawing alone
    assert _png(run(sim().generate, [LION]).image) == _png(fresh)


def test_scenes_that_draw_alike_share_a_drawing_but_keep_their_own_record():
    """Two prompts that differ only in a sentence sim does not draw share pixels; each image still
    carries its own scene, so what sim later reads from it differs."""
    from umni_adapters.sim_render import drawing_key

    a = run(sim().generate, [LION]).image
    b = run(sim().generate, [LION + " (Copy 2.)"]).image
    scene_a, _ = read_image(a)
    scene_b, _ = read_image(b)
    assert a.tobytes() == b.tobytes()
    assert a.info[SCENE_KEY] != b.info[SCENE_KEY]
    assert drawing_key(scene_a, seed=0) == drawing_key(scene_b, seed=0)
    assert drawing_key(scene_a, seed=0) != drawing_key(scene_a, seed=1)


def test_a_biased_judge_says_its_bias_in_its_provenance():
    # a calibration's reader sees which judge was the biased one from the run's provenance alone
    assert "judge_bias=1" in (sim("judge_bias=1").provenance("judge").model or "")
    assert "judge_bias" not in (sim("").provenance("judge").model or "")
