"""The syntax gates in front of scorers that evaluate answer text as code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from posttrain.verify.safe_expr import MATH_FUNCTIONS, is_arithmetic, is_literal


@pytest.mark.parametrize(
    "text",
    ["[[1, 2], [3, 4]]", "('A', 'B')", "[-1, 2.5]", "1 2 3\n4 5 6", "ABCDE", "[A, B]", "  [1]", ""],
)
def test_literals_and_text_eval_cannot_run_pass(text: str) -> None:
    assert is_literal(text)


@pytest.mark.parametrize(
    "text",
    ["__import__('os').getcwd()", "[open('x')]", "(1).real", "[x for x in y]", "a[0]",
     "lambda: 0", " print(1)"],
)  # fmt: skip
def test_calls_names_and_attributes_are_not_literals(text: str) -> None:
    assert not is_literal(text)


def test_arithmetic_allows_only_the_given_names_functions_and_operators() -> None:
    assert is_arithmetic("(33*87 + 61 + 58)/13")
    assert is_arithmetic(" 15 + 180 - 45 ")
    assert not is_arithmetic("2**10")  # no power unless asked
    assert is_arithmetic("2**10", power=True)
    assert not is_arithmetic("len('ab') + 1")
    assert not is_arithmetic("3!")  # does not parse as Python: refused, SymPy would rewrite it
    assert not is_arithmetic("True + 1") and not is_arithmetic("'a' + 'b'")
    names = {"X", "C"}
    assert is_arithmetic("3*X**9/5 + 7*X**5 + C", names, MATH_FUNCTIONS, power=True)
    assert is_arithmetic("-cos(X) + exp(2*X)/2 + C", names, MATH_FUNCTIONS, power=True)
    assert not is_arithmetic("Integral(X**2, X) + C", names, MATH_FUNCTIONS, power=True)
    assert not is_arithmetic("Y + C", names, MATH_FUNCTIONS, power=True)
    assert not is_arithmetic("sin(X, evaluate=False)", names, MATH_FUNCTIONS, power=True)
    assert not is_arithmetic("X.subs(X, 1)", names, MATH_FUNCTIONS, power=True)


@pytest.mark.parametrize(
    "text",
    ["1+" * 100_000 + "1", "-" * 100_000 + "1", "~" * 100_000 + "1", "1+" * 5000 + "len('x')"],
)
def test_text_too_deep_for_the_parser_is_refused_not_raised(text: str) -> None:
    assert not is_literal(text)
    assert not is_arithmetic(text)


SCRIPT = r"""
import ast
from posttrain.domains.calculator import evaluate_expression
from posttrain.verify.safe_expr import is_arithmetic, is_literal
for text in ("12abc", "0x1for", '"\\d"', "1 if 2else 3"):
    is_literal(text), is_arithmetic(text)
    try:
        evaluate_expression(text)
    except Exception:
        pass
ast.parse('"\\q"', mode="eval")  # not model text: still warned
"""


def test_model_text_parses_without_compiler_warnings_on_stderr() -> None:
    """`12abc` and `"\\d"` make the compiler warn; a run would print them, one per new
    mistake. `-W default` shows every warning that is not filtered out."""
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-c", SCRIPT], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Warning") == 1 and "\\q" in proc.stderr, proc.stderr
