"""`build_repo`: each bug is seen by a visible and a hidden case; inputs differ; fast."""

from __future__ import annotations

import json

from posttrain.domains.base import task_rng
from posttrain.domains.coding.repo import Plan, build_repo


def test_every_bug_fails_a_visible_and_a_hidden_case() -> None:
    for seed in range(6):
        repo = build_repo(task_rng("t", seed, 8), Plan(modules=4, bugs=2, subtlety=3))
        for bug in repo.bugs:
            mine = [c for c in repo.cases if c["module"].endswith("." + bug["module"]) and c["f2p"]]
            assert any(c["visible"] for c in mine) and any(not c["visible"] for c in mine)


def test_hidden_inputs_are_never_visible_ones() -> None:
    repo = build_repo(task_rng("t", 1, 5), Plan(modules=3, hidden=5))
    shown = {json.dumps([c["call"], c["args"]]) for c in repo.cases if c["visible"]}
    assert all(
        json.dumps([c["call"], c["args"]]) not in shown for c in repo.cases if not c["visible"]
    )


def test_the_tests_folder_holds_only_visible_cases() -> None:
    repo = build_repo(task_rng("t", 2, 5), Plan(modules=2))
    text = "".join(v for p, v in repo.files.items() if p.startswith("tests/"))
    assert all(c["name"] in text for c in repo.cases if c["visible"])
    assert "hidden_" not in text


def test_a_plan_without_tests_writes_none() -> None:
    repo = build_repo(task_rng("t", 3, 5), Plan(modules=2, tests=False))
    assert not any(p.startswith("tests/") for p in repo.files)
