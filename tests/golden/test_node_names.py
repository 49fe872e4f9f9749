"""The names of the functions protocol nodes run enter their cache keys (a compute node's ``fn``, a
judge's ``parser``: module and qualified name). They are pinned here, so moving such a function
without keeping its name (`umni_graphs.keyed.keyed_as`) fails a test instead of silently turning
every cached result of its nodes into a miss."""

from __future__ import annotations

import pytest

from umni.protocols import get_protocol

#: protocol -> option variants whose graphs, together, use every node function of the protocol
VARIANTS: dict[str, list[dict[str, str]]] = {
    "umnibench": [{}],
    "genius": [{}, {"plan": "true", "reflection_rounds": "1", "hints": "multimodal", "vqa_probe": "true"}],
    "aegis": [{}, {"rewrite": "self"}, {"rewrite": "cross"}],
    "wise": [{}, {"scoring": "legacy"}],
    "girbench": [{}, {"features": "embed"}],
}

PINNED: dict[str, set[str]] = {
    "umnibench": set(),
    "genius": {
        "umni_graphs.genius.graph.PixelCopyCheck",
        "umni_graphs.genius.graph.parse_aesthetic_quality",
        "umni_graphs.genius.graph.parse_copy",
        "umni_graphs.genius.graph.parse_rule_compliance",
        "umni_graphs.genius.graph.parse_visual_consistency",
    },
    "aegis": {
        "umni_graphs.aegis.protocol.Aegis._marker_prompt_node.<locals>.draw_prompt",
        "umni_graphs.aegis.protocol.Aegis._marker_prompt_node.<locals>.draw_rewritten",
        "umni_graphs.aegis.protocol._checklist_parser.<locals>.parse_checklist",
        "umni_graphs.aegis.protocol._clean_rewrite",
        "umni_graphs.aegis.protocol._numbered_answer.<locals>.numbered_answer",
    },
    "wise": {"umni_graphs.wise.protocol.parse_legacy_marks", "umni_graphs.wise.protocol.parse_verified_score"},
    "girbench": {
        "umni_graphs.girbench.scoring.puzzle_features",
        "umni_graphs.girbench.scoring.score_dinov3_similarity",
        "umni_graphs.girbench.scoring.score_numerical",
        "umni_graphs.girbench.scoring.score_perception",
        "umni_graphs.girbench.scoring.score_similarity",
        "umni_graphs.girbench.scoring.score_spatial",
        "umni_graphs.girbench.scoring.score_sudoku",
        "umni_graphs.girbench.scoring.score_text",
    },
}

ROLES = {"generate", "edit", "understand", "judge", "critic", "ocr", "detect", "embed"}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_node_functions_keep_the_names_their_keys_were_made_under(name: str) -> None:
    protocol = get_protocol(name)
    found: set[str] = set()
    for pairs in VARIANTS[name]:
        options = protocol.adapt(protocol.parse_options(pairs), ROLES)
        for case in protocol.load(protocol.bundled_cases(), options).cases:
            for node in protocol.build(case, options).nodes.values():
                found |= {node.params[key] for key in ("fn", "parser") if key in node.params}
    assert found == PINNED[name]
