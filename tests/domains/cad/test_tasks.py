"""tasks.py's modify domain: handing back the prompt's original model must fail."""

from __future__ import annotations

import random

import pytest

from posttrain.domains.cad.csg import build
from posttrain.domains.cad.judge import judge_part
from posttrain.domains.cad.openscad import openscad_available
from posttrain.domains.cad.parts import draw_params, make_part
from posttrain.domains.cad.tasks import _CHANGES, OpenScadModifyDomain, judge_scad, part_meta
from posttrain.verify.geometry import LoadedMesh, bounds_of

EVERY_CHANGE = [(kind, name, delta) for kind, changes in _CHANGES.items() for name, deltas, _ in changes for delta in deltas]  # fmt: skip


@pytest.mark.parametrize(("kind", "name", "delta"), EVERY_CHANGE)
def test_the_unchanged_original_fails_every_change(kind: str, name: str, delta: float) -> None:
    for seed, features in ((0, 3), (1, 5), (2, 7)):
        params = draw_params(kind, random.Random(seed), features)
        old = make_part(kind, params)
        new = make_part(kind, {**params, name: params[name] + delta})
        solid = build(old.tree)
        verdict = judge_part(part_meta(new), LoadedMesh(solid, True, 0, bounds_of(solid)))
        assert not verdict.passed, (params, verdict.reason)


@pytest.mark.skipif(not openscad_available(), reason="openscad is not installed")
def test_the_unchanged_original_of_a_bore_or_keyway_change_fails_when_compiled() -> None:
    domain = OpenScadModifyDomain()
    tasks = (domain.generate(seed, 1) for seed in range(60))
    wanted = ("bore", "keyway")
    picked = [t for t in tasks if any(w in t.meta["change"] for w in wanted)][:2]
    assert len(picked) == 2
    for task in picked:
        assert judge_scad(task, task.answer).passed
        verdict = judge_scad(task, task.meta["original"])
        assert verdict.error is None and not verdict.passed, task.meta["change"]
