"""`num/*` integer arithmetic: signed subtraction, long multiplication, a sum or a
product of two numbers (`num/add-multiply-v1`), division with remainder, and evaluating an
expression with precedence and parentheses.

    from posttrain.domains.num.integers import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Every answer is exact: one integer, or for `num/divmod-v1` the quotient and remainder
as `Q R`. Difficulty grows the operands' digits (`measure`: their total digit count)
or, for `num/expression-v1`, the number of terms (`measure`).

`num/add-multiply-v1` reports its `correct` component leniently (the last integer in the
text is the answer, whatever else it says), as `arith/addition-v1` does, so evaluation
separates "knows the answer" from "answers in the strict format"; it passes only when
the whole text is the integer.

Not guaranteed: `num/divmod-v1` gives half credit (reward 0.5, still failed) when
exactly one of quotient and remainder is right; the others are all-or-nothing.
Expression tasks use only +, - and * (no division), so every value is an integer.
"""

from __future__ import annotations

import random
import re

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.num.numerals import judge_integer, number_with_digits, wrong_answers
from posttrain.types import Task, Verdict
from posttrain.verify.answers import last_integer, strict_integer

_EXACT = Axes("text", "none", "single", "exact")
_INTEGER_ONLY = (
    "Reply with the integer only: digits with a leading minus sign if it is negative, "
    "no spaces, commas or other text."
)


def _integer_wrongs(answer: int, extra: list[int]) -> list[str]:
    candidates = [str(v) for v in [*extra, answer + 1, answer - 1, answer + 10]]
    return wrong_answers(str(answer), candidates, lambda t: strict_integer(t) == answer)


