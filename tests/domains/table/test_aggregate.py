"""`table/aggregate.py`: counts, sums, means and group-by objects, and their judges."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction

from posttrain.domains.table.aggregate import ColumnMean, ColumnSum, CountWhere, GroupAggregate
from posttrain.domains.table.data import rounded_text
from posttrain.domains.table.question import Condition, matching, tables_of


def test_count_where_answer_is_the_number_of_matching_rows() -> None:
    task = CountWhere().generate(5, 8)
    conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
    assert len(conditions) == 3
    assert int(task.answer) == len(matching(tables_of(task)[0], conditions))


def test_count_where_refuses_the_count_in_a_sentence() -> None:
    domain = CountWhere()
    task = domain.generate(0, 2)
    assert not domain.judge(task, f"There are {task.answer} rows.").passed


def test_column_sum_accepts_thousands_separators_and_refuses_off_by_one() -> None:
    domain = ColumnSum()
    task = next(t for t in (domain.generate(s, 10) for s in range(50)) if abs(Fraction(t.answer)) >= 1000)  # fmt: skip
    whole, _, part = task.answer.partition(".")
    grouped = f"{int(whole):,}" + (f".{part}" if part else "")
    assert domain.judge(task, grouped).passed
    assert not domain.judge(task, str(Fraction(task.answer) + 1)).passed


def test_column_sum_adds_only_the_rows_meeting_the_conditions() -> None:
    task = ColumnSum().generate(1, 9)
    table = tables_of(task)[0]
    rows = matching(table, [Condition.from_meta(c) for c in task.meta["conditions"]])
    assert Fraction(task.answer) == sum(table.value(r, task.meta["column"]) for r in rows)


def test_column_mean_accepts_answers_within_half_a_hundredth() -> None:
    domain = ColumnMean()
    task = domain.generate(2, 6)
    exact = Fraction(task.meta["exact"])
    assert domain.judge(task, rounded_text(exact + Fraction(4, 1000), 4)).passed
    assert not domain.judge(task, rounded_text(exact + Fraction(6, 1000), 4)).passed


def test_group_aggregate_passes_any_key_order_and_a_json_fence() -> None:
    domain = GroupAggregate()
    task = domain.generate(0, 4)
    gold = json.loads(task.answer)
    shuffled = json.dumps(dict(reversed(list(gold.items()))))
    assert domain.judge(task, shuffled).passed
    assert domain.judge(task, f"```json\n{task.answer}\n```").passed


def test_group_aggregate_gives_partial_credit_for_a_missing_group() -> None:
    domain = GroupAggregate()
    task = next(t for t in (domain.generate(s, 5) for s in range(20)) if len(t.meta["values"]) >= 3)  # fmt: skip
    gold = json.loads(task.answer)
    first = sorted(gold)[0]
    verdict = domain.judge(task, json.dumps({k: v for k, v in gold.items() if k != first}))
    assert not verdict.passed and verdict.reward == (len(gold) - 1) / len(gold)


def test_group_aggregate_counts_an_extra_key_as_wrong() -> None:
    domain = GroupAggregate()
    task = domain.generate(1, 5)
    gold = json.loads(task.answer)
    verdict = domain.judge(task, json.dumps({**gold, "Elsewhere": 1}))
    assert not verdict.passed and verdict.reward == len(gold) / (len(gold) + 1)


def test_group_aggregate_refuses_numbers_written_as_strings() -> None:
    domain = GroupAggregate()
    task = domain.generate(2, 3)
    as_strings = json.dumps({k: str(v) for k, v in json.loads(task.answer).items()})
    assert domain.judge(task, as_strings).reward == 0.0


def test_group_aggregate_mean_is_rounded_to_one_place_from_difficulty_seven() -> None:
    domain = GroupAggregate()
    task = next(t for t in (domain.generate(s, 8) for s in range(60)) if t.meta["aggregate"] == "mean")  # fmt: skip
    assert "1 decimal place" in task.prompt[0].content
    nudged = {k: v + 0.04 for k, v in json.loads(task.answer).items()}
    assert domain.judge(task, json.dumps(nudged)).passed


def test_count_where_no_single_count_answers_many_tasks() -> None:
    domain = CountWhere()
    pooled: Counter[str] = Counter()
    for difficulty in range(1, 11):
        answers = Counter(domain.generate(seed, difficulty).answer for seed in range(30))
        assert answers.most_common(1)[0][1] <= 15, (difficulty, answers)
        pooled += answers
    assert pooled.most_common(1)[0][1] <= 0.3 * 300, pooled
