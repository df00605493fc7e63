"""The OpenSCAD half of the cad family: compiling in the sandbox, judging, the three domains.

Tests that compile skip when `openscad` is not installed (the Makefile installs it);
the full self-check of the three OpenSCAD domains is `slow` (about a minute each).
"""

from __future__ import annotations

import pytest

from posttrain.domains.cad.openscad import compile_scad, openscad_available
from posttrain.domains.cad.tasks import (  # fmt: skip
    DOMAINS,
    OpenScadModifyDomain,
    OpenScadPartDomain,
    OpenScadRenderDomain,
    judge_scad,
)
from posttrain.domains.check import check_domains
from posttrain.types import Message, Rollout, ToolCall, Turn, Verdict

needs_openscad = pytest.mark.skipif(not openscad_available(), reason="openscad is not installed (apt-get install openscad)")  # fmt: skip


def _rollout(text: str, calls: list[ToolCall] | None = None) -> Rollout:
    turns = [Turn(text="", token_ids=[], logprobs=[], finish_reason="stop", tool_calls=calls or [])] if calls else []  # fmt: skip
    turns.append(Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop"))
    return Rollout("r", "t", "d", 1, [], [], [], [], [Message("assistant", text)], turns, Verdict(0.0, False, "unscored"))  # fmt: skip


def test_without_openscad_a_verdict_is_a_verifier_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from posttrain.domains.cad import openscad

    monkeypatch.setattr(openscad, "openscad_available", lambda: False)
    task = OpenScadPartDomain().generate(0, 1)
    verdict = judge_scad(task, task.answer + "// uncached\n")
    assert verdict.error and "openscad" in verdict.error and verdict.reward == 0.0


@needs_openscad
def test_a_syntax_error_comes_back_as_a_log_not_an_exception() -> None:
    result = compile_scad("cube([1, 2, 3]")
    assert result.stl is None and result.error is None and "syntax error" in result.log


@needs_openscad
def test_the_reference_and_an_equivalent_rewrite_both_pass() -> None:
    domain = OpenScadPartDomain()
    task = domain.generate(0, 1)
    assert domain.verify(task, _rollout(task.answer), None).passed
    rewritten = "$fn = 48;\nunion() {\n" + task.answer.replace("$fn = 32;", "") + "\n}\n"
    verdict = domain.verify(task, _rollout(rewritten), None)
    assert verdict.passed, verdict.reason


@needs_openscad
@pytest.mark.parametrize("source", ["cube(1e12);", "cube(2e6);"])
def test_a_part_too_large_fails_as_a_bad_mesh_not_a_verifier_error(source: str) -> None:
    # v1: cube(1e12) was a verifier error (manifold3d's 2D booleans raised); cube(2e6)
    # earned 0.225 here (a valid solid, symmetric, filling some probes).
    domain = OpenScadPartDomain()
    task = domain.generate(0, 1)
    verdict = domain.verify(task, _rollout(source), None)
    assert verdict.error is None and verdict.reward == 0.0 and "beyond" in verdict.reason


@needs_openscad
def test_the_render_tool_answers_for_a_part_too_large() -> None:
    from posttrain.domains.cad.tasks import describe_render

    observation = describe_render("cube(1e12);")  # v1: RuntimeError out of the tool
    assert "not a valid solid" in observation.content and "beyond" in observation.content


@needs_openscad
def test_each_corruption_fails_for_its_own_reason() -> None:
    domain = OpenScadPartDomain()
    task = domain.generate(1, 1)
    wider, missing, non_manifold, broken = (domain.verify(task, _rollout(r.final), None) for r in domain.corrupt(task, domain.reference(task)))  # fmt: skip
    assert not wider.components["bbox"]
    assert not missing.components["holes"] and missing.components["features"] < 1.0
    assert not non_manifold.components["manifold"]
    assert broken.reward == 0.0 and not broken.components["compiles"]


@needs_openscad
def test_the_render_tool_reports_box_volume_and_silhouettes() -> None:
    domain = OpenScadRenderDomain()
    task = domain.generate(0, 1)
    observation = domain.open(task).call(ToolCall("render", {"code": task.answer}))
    assert not observation.error
    assert "bounding box" in observation.content and "top view" in observation.content
    assert "front view" in observation.content and "genus" in observation.content


@needs_openscad
def test_an_unrendered_final_answer_does_not_pass_the_render_domain() -> None:
    domain = OpenScadRenderDomain()
    task = domain.generate(0, 1)
    assert not domain.verify(task, _rollout(task.answer), None).passed
    rendered = [ToolCall("render", {"code": task.answer})]
    assert domain.verify(task, _rollout(task.answer, rendered), None).passed


@needs_openscad
def test_handing_back_the_unmodified_model_fails_modify() -> None:
    domain = OpenScadModifyDomain()
    task = domain.generate(0, 1)
    assert not domain.verify(task, _rollout(task.meta["original"]), None).passed


@needs_openscad
@pytest.mark.slow
def test_the_openscad_domains_pass_the_self_check() -> None:
    results = check_domains(list(DOMAINS), difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []
