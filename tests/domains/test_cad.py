"""The CSG half of the cad family: parts, our JSON CSG, the solid judge and the CSG domains."""

from __future__ import annotations

import json
import random

import pytest

from posttrain.domains.cad.csg import CsgError, build, dumps, parse_csg, to_scad
from posttrain.domains.cad.csg_tasks import (  # fmt: skip
    DOMAINS,
    CsgEnclosureDomain,
    CsgPartDomain,
    CsgVolumeDomain,
)
from posttrain.domains.cad.judge import judge_part
from posttrain.domains.cad.parts import KINDS, draw_params, make_part
from posttrain.domains.check import check_domains
from posttrain.verify.geometry import LoadedMesh, bounds_of


def _judge_tree(part_meta: dict, tree: dict):  # type: ignore[no-untyped-def]
    solid = build(tree)
    return judge_part(part_meta, LoadedMesh(solid, True, 0, bounds_of(solid)))


def test_the_csg_domains_pass_the_self_check() -> None:
    results = check_domains(list(DOMAINS), difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_part_kind_has_the_genus_of_its_holes_and_passes_its_own_probes(kind: str) -> None:
    part = make_part(kind, draw_params(kind, random.Random(3), 5))
    assert build(part.tree).genus() == part.genus
    verdict = _judge_tree(
        {"tree": part.tree, "probes": part.probes, "genus": part.genus}, part.tree
    )
    assert verdict.passed, verdict.reason


def test_a_hole_one_millimetre_too_wide_fails_the_probes() -> None:
    part = make_part("plate", draw_params("plate", random.Random(0), 4))
    wider = json.loads(json.dumps(part.tree).replace(f'"r": {part.params["hole_d"] / 2}', f'"r": {part.params["hole_d"] / 2 + 0.5}'))  # fmt: skip
    verdict = _judge_tree({"tree": part.tree, "probes": part.probes, "genus": part.genus}, wider)
    assert not verdict.passed and verdict.components["features"] < 1.0


def test_the_scad_printout_mirrors_the_tree() -> None:
    part = make_part("flange", draw_params("flange", random.Random(1), 4))
    source = to_scad(part.tree)
    assert source.startswith("difference() {") and source.count("cylinder(") >= 5


@pytest.mark.parametrize(
    "text",
    [
        '{"op": "cube"}',
        '{"op": "sphere", "r": -1}',
        '{"op": "cone", "h": 1}',
        '{"op": "union", "children": []}',
        "[1]",
        "{" * 5000,
    ],  # fmt: skip
)
def test_malformed_trees_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(CsgError):
        parse_csg(text)


def test_an_equivalent_tree_in_another_form_passes_csg_part() -> None:
    domain = CsgPartDomain()
    task = domain.generate(0, 2)
    wrapped = {"op": "union", "children": [{"op": "translate", "v": [0, 0, 0], "children": [json.loads(task.answer)]}]}  # fmt: skip
    assert domain.judge(task, dumps(wrapped)).passed


def test_a_fenced_csg_answer_scores_zero() -> None:
    domain = CsgPartDomain()
    task = domain.generate(0, 1)
    assert domain.judge(task, f"```json\n{task.answer}\n```").reward == 0.0


def test_the_volume_accepts_one_percent_and_refuses_two() -> None:
    domain = CsgVolumeDomain()
    task = domain.generate(4, 3)
    volume = float(task.answer)
    assert domain.judge(task, f"{volume * 1.008:.2f}").passed
    assert not domain.judge(task, f"{volume * 1.02:.2f}").passed
    assert not domain.judge(task, f"{volume:.2f} cm3").passed


def test_a_different_valid_tray_passes_the_enclosure_rules() -> None:
    domain = CsgEnclosureDomain()
    task = next(t for t in (domain.generate(s, 3) for s in range(50)) if t.meta["spec"]["envelope"][0] - t.meta["spec"]["size"][0] >= 4)  # fmt: skip
    length = task.meta["spec"]["size"][0]
    # Not the reference: a rib on the outside of the end wall, still inside the envelope.
    rib = {"op": "translate", "v": [length - 0.5, 1, 0], "children": [{"op": "cube", "size": [2, 2, 2], "center": False}]}  # fmt: skip
    verdict = domain.judge(task, dumps({"op": "union", "children": [json.loads(task.answer), rib]}))
    assert verdict.passed, verdict.reason


def test_a_tray_with_thin_walls_fails_the_enclosure_rules() -> None:
    domain = CsgEnclosureDomain()
    task = domain.generate(0, 2)
    verdict = domain.judge(task, domain.wrong(task)[0])
    assert not verdict.passed and verdict.components["constraints"] < 1.0
