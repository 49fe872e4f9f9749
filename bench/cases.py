"""UmniBench case files of any size, made from the bundled cases.

The cache key leaves out case ids on purpose (identical work is done once), so copies that only
had new ids would all be served from the first copy's results. Each copy therefore also gets a
distinct tag in every stage instruction, which makes every node of every copy distinct work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from umni_cases import bundled

STAGES = ("generation", "interaction", "counterfactual")


def bundled_umnibench() -> list[dict[str, Any]]:
    path = bundled("umnibench") / "cases.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def replicated_cases(n: int, tag: str = "Copy") -> list[dict[str, Any]]:
    """`n` UmniBench cases: the bundled ones in turn, each copy with a new id and tagged instructions
    (another `tag` makes cases that share no node with these)."""
    base = bundled_umnibench()
    cases = []
    for index in range(n):
        case = json.loads(json.dumps(base[index % len(base)]))
        copy = index // len(base)
        case["id"] = f"{case['id']}-x{copy:05d}"
        for stage in STAGES:
            case[stage]["instruction"] += f" ({tag} {copy}.)"
        cases.append(case)
    return cases


def write_cases(path: Path, n: int, tag: str = "Copy") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(case, ensure_ascii=False) for case in replicated_cases(n, tag))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def calls_per_case(case: dict[str, Any]) -> int:
    """Backend calls one case makes: one image per stage plus one answer per question."""
    return sum(1 + len(case[stage]["questions"]) for stage in STAGES)
