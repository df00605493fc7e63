"""`geo/segments.py`: the convex hull's exact order and the segments' meeting point."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.geo.plane import num_text
from posttrain.domains.geo.segments import ConvexHull, SegmentIntersection
from posttrain.types import Task


def test_hull_accepts_spaces_around_separators() -> None:
    domain = ConvexHull()
    task = domain.generate(0, 5)
    assert domain.judge(task, task.answer.replace(";", " ; ")).passed


def test_hull_rejects_the_clockwise_order() -> None:
    domain = ConvexHull()
    task = domain.generate(0, 5)
    hull = task.answer.split(";")
    v = domain.judge(task, ";".join(hull[:1] + hull[:0:-1]))
    assert not v.passed and "order" in v.reason


def _task_with(answer_is_none: bool) -> Task:
    for seed in range(40):
        task = SegmentIntersection().generate(seed, 7)
        if (task.answer == "none") == answer_is_none:
            return task
    raise AssertionError("no such task")


def test_meeting_point_passes_within_a_thousandth_only() -> None:
    domain, task = SegmentIntersection(), _task_with(False)
    x, y = (Fraction(v) for v in task.answer.split(","))
    assert domain.judge(task, f"{num_text(x + Fraction(1, 1000))},{num_text(y)}").passed
    assert not domain.judge(task, f"{num_text(x + Fraction(3, 1000))},{num_text(y)}").passed


def test_meeting_point_with_four_decimals_is_rejected() -> None:
    domain, task = SegmentIntersection(), _task_with(False)
    x, y = task.answer.split(",")
    assert not domain.judge(task, f"{x}{'' if '.' in x else '.'}0001,{y}").passed


def test_none_passes_only_when_the_segments_do_not_meet() -> None:
    domain = SegmentIntersection()
    assert domain.judge(_task_with(True), " None ").passed
    assert not domain.judge(_task_with(False), "none").passed
