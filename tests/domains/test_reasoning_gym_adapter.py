"""The reasoning-gym adapter: the pinned generator list, difficulty mapping, scoring floor."""

from __future__ import annotations

from fractions import Fraction

import pytest

from posttrain.domains import get_domain
from posttrain.domains.reasoning_gym_adapter import (
    EXCLUDED,
    GENERATORS,
    NOISE_FLOOR,
    VERSION,
    all_generators,
)
from posttrain.types import Message, Rollout, Turn, Verdict


def _judge(domain_id: str, text: str, seed: int = 0, difficulty: int = 3) -> Verdict:
    domain = get_domain(domain_id)
    task = domain.generate(seed, difficulty)
    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    rollout = Rollout("r", task.id, task.domain, difficulty, [], [], [], [],
                      [Message("assistant", text)], [turn], Verdict(0.0, False, "-"))  # fmt: skip
    return domain.verify(task, rollout, None)


def test_the_pinned_list_is_the_installed_generators() -> None:
    from importlib.metadata import version

    from reasoning_gym.factory import DATASETS

    assert version("reasoning-gym") == VERSION  # (its __version__ attribute lags: 0.1.19)
    listed = {name for names in GENERATORS.values() for name in names}
    assert listed | {"composite"} == set(DATASETS)


def test_every_exclusion_names_a_generator_and_a_reason() -> None:
    listed = {name for names in GENERATORS.values() for name in names} | {"composite"}
    assert all(name in listed and len(reason) > 10 for name, reason in EXCLUDED.items())
    registered = {d.name for d in all_generators()}
    assert not registered & set(EXCLUDED) and len(registered) == len(listed) - len(EXCLUDED)


def test_difficulty_raises_the_curriculum_levels() -> None:
    domain = get_domain("rg/basic_arithmetic-v1")
    assert domain.difficulty_measure(domain.generate(0, 1)) == 0
    assert domain.difficulty_measure(domain.generate(0, 10)) > domain.difficulty_measure(
        domain.generate(0, 5)
    )


def test_reference_passes_and_a_wrong_answer_scores_zero() -> None:
    task = get_domain("rg/basic_arithmetic-v1").generate(0, 3)
    assert _judge("rg/basic_arithmetic-v1", task.answer).passed
    wrong = _judge("rg/basic_arithmetic-v1", "not a number")
    assert wrong.reward == 0.0 and not wrong.passed and NOISE_FLOOR > 0.01


def test_a_generator_that_gives_up_on_a_seed_gets_the_next_draw() -> None:
    # tsumego raises RuntimeError("Failed to generate a capture problem") on this task's
    # first seed; the adapter redraws from the same task rng, deterministically.
    domain = get_domain("rg/tsumego-v1")
    task = domain.generate(2, 3)
    assert task.prompt and domain.generate(2, 3).to_json() == task.to_json()


# One answer that, were it evaluated, would leave a mark in `builtins` (Python's eval)
# and one that would through SymPy's `parse_expr` (its factorial rewrite, `x!`, turns
# text Python cannot parse into a call).
MARK = "__import__('builtins').__dict__.__setitem__('posttrain_scored_code', 1)"
ATTACKS = {
    "rg/spiral_matrix-v2": [MARK, f"{MARK} or []"],
    "rg/binary_matrix-v2": [MARK, f"[{MARK}]"],
    "rg/string_insertion-v2": [MARK, f"({MARK}, 'A')"],
    "rg/countdown-v1": [MARK, f"({MARK})!", "len('')*(1+2) + len('xxxx')"],
    "rg/simple_integration-v2": [MARK, f"({MARK})!", "Integral(X**2, X) + C", "integrate(X, X)"],
}


def test_answers_a_scorer_would_run_as_code_score_zero_unrun() -> None:
    import builtins

    for domain_id, attacks in ATTACKS.items():
        for text in attacks:
            verdict = _judge(domain_id, text)
            assert not verdict.passed and verdict.reward == 0.0, (domain_id, text)
            assert "run it as code" in verdict.reason, (domain_id, text)
        assert not hasattr(builtins, "posttrain_scored_code"), domain_id


def test_the_gated_generators_still_pass_their_references() -> None:
    for domain_id in ATTACKS:
        domain = get_domain(domain_id)
        for seed, difficulty in ((0, 1), (1, 5), (2, 10)):
            answer = domain.generate(seed, difficulty).answer
            assert _judge(domain_id, answer, seed, difficulty).passed, (domain_id, seed)


def test_a_nan_answer_does_not_pass_complex_arithmetic() -> None:
    for text in ("nan", "nan + nani", "inf"):
        assert _judge("rg/complex_arithmetic-v2", text).reward == 0.0, text
    task = get_domain("rg/complex_arithmetic-v2").generate(0, 3)
    assert _judge("rg/complex_arithmetic-v2", task.answer).passed


