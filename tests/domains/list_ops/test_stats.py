"""`list_ops/stats.py`: second-largest, k-th smallest, mode, median."""

from __future__ import annotations

from posttrain.domains.list_ops.stats import KthSmallest, Median, Mode, SecondLargest, _mode


def test_second_largest_refuses_the_repeated_maximum() -> None:
    domain = SecondLargest()
    task = domain.generate(0, 1)
    task.meta["values"] = [5, 9, 9, 2]
    assert domain.judge(task, "5").passed and not domain.judge(task, "9").passed


def test_kth_smallest_counts_repeats() -> None:
    domain = KthSmallest()
    task = domain.generate(0, 1)
    task.meta.update(values=[4, 1, 4, 2], k=3)
    assert domain.judge(task, "4").passed and not domain.judge(task, "2").passed


def test_mode_breaks_ties_towards_the_smallest() -> None:
    assert _mode([5, 2, 5, 2, 7]) == 2


def test_mode_tasks_often_hold_a_tie() -> None:
    domain = Mode()
    tied = 0
    for seed in range(20):
        values = domain.generate(seed, 5).meta["values"]
        counts = sorted((values.count(v) for v in set(values)), reverse=True)
        tied += len(counts) > 1 and counts[0] == counts[1]
    assert tied >= 5


def test_median_accepts_equal_decimals() -> None:
    domain = Median()
    task = domain.generate(0, 1)
    task.meta["values"] = [1, 4, 3, 9]
    for text in ("3.5", "3.50", " 3.5\n"):
        assert domain.judge(task, text).passed
    for text in ("7/2", "3,5", "3.5.", "4"):
        assert not domain.judge(task, text).passed


def test_median_accepts_a_whole_number_with_a_decimal_point() -> None:
    domain = Median()
    task = domain.generate(0, 1)
    task.meta["values"] = [1, 4, 3]
    assert domain.judge(task, "3").passed and domain.judge(task, "3.0").passed