class SignedSubtraction(AnswerDomain):
    """`a - b` where the result is negative: a < b, and from d=4 `a` may be negative too."""

    id = "num/subtract-signed-v1"
    axes = _EXACT
    instructions = _INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        digits = 1 + (difficulty - 1) * 7 // 9  # 1..8
        b = number_with_digits(rng, digits) if digits > 1 else rng.randint(2, 9)
        a = rng.randint(0, b - 1)
        if difficulty >= 4 and rng.random() < 0.5:
            a = -a
        shown = f"({a})" if a < 0 else str(a)
        return Problem(
            f"Compute {shown} - {b}.",
            str(a - b),
            {"a": a, "b": b},
            measure=2 * digits,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the difference")

    def wrong(self, task: Task) -> list[str]:
        answer = int(task.answer)
        # The sign dropped, and the operands added instead of subtracted.
        return _integer_wrongs(answer, [-answer, task.meta["a"] + task.meta["b"]])


_MULTIPLY_DIGITS = [(2, 1), (2, 2), (3, 2), (3, 3), (4, 3), (4, 4), (5, 4), (5, 5), (6, 5), (6, 6)]


class LongMultiplication(AnswerDomain):
    """`a × b` with multi-digit operands: (2, 1) digits at d=1 up to (6, 6) at d=10."""

    id = "num/long-multiply-v1"
    axes = _EXACT
    instructions = _INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        da, db = _MULTIPLY_DIGITS[difficulty - 1]
        a = number_with_digits(rng, da)
        b = number_with_digits(rng, db) if db > 1 else rng.randint(2, 9)
        return Problem(f"Compute {a} * {b}.", str(a * b), {"a": a, "b": b}, measure=da + db)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the product")

    def wrong(self, task: Task) -> list[str]:
        a, b = task.meta["a"], task.meta["b"]
        # A partial product left out, or a partial product not shifted by its place value.
        dropped = a * (b - b % 10)
        unshifted = a * (b % 10) + a * (b // 10)
        return _integer_wrongs(a * b, [dropped, unshifted, a * b * 10])


_ADD_MULTIPLY_DIGITS = [(1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (4, 3), (4, 4), (5, 4), (5, 5),
                        (6, 6)]  # fmt: skip


class AddOrMultiply(AnswerDomain):
    """`a + b` or `a * b` (even odds), (1, 1) digits at d=1 up to (6, 6) at d=10; d=3 is
    two-digit by two-digit, the task of bench/learn.py."""

    id = "num/add-multiply-v1"
    axes = _EXACT
    instructions = _INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        da, db = _ADD_MULTIPLY_DIGITS[difficulty - 1]
        a, b = number_with_digits(rng, da), number_with_digits(rng, db)
        op = rng.choice("+*")
        answer = a + b if op == "+" else a * b
        return Problem(f"Compute {a} {op} {b}.", str(answer), {"a": a, "b": b, "op": op},
                       measure=da + db)  # fmt: skip

    def judge(self, task: Task, text: str) -> Verdict:
        expected = int(task.answer)
        got = strict_integer(text)
        components = {"format": float(got is not None),
                      "correct": float(last_integer(text) == expected)}  # fmt: skip
        what = "the sum" if task.meta["op"] == "+" else "the product"
        if got is None:
            return verdict(False, what, components=components, why="the text is not one integer")
        return verdict(got == expected, what, components=components, why=f"got {got}")

    def wrong(self, task: Task) -> list[str]:
        a, b, answer = task.meta["a"], task.meta["b"], int(task.answer)
        # The other operation, and a carry dropped in the last place.
        other = a * b if task.meta["op"] == "+" else a + b
        return _integer_wrongs(answer, [other, answer - 10])


_DIVMOD = re.compile(r"([0-9]+) ([0-9]+)")


class DivisionWithRemainder(AnswerDomain):
    """Integer division `n ÷ m`: the answer is `Q R` with n = Q·m + R and 0 ≤ R < m."""

    id = "num/divmod-v1"
    axes = _EXACT
    instructions = (
        "Reply with the quotient and the remainder as two integers separated by one space, "
        "quotient first (for 17 divided by 5: 3 2), and nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        divisor_digits = 1 + (difficulty - 1) // 3  # 1..4
        dividend_digits = difficulty + 1  # 2..11
        m = number_with_digits(rng, divisor_digits) if divisor_digits > 1 else rng.randint(2, 9)
        n = number_with_digits(rng, dividend_digits)
        if n % m == 0:
            n += rng.randint(1, m - 1)  # a zero remainder makes the task half as informative
        q, r = divmod(n, m)
        return Problem(
            f"Divide {n} by {m} (integer division).",
            f"{q} {r}",
            {"n": n, "m": m},
            measure=divisor_digits + dividend_digits,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        want = "the quotient and remainder as 'Q R'"
        match = _DIVMOD.fullmatch(text.strip()) if len(text) < 200 else None
        if match is None:
            components = {"format": 0.0, "quotient": 0.0, "remainder": 0.0}
            return verdict(False, want, components=components, why="the text is not 'Q R'")
        q, r = (int(g) for g in match.groups())
        true_q, true_r = divmod(task.meta["n"], task.meta["m"])
        components = {
            "format": 1.0,
            "quotient": float(q == true_q),
            "remainder": float(r == true_r),
        }
        passed = q == true_q and r == true_r
        reward = (components["quotient"] + components["remainder"]) / 2
        return verdict(passed, want, components=components, reward=reward, why=f"got {q} {r}")

    def wrong(self, task: Task) -> list[str]:
        n, m = task.meta["n"], task.meta["m"]
        q, r = divmod(n, m)
        off_r = r + 1 if r + 1 < m else r - 1
        return [f"{q} {off_r}", f"{q + 1} {r}", f"{q - 1} {r + m}", str(q), f"{r} {q}"]


# -- expressions ------------------------------------------------------------------------

_PRECEDENCE = {"+": 1, "-": 1, "*": 2}
Node = int | tuple[str, "Node", "Node"]


def _tree(rng: random.Random, leaves: int, high: int) -> Node:
    if leaves == 1:
        return rng.randint(1, high)
    left = rng.randint(1, leaves - 1)
    op = rng.choice("+-*+-*+-")
    return (op, _tree(rng, left, high), _tree(rng, leaves - left, high))


def _value(node: Node) -> int:
    if isinstance(node, int):
        return node
    op, left, right = node
    a, b = _value(left), _value(right)
    return a + b if op == "+" else a - b if op == "-" else a * b


def _render(node: Node) -> str:
    """Infix text with exactly the parentheses the tree's shape needs."""
    if isinstance(node, int):
        return str(node)
    op, left, right = node
    left_text, right_text = _render(left), _render(right)
    if not isinstance(left, int) and _PRECEDENCE[left[0]] < _PRECEDENCE[op]:
        left_text = f"({left_text})"
    if not isinstance(right, int) and (
        _PRECEDENCE[right[0]] < _PRECEDENCE[op]
        or (_PRECEDENCE[right[0]] == _PRECEDENCE[op] and op != "*" and op != right[0])
        or (op == "-" and right[0] == "-")
    ):
        right_text = f"({right_text})"
    return f"{left_text} {op} {right_text}"


def _left_to_right(text: str) -> int:
    """The value when every operator binds equally (parentheses still respected): the
    mistake of ignoring precedence."""
    tokens = re.findall(r"[0-9]+|[-+*()]", text)
    pos = 0

    def expr() -> int:
        nonlocal pos
        total = atom()
        while pos < len(tokens) and tokens[pos] != ")":
            op = tokens[pos]
            pos += 1
            b = atom()
            total = total + b if op == "+" else total - b if op == "-" else total * b
        return total

    def atom() -> int:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        if token == "(":
            inner = expr()
            pos += 1  # the closing parenthesis
            return inner
        return int(token)

    return expr()


class ExpressionValue(AnswerDomain):
    """Evaluate `+ - *` expressions with usual precedence and parentheses; d+1 terms."""

    id = "num/expression-v1"
    axes = _EXACT
    instructions = (
        "Multiplication binds tighter than addition and subtraction, which go left to "
        "right. " + _INTEGER_ONLY
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        terms = difficulty + 1
        high = 9 if difficulty <= 3 else 20 if difficulty <= 7 else 50
        tree = _tree(rng, terms, high)
        text = _render(tree)
        return Problem(
            f"Evaluate this expression: {text}",
            str(_value(tree)),
            {"expression": text},
            measure=terms,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the expression's value")

    def wrong(self, task: Task) -> list[str]:
        answer = int(task.answer)
        return _integer_wrongs(answer, [_left_to_right(task.meta["expression"]), -answer])


DOMAINS: tuple[AnswerDomain, ...] = (
    SignedSubtraction(),
    LongMultiplication(),
    AddOrMultiply(),
    DivisionWithRemainder(),
    ExpressionValue(),
)