def test_coin_flip_passes_the_probability_alone_not_a_constant_or_a_truncation() -> None:
    # Its scorer's prefix credit gave "0" full reward on every probability below 1 (v1).
    passed = 0
    for seed in range(20):
        task = get_domain("rg/coin_flip-v2").generate(seed, 5)
        gold = float(Fraction(task.answer))
        assert _judge("rg/coin_flip-v2", task.answer, seed, 5).passed
        assert _judge(
            "rg/coin_flip-v2", str(Fraction(task.answer).limit_denominator()), seed, 5
        ).passed
        for wrong in ("0", "0.0", task.answer[:3], "1"):
            if abs(float(Fraction(wrong)) - gold) > 1e-4:
                assert _judge("rg/coin_flip-v2", wrong, seed, 5).reward == 0.0, (task.answer, wrong)
        passed += _judge("rg/coin_flip-v2", "0", seed, 5).passed
    assert passed == 0


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("fraction_simplification", " or $\\dfrac{1}{2}$"),
        ("letter_jumble", " or maybe something else entirely"),
        ("game_of_life", "GRID"),
        ("polynomial_equations", ", I am not sure, maybe 3.1"),
    ],
)
def test_junk_after_a_right_answer_does_not_pass(name: str, extra: str) -> None:
    # Each scorer reads the first answer and ignores the rest (v1 passed all of these).
    domain = get_domain(f"rg/{name}-v2")
    for seed in range(3):
        task = domain.generate(seed, 5)
        padded = task.answer[:-1] + ",[7,7]]" if extra == "GRID" else task.answer + extra
        assert _judge(domain.id, task.answer, seed, 5).passed
        verdict = _judge(domain.id, padded, seed, 5)
        assert verdict.reward == 0.0 and "exactly one answer" in verdict.reason, padded


# Towers of powers hidden from a regex (parentheses, a sign, nesting, exp of a log), and
# products SymPy's simplify would expand for minutes: SymPy computed 9**(9)**8 inline
# for 30+ s (v1), a hung verifier thread in the trainer. The product is in X, the
# variable of the task `_judge` draws (seed 0, difficulty 3).
TOWERS = ("1e999999999", "9**9**9**9", "9**(9**9)", "x**999999999", "9**(9)**8", "9**+9**9",
          "9**-(-9**9)", "(9)**(9)**(9)", "2**+99999", "(((9**100)**100)**100)**100",
          "exp(999999999*log(9))", "*".join(f"(X+{k})" for k in range(2, 300)))  # fmt: skip


def test_a_huge_exponent_scores_zero_without_hanging_the_scorer() -> None:
    import time

    for domain_id in ("rg/coin_flip-v2", "rg/countdown-v1", "rg/simple_integration-v2"):
        start = time.monotonic()
        for text in TOWERS:
            verdict = _judge(domain_id, text)
            assert verdict.reward == 0.0 and time.monotonic() - start < 5, (domain_id, text)


def test_an_antiderivative_with_a_small_written_exponent_still_passes() -> None:
    domain = get_domain("rg/simple_integration-v2")
    task = domain.generate(0, 3)
    assert _judge(domain.id, task.answer).passed
    variable = str(domain.entry(0, 3)[1]["metadata"]["variable"])
    assert _judge(domain.id, task.answer.replace(f"{variable}**", f"{variable}**+")).passed


@pytest.mark.parametrize(
    ("name", "text"),
    [("string_insertion", "oracle_answer"), ("string_insertion", "[oracle_answer]"),
     ("spiral_matrix", "[oracle_answer]"), ("binary_matrix", "[[oracle_answer]]")],
)  # fmt: skip
def test_the_scorers_own_gold_variable_earns_nothing(name: str, text: str) -> None:
    # Each scorer evals the answer in its own function, where `oracle_answer` is the
    # gold answer: v1 gave this constant 0.1 on every task.
    domain = get_domain(f"rg/{name}-v2")
    for seed, difficulty in ((0, 1), (1, 5), (2, 10)):
        verdict = _judge(domain.id, text, seed, difficulty)
        assert verdict.reward == 0.0 and "run it as code" in verdict.reason, (seed, text)


def test_a_final_text_of_none_scores_zero_with_a_reason() -> None:
    domain = get_domain("rg/basic_arithmetic-v1")
    task = domain.generate(0, 1)
    turn = Turn(text=None, token_ids=[], logprobs=[], finish_reason="stop")  # type: ignore[arg-type]
    rollout = Rollout("r", task.id, task.domain, 1, [], [], [], [], [], [turn], Verdict(0.0, False, "-"))  # fmt: skip
    verdict = domain.verify(task, rollout, None)
    assert not verdict.passed and verdict.reward == 0.0 and verdict.reason
