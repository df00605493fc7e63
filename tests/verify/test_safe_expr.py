"""The syntax gates in front of scorers that evaluate answer text as code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from posttrain.verify.safe_expr import MATH_FUNCTIONS, is_arithmetic, is_literal


@pytest.mark.parametrize(
    "text",
    ["[[1, 2], [3, 4]]", "('A', 'B')", "[-1, 2.5]", "1 2 3\n4 5 6", "['A', 'B']", "  [1]", ""],
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


@pytest.mark.parametrize(
    "text",
    ["oracle_answer", "[oracle_answer]", "[[oracle_answer]]", "(entry, 1)", "ABCDE", "[A, B]"],
)
def test_a_name_is_not_a_literal(text: str) -> None:
    # A scorer that evals the answer in its own function reads its variables through a
    # name: `oracle_answer` is the gold answer in three reasoning-gym scorers.
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
    ["9**(9)**8", "9**+9**9", "9**-(-9**9)", "(9)**(9)**(9)", "2**+99999", "9**9**9**9",
     "9**(9**9)", "X**(99*99*99*99)", "X**(X + 99999999)", "9**(1/0)", "X**1e999",
     "(((9**100)**100)**100)**100", "exp(999999999*log(9))", "cosh(99999*log(9))",
     "1e999*X", "9^9^9"],
)  # fmt: skip
def test_powers_that_would_build_a_huge_number_are_not_arithmetic(text: str) -> None:
    # SymPy's parse_expr computes the number inline, with no timeout (9**(9)**8: 30+ s).
    assert not is_arithmetic(text, {"X", "C"}, MATH_FUNCTIONS, power=True)


@pytest.mark.parametrize(
    "text",
    ["X**11/11 + C", "X**(2+1)/3 + C", "X**(3)", "X**-1", "X**2.0", "X**(1/2)", "2**100",
     "(9**100)**100", "exp(99*log(9))", "9**X", "X**C", "-cos(X) + exp(2*X)/2 + C"],
)  # fmt: skip
def test_powers_with_small_exponents_are_arithmetic(text: str) -> None:
    assert is_arithmetic(text, {"X", "C"}, MATH_FUNCTIONS, power=True)


def test_the_degree_is_bounded_when_asked() -> None:
    # SymPy's simplify expands products: 64 distinct linear factors take it 8 s.
    product = "*".join(f"(X+{k})" for k in range(2, 66))
    assert is_arithmetic(product, {"X"}) and not is_arithmetic(product, {"X"}, max_degree=16)
    assert not is_arithmetic("(X+1)**17", {"X"}, power=True, max_degree=16)
    assert not is_arithmetic("((X+1)**4)**5", {"X"}, power=True, max_degree=16)
    assert is_arithmetic("(X+1)**4*(X-1)**12 + X**16/16", {"X"}, power=True, max_degree=16)


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
