"""Dataset domains: users' JSONL rows with a named verifier or reward functions by path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posttrain.domains.check import check_domains
from posttrain.domains.dataset import DatasetDomain, DatasetError, load_rows
from posttrain.types import Message, Rollout, Task, Turn, Verdict

FIXTURES = "tests.domains.reward_fixtures"


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _words(tmp_path: Path, n: int = 40, **extra: object) -> Path:
    rows = [{"prompt": f"Say the word w{i}.", "answer": f"w{i}", **extra} for i in range(n)]
    return _write(tmp_path / "words.jsonl", rows)


def _rollout(task: Task, text: str) -> Rollout:
    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    return Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [],
                   [Message("assistant", text)], [turn], Verdict(0.0, False, "unscored"))  # fmt: skip


def test_a_named_verifier_domain_passes_the_self_check(tmp_path: Path) -> None:
    domain = DatasetDomain("mine/words-v1", _words(tmp_path), verifier="exact")
    assert [r for r in check_domains([domain], difficulties=(1, 5)) if not r.ok] == []


def test_a_reward_function_domain_passes_the_self_check(tmp_path: Path) -> None:
    domain = DatasetDomain("mine/words-v1", _words(tmp_path), reward=[f"{FIXTURES}:exact"])
    assert [r for r in check_domains([domain], difficulties=(1,)) if not r.ok] == []


def test_reward_functions_are_weighted_components(tmp_path: Path) -> None:
    domain = DatasetDomain("mine/words-v1", _words(tmp_path),
                           reward=[f"{FIXTURES}:exact", f"{FIXTURES}:short"],
                           reward_weights=[3, 1], pass_threshold=0.75)  # fmt: skip
    task = domain.generate(0, 1)
    right = domain.verify(task, _rollout(task, task.answer), None)
    assert (right.reward, right.passed, right.components) == (
        1.0,
        True,
        {"exact": 1.0, "short": 1.0},
    )
    wrong = domain.verify(task, _rollout(task, "no"), None)
    assert (wrong.reward, wrong.passed) == (0.25, False)


def test_other_columns_reach_the_reward_function(tmp_path: Path) -> None:
    path = _write(tmp_path / "u.jsonl", [{"prompt": "unit?", "answer": 1, "unit": "kg"}])
    domain = DatasetDomain("mine/unit-v1", path, reward=[f"{FIXTURES}:uses_column"], heldout_fraction=0)  # fmt: skip
    task = domain.generate(0, 1)
    assert domain.verify(task, _rollout(task, "kg"), None).passed


@pytest.mark.parametrize("name", ["raises", "out_of_range"])
def test_a_failing_reward_function_is_a_verifier_error(tmp_path: Path, name: str) -> None:
    domain = DatasetDomain("mine/words-v1", _words(tmp_path), reward=[f"{FIXTURES}:{name}"])
    task = domain.generate(0, 1)
    verdict = domain.verify(task, _rollout(task, task.answer), None)
    assert (verdict.reward, verdict.passed) == (0.0, False) and verdict.error


@pytest.mark.parametrize(
    ("reward", "message"),
    [
        ("no_colon", "must look like"),
        ("tests.domains.nowhere:f", "cannot import"),
        (f"{FIXTURES}:missing", "no callable"),
        (f"{FIXTURES}:not_callable", "no callable"),
    ],
)
def test_a_bad_reward_path_fails_at_construction(tmp_path: Path, reward: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        DatasetDomain("mine/words-v1", _words(tmp_path), reward=[reward])


def test_verifier_and_reward_are_exclusive_and_names_are_checked(tmp_path: Path) -> None:
    path = _words(tmp_path)
    with pytest.raises(DatasetError, match="exactly one"):
        DatasetDomain("mine/w-v1", path)
    with pytest.raises(DatasetError, match="exactly one"):
        DatasetDomain("mine/w-v1", path, verifier="exact", reward=[f"{FIXTURES}:exact"])
    with pytest.raises(DatasetError, match="unknown verifier 'exakt'"):
        DatasetDomain("mine/w-v1", path, verifier="exakt")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], ":1: not valid JSON"),
        (['{"prompt": "p"}'], ":1: the row has no 'answer'"),
        (
            ['{"prompt": "p", "messages": [], "answer": 1}'],
            "exactly one of 'prompt' and 'messages'",
        ),
        (['{"messages": [{"role": "bot", "content": "x"}], "answer": 1}'], "role"),
        (
            [
                '{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], "answer": 1}'
            ],
            "last message",
        ),  # fmt: skip
        (['{"prompt": "p", "answer": 1, "difficulty": 11}'], "difficulty must be an integer 1..10"),
        (
            ['{"prompt": "p", "answer": 1, "difficulty": 2}', '{"prompt": "q", "answer": 2}'],
            "1 of 2 rows give a difficulty",
        ),  # fmt: skip
        (["[1, 2]"], "must be a JSON object"),
        ([""], "holds no rows"),
    ],
)
def test_bad_rows_name_the_file_line_and_problem(tmp_path: Path, lines: list[str], message: str) -> None:  # fmt: skip
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=message):
        load_rows(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_rows(tmp_path / "nope.jsonl")


def test_training_and_heldout_seeds_never_share_a_row(tmp_path: Path) -> None:
    domain = DatasetDomain("mine/words-v1", _words(tmp_path, n=50), verifier="exact",
                           heldout_fraction=0.2, heldout_seed_offset=1000)  # fmt: skip
    train = {domain.generate(s, 1).meta["row"] for s in range(300)}
    heldout = {domain.generate(1000 + s, 1).meta["row"] for s in range(300)}
    assert train and heldout and not train & heldout
    assert 5 <= len(heldout) <= 16  # about a fifth of 50 rows


def _side_prompts(domain: DatasetDomain, seeds: range) -> set[str]:
    return {" ".join(domain.generate(s, 1).prompt[-1].content.split()) for s in seeds}


def test_rows_repeating_a_prompt_land_on_one_side(tmp_path: Path) -> None:
    # 20 questions, each on 5 lines: exact copies, another answer, another id, re-spaced.
    rows = [{"id": f"r{copy}-{q}", "prompt": f"What is{'  ' if copy == 4 else ' '}{q} + 1?"
             + "\n" * (copy == 3), "answer": str(q + 1 + (copy == 2))}
            for copy in range(5) for q in range(20)]  # fmt: skip
    domain = DatasetDomain("mine/dup-v1", _write(tmp_path / "dup.jsonl", rows), verifier="exact",
                           heldout_fraction=0.3, heldout_seed_offset=1000)  # fmt: skip
    train, heldout = _side_prompts(domain, range(400)), _side_prompts(domain, range(1000, 1400))
    assert train and heldout and not train & heldout
    assert len(train) + len(heldout) == 20
    assert len(domain.heldout_rows) == 5 * len(heldout)  # every copy of a held-out question


def test_the_fallback_holds_out_a_whole_prompt(tmp_path: Path) -> None:
    rows = [{"prompt": f"q{i % 2}?", "answer": str(i)} for i in range(6)]
    path = _write(tmp_path / "d.jsonl", rows)
    for fraction in (1e-9, 1 - 1e-9):  # no prompt hashes into held-out / into training
        domain = DatasetDomain("mine/d-v1", path, verifier="exact", heldout_fraction=fraction)
        held = {r.prompt[-1].content for r in domain.heldout_rows}
        assert len(held) == 1 and not held & {r.prompt[-1].content for r in domain.train_rows}
        assert (len(domain.train_rows), len(domain.heldout_rows)) == (3, 3)


def test_the_split_holds_out_about_the_fraction_of_prompts(tmp_path: Path) -> None:
    rows = [{"prompt": f"Say the word w{i}.", "answer": f"w{i}"} for i in range(2000)]
    domain = DatasetDomain("mine/words-v1", _write(tmp_path / "w.jsonl", rows), verifier="exact",
                           heldout_fraction=0.1)  # fmt: skip
    assert 160 <= len(domain.heldout_rows) <= 240  # 200 ± 3 standard deviations


def test_the_split_depends_only_on_the_prompts(tmp_path: Path) -> None:
    rows = [{"prompt": f"Say the word w{i}.", "answer": f"w{i}"} for i in range(40)]
    domain = DatasetDomain("mine/words-v1", _write(tmp_path / "a.jsonl", rows), verifier="exact",
                           heldout_fraction=0.2)  # fmt: skip
    held = sorted(r.answer for r in domain.heldout_rows)
    # Pinned: a change here reshuffles every user's split (see the module doc).
    assert held == ["w1", "w12", "w13", "w20", "w22"]
    again = DatasetDomain("mine/words-v2", _write(tmp_path / "b.jsonl", rows[::-1]),
                          verifier="exact", heldout_fraction=0.2)  # fmt: skip
    assert sorted(r.answer for r in again.heldout_rows) == held


def test_rows_with_difficulty_serve_the_nearest_level(tmp_path: Path) -> None:
    rows = [{"prompt": f"p{i}", "answer": str(i), "difficulty": 2 + 6 * (i % 2)} for i in range(20)]
    domain = DatasetDomain("mine/levels-v1", _write(tmp_path / "l.jsonl", rows),
                           verifier="exact", heldout_fraction=0)  # fmt: skip
    levels = [domain.generate(s, d).meta["row_difficulty"] for d in (1, 4, 6, 9) for s in range(5)]
    assert levels == [2] * 10 + [8] * 10
    measures = [domain.difficulty_measure(domain.generate(0, d)) for d in range(1, 11)]
    assert measures == sorted(measures)


def test_messages_rows_keep_the_conversation(tmp_path: Path) -> None:
    row = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}], "answer": 4}  # fmt: skip
    domain = DatasetDomain("mine/chat-v1", _write(tmp_path / "c.jsonl", [row]), verifier="exact", heldout_fraction=0)  # fmt: skip
    task = domain.generate(0, 3)
    assert [m.role for m in task.prompt] == ["system", "user"]
    assert domain.verify(task, _rollout(task, "4"), None).passed


def test_task_for_row_is_the_row_whatever_its_split(tmp_path: Path) -> None:
    domain = DatasetDomain("mine/words-v1", _words(tmp_path), verifier="exact")
    task = domain.task_for_row(7)
    assert (task.answer, task.id) == ("w7", "mine/words-v1@row7")
    with pytest.raises(IndexError, match="0..39"):
        domain.task_for_row(40)


def test_a_parquet_file_gives_the_same_rows_as_jsonl(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"prompt": f"p{i}", "answer": f"a{i}", "difficulty": 1 + i % 3} for i in range(6)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    from_parquet = load_rows(tmp_path / "rows.parquet")
    from_jsonl = load_rows(_write(tmp_path / "rows.jsonl", rows))
    assert from_parquet == from_jsonl


def test_a_corrupt_parquet_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        load_rows(tmp_path / "bad.parquet")


@pytest.mark.parametrize(
    ("verifier", "answer"),
    [("set_f1", [1, 2]), ("set_f1", ["red", "blue"]), ("json", "12"), ("json", None),
     ("json", {"a": [1, 2]}), ("exact", "Paris")],
)  # fmt: skip
def test_the_reference_passes_its_own_verifier(tmp_path: Path, verifier: str, answer: object) -> None:  # fmt: skip
    path = _write(tmp_path / "d.jsonl", [{"prompt": "q?", "answer": answer}])
    domain = DatasetDomain("mine/d-v1", path, verifier=verifier, heldout_fraction=0.0)
    task = domain.task_for_row(0)
    verdict = domain.verify(task, _rollout(task, domain.reference(task).final), None)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(
    ("gold", "reply", "passed"),
    [("10000", "10001", False), (10000, "10,000", True), ("10000", "10000.4", False),
     ("10000", "10000.0", True), ("12%", "0.12", True), ("3 million", "3.0002 million", False),
     ("10000.0", "10000.4", True), (1.5, "1.50001", True), ("0.1235", "0.12351", True)],
)  # fmt: skip
def test_numeric_matches_a_gold_written_as_an_integer_exactly(
    tmp_path: Path, gold: object, reply: str, passed: bool
) -> None:
    # v1's 1e-4 relative slack passed 10001 for 10000; a gold with decimals keeps it.
    path = _write(tmp_path / "d.jsonl", [{"prompt": "q?", "answer": gold}])
    domain = DatasetDomain("mine/d-v1", path, verifier="numeric", heldout_fraction=0.0)
    task = domain.task_for_row(0)
    assert domain.verify(task, _rollout(task, reply), None).passed is passed


@pytest.mark.parametrize(
    ("verifier", "answer"), [("numeric", "twelve"), ("numeric", [1, 2]), ("set_f1", [])]
)
def test_a_row_whose_answer_cannot_pass_its_verifier_is_named(
    tmp_path: Path, verifier: str, answer: object
) -> None:
    rows = [{"prompt": "q?", "answer": "7" if verifier == "numeric" else "a, b"}] * 2
    path = _write(tmp_path / "d.jsonl", [*rows, {"prompt": "r?", "answer": answer}])
    with pytest.raises(DatasetError, match=r"d\.jsonl:3: .* can never pass"):
        DatasetDomain("mine/d-v1", path, verifier=verifier)


def test_a_repeated_row_id_names_both_lines(tmp_path: Path) -> None:
    rows = [{"id": f"q{i % 3}", "prompt": f"q{i}?", "answer": "a"} for i in range(4)]
    with pytest.raises(DatasetError, match=r"d\.jsonl:4: id 'q0' repeats the row of line 1"):
        load_rows(_write(tmp_path / "d.jsonl", rows))


def test_task_for_row_takes_the_row_number_tasks_carry_despite_blank_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '\n{"prompt": "first?", "answer": "a"}\n\n{"prompt": "second?", "answer": "b"}\n'
    )
    domain = DatasetDomain("mine/d-v1", path, verifier="exact", heldout_fraction=0.0)
    for seed in range(8):
        task = domain.generate(seed, 1)
        assert domain.task_for_row(task.meta["row"]).answer == task.answer
    with pytest.raises(IndexError):
        domain.task_for_row(0)  # a blank line
