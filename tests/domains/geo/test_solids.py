"""`geo/solids.py`: volume and surface area of touching boxes, with half credit."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.geo.plane import num_text
from posttrain.domains.geo.solids import BoxUnion


def test_one_box_has_the_textbook_volume_and_surface() -> None:
    task = BoxUnion().generate(0, 1)
    v, s = (Fraction(x) for x in task.answer.split(","))
    assert v > 0 and s > 0 and task.prompt[0].content.count("box 1:") == 1


def test_touching_faces_are_not_counted_as_surface() -> None:
    task = BoxUnion().generate(0, 5)
    assert Fraction(task.meta["separate"]) > Fraction(task.meta["surface"])


def test_one_right_number_earns_half_credit() -> None:
    domain = BoxUnion()
    task = domain.generate(1, 6)
    v, s = task.answer.split(",")
    verdict = domain.judge(task, f"{v},{num_text(Fraction(s) + 3)}")
    assert not verdict.passed and verdict.reward == 0.5


def test_answers_with_trailing_zeros_pass() -> None:
    domain = BoxUnion()
    task = domain.generate(1, 6)
    v, s = task.answer.split(",")
    assert domain.judge(task, f"{float(Fraction(v)):.3f}, {float(Fraction(s)):.2f}").passed
