"""parts.py's probes: references pass, features 1 mm off in size fail (through judge.py)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import pytest

from posttrain.domains.cad.csg import build
from posttrain.domains.cad.judge import judge_part
from posttrain.domains.cad.parts import KINDS, PartSpec, draw_params, make_part
from posttrain.types import Verdict
from posttrain.verify.geometry import LoadedMesh, bounds_of

Node = dict[str, Any]


def _judge(part: PartSpec, tree: Node, segments: int = 32) -> Verdict:
    solid = build(tree, segments)
    meta = {"tree": part.tree, "probes": part.probes, "genus": part.genus}
    return judge_part(meta, LoadedMesh(solid, True, 0, bounds_of(solid)))


def _parts(kind: str, count: int = 10, wanted: Callable[[PartSpec], bool] = lambda p: True) -> list[PartSpec]:  # fmt: skip
    drawn = (make_part(kind, draw_params(kind, random.Random(s), 5)) for s in range(200))
    return [p for p in drawn if wanted(p)][:count]


def _edited(part: PartSpec, edit: Callable[[Node], None]) -> Node:
    tree = copy.deepcopy(part.tree)
    edit(tree)
    return tree


@pytest.mark.parametrize("segments", [32, 64])
@pytest.mark.parametrize("features", [3, 7, 12])
@pytest.mark.parametrize("kind", KINDS)
def test_the_reference_passes_its_own_probes(kind: str, features: int, segments: int) -> None:
    for seed in range(2):
        part = make_part(kind, draw_params(kind, random.Random(seed), features))
        verdict = _judge(part, part.tree, segments)
        assert verdict.passed, verdict.reason


def _flange(bore: float, seed: int) -> PartSpec:
    """A drawn flange with its bore set to `bore`, the bolt circle and hub grown to fit."""
    p = draw_params("flange", random.Random(seed), 5)
    circle = max(p["circle"], bore + 6 * p["bolt_d"] + 12)
    hub = bore + 4 * p["bolt_d"] if p["hub_d"] else 0.0
    return make_part("flange", {**p, "bore": bore, "circle": circle, "od": circle + 5 * p["bolt_d"], "hub_d": hub})  # fmt: skip


@pytest.mark.parametrize("delta", [-0.5, 0.5])
@pytest.mark.parametrize("bore", [8.0, 10.0, 12.0, 16.0, 20.0, 22.0])
def test_a_bore_one_millimetre_off_in_diameter_fails(bore: float, delta: float) -> None:
    def resize(tree: Node) -> None:  # the bore cutter, translate(cylinder), is the second child
        tree["children"][1]["children"][0]["r"] += delta

    for seed in range(3):
        part = _flange(bore, seed)
        assert _judge(part, part.tree).passed
        verdict = _judge(part, _edited(part, resize))
        assert not verdict.passed and "the bore" in verdict.reason, part.params


def _wider(keyway: Node) -> None:
    keyway["v"][1] -= 0.5
    keyway["children"][0]["size"][1] += 1


def _longer_at_the_top(keyway: Node) -> None:
    keyway["children"][0]["size"][2] += 1


def _longer_at_the_bottom(keyway: Node) -> None:
    keyway["v"][2] -= 1
    keyway["children"][0]["size"][2] += 1


def _deeper(keyway: Node) -> None:
    keyway["v"][0] -= 1
    keyway["children"][0]["size"][0] += 1


@pytest.mark.parametrize("edit", [_wider, _longer_at_the_top, _longer_at_the_bottom, _deeper])
def test_a_keyway_one_millimetre_too_big_fails(edit: Callable[[Node], None]) -> None:
    for part in _parts("shaft"):
        # The keyway cutter, translate(cube), is the second child.
        verdict = _judge(part, _edited(part, lambda tree: edit(tree["children"][1])))
        assert not verdict.passed and "the keyway" in verdict.reason, part.params


@pytest.mark.parametrize("delta", [-0.5, 0.5])
def test_a_hub_one_millimetre_off_in_diameter_fails(delta: float) -> None:
    def resize(tree: Node) -> None:  # body = union(disc, hub)
        tree["children"][0]["children"][1]["r"] += delta

    for part in _parts("flange", wanted=lambda p: bool(p.params["hub_h"])):
        verdict = _judge(part, _edited(part, resize))
        assert not verdict.passed and "the hub" in verdict.reason, part.params


@pytest.mark.parametrize("delta", [-0.5, 0.5])
def test_standoffs_one_millimetre_off_in_diameter_fail(delta: float) -> None:
    def resize(tree: Node) -> None:  # body = union(plate, *translate(post))
        for post in tree["children"][0]["children"][1:]:
            post["children"][0]["r"] += delta

    for part in _parts("standoffs"):
        verdict = _judge(part, _edited(part, resize))
        assert not verdict.passed and "standoff" in verdict.reason, part.params
