"""Gates for answer text that a third-party scorer will evaluate as code.

Some reasoning-gym scorers run the model's answer through Python's `eval` (to read a
list literal) or SymPy's `parse_expr` (which ends in `eval` too). An answer is model
output, so either is arbitrary code execution in the process that scores every later
rollout: one answer could patch a scorer to pass everything after it. These checks
run first, on the syntax tree, and let through only what the scorer legitimately
needs:

    is_literal("[[1, 2], [3, 4]]")                           # True: a list literal
    is_literal("1 2 3")                                      # True: eval cannot run it
    is_literal("oracle_answer")                              # False: a name reads the scorer's variable
    is_literal("__import__('os').getcwd()")                  # False
    is_arithmetic("(33*87 + 61)/13")                         # True
    is_arithmetic("3*X**9/5 + C", names={"X", "C"}, power=True)   # True
    is_arithmetic("Integral(X**2, X)", names={"X"}, power=True)   # False: a call
    is_arithmetic("9**(9)**8", power=True)                   # False: a power in an exponent

`is_arithmetic` also bounds what the text can make SymPy build, since evaluating it
has no timeout: with `power`, an exponent is a name or a number (arithmetic of
constants) of size at most `MAX_EXPONENT`; the numbers it writes, raises and passes
to growing functions (`exp(k*log(9))` is `9**k` to SymPy) stay under `MAX_DIGITS`
digits by an estimate that reads every name as 10; and with `max_degree`, so does its
degree in its names with products and powers multiplied out (SymPy's `simplify`
expands them).

Not guaranteed: `is_literal` allows text that Python cannot parse (eval then raises
before running anything); `is_arithmetic` does not, because SymPy rewrites text
before evaluating it (`3!` becomes a call). Text nested too deeply or too long for
Python's parser (it raises RecursionError or MemoryError) is refused by both: eval,
parsing at another stack depth, might still run it. The size bounds are estimates of
what SymPy's evaluation builds, not of the time its simplification takes; callers
that simplify still cap the text's length.

`parse_model_text` is `ast.parse` for model output: the compiler's warnings about it
("invalid decimal literal" for `12abc`, invalid escapes) are dropped, since a run
parses thousands of answers and would print one line per new mistake.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Collection
from fractions import Fraction

# SymPy functions an antiderivative may use; calling them runs no user code.
MATH_FUNCTIONS = frozenset(
    {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log",
     "sqrt", "Abs"}
)  # fmt: skip
MAX_EXPONENT = 100  # with `power`, the largest |n| in `x**n`
MAX_DIGITS = 10_000  # the most digits a number built from the text may have (estimated)
# Functions whose value grows no faster than their argument's; any other function is
# read as exponential: SymPy rewrites exp(k*log(9)) (and sinh, cosh ...) as 9**k.
_TAME_FUNCTIONS = frozenset({"sin", "cos", "tan", "asin", "acos", "atan", "log", "sqrt", "Abs"})
_NAME_DIGITS = 1.0  # every name is read as 10 when sizes are estimated
# No bare name: the scorers that eval an answer do it in their own function, so a name
# reads their variables (`oracle_answer` is the gold answer in three of them).
_LITERAL = (ast.Expression, ast.List, ast.Tuple, ast.Constant, ast.UnaryOp, ast.USub,
            ast.UAdd, ast.Load)  # fmt: skip
_ARITHMETIC_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


_MODEL_TEXT = "<model text>"  # the file name the compiler's warnings carry
for _category in (SyntaxWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=re.escape(_MODEL_TEXT))


def parse_model_text(text: str) -> ast.Expression:
    """`ast.parse(text, mode="eval")` without the compiler's warnings (module
    docstring); it raises what `ast.parse` raises."""
    return ast.parse(text, filename=_MODEL_TEXT, mode="eval")


def _trees(text: str) -> list[ast.Expression] | None:
    """`text` and its stripped form parsed as Python expressions (those that parse);
    None when the parser gives up on nesting or size, as eval's own parse may not."""
    trees = []
    for candidate in {text, text.strip()}:
        try:
            trees.append(parse_model_text(candidate))
        except (SyntaxError, ValueError):  # ValueError: a null byte
            continue
        except (RecursionError, MemoryError):  # "1+" * 5000 + "1", "-" * 100_000 + "1"
            return None
    return trees


def is_literal(text: str) -> bool:
    """Whether Python's `eval(text)` can only build a literal (lists, tuples, numbers,
    strings; no names): True also when the text does not parse, since eval then runs
    nothing; False when it is too deeply nested or too long to check."""
    trees = _trees(text)
    if trees is None:
        return False
    return all(all(isinstance(node, _LITERAL) for node in ast.walk(tree)) for tree in trees)


def is_arithmetic(
    text: str,
    names: Collection[str] = (),
    functions: Collection[str] = (),
    power: bool = False,
    max_degree: float | None = None,
) -> bool:
    """Whether `text` is plain arithmetic of bounded size: numbers, the given `names`,
    calls of the given `functions` with positional arguments, + − × ÷ (and ** with
    `power`, its exponent a name or a number up to `MAX_EXPONENT`), building no number
    over `MAX_DIGITS` digits and, with `max_degree`, of at most that degree in its
    names (module docstring). False when it does not parse as Python, or is too deeply
    nested or too long to check."""
    trees = _trees(text.strip())
    if not trees:  # None (too deep to check) or [] (not Python)
        return False
    ops = (*_ARITHMETIC_OPS, ast.Pow) if power else _ARITHMETIC_OPS
    for node in ast.walk(trees[0]):
        if isinstance(node, ast.Call):
            func = node.func
            if not (isinstance(func, ast.Name) and func.id in functions) or node.keywords:
                return False
        elif isinstance(node, ast.Name):
            if node.id not in names and node.id not in functions:
                return False
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                return False
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, ops):
                return False
        elif not isinstance(
            node, (ast.Expression, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load, *ops)
        ):
            return False
    sizes = _sizes(trees[0], names)
    if sizes is None:
        return False
    digits, degree = sizes
    return digits <= MAX_DIGITS and (max_degree is None or degree <= max_degree)


def _sizes(tree: ast.Expression, names: Collection[str]) -> tuple[float, float] | None:
    """Upper bounds on (the digits of any number SymPy builds evaluating `tree`, its
    degree in its names), every name read as 10; None when an exponent is not a name or
    a number of size at most `MAX_EXPONENT`. Children are sized before their parents
    (reversed breadth-first order), so no recursion however deep the tree."""
    digits: dict[ast.AST, float] = {}
    degree: dict[ast.AST, float] = {}
    for node in reversed(list(ast.walk(tree))):
        if isinstance(node, ast.Constant):
            digits[node], degree[node] = _constant_digits(node.value), 0.0
        elif isinstance(node, ast.Name):
            digits[node], degree[node] = _NAME_DIGITS, 1.0
        elif isinstance(node, ast.UnaryOp):
            digits[node], degree[node] = digits[node.operand], degree[node.operand]
        elif isinstance(node, ast.Call):
            arg_digits = max((digits[a] for a in node.args), default=0.0)
            arg_degree = max((degree[a] for a in node.args), default=0.0)
            if not (isinstance(node.func, ast.Name) and node.func.id in _TAME_FUNCTIONS):
                # exp(v) has about |v| / ln 10 digits, and |v| < 10 ** arg_digits
                arg_digits = 10.0 ** min(arg_digits, 300.0) / math.log(10)
            digits[node], degree[node] = arg_digits, max(arg_degree, 1.0)
        elif isinstance(node, ast.BinOp):
            left, right = node.left, node.right
            if isinstance(node.op, ast.Pow):
                size = _exponent_size(right, names)
                if size is None:
                    return None
                digits[node], degree[node] = digits[left] * size, degree[left] * size
            elif isinstance(node.op, (ast.Add, ast.Sub)):  # a/b + c/d = (ad + bc)/bd
                digits[node] = digits[left] + digits[right] + 1.0
                degree[node] = max(degree[left], degree[right])
            else:
                digits[node] = digits[left] + digits[right]
                degree[node] = degree[left] + degree[right]
    return digits[tree.body], degree[tree.body]


def _constant_digits(value: object) -> float:
    """Digits of a number constant (of its reciprocal too: 1e-300 builds 10**300)."""
    magnitude = abs(value) if isinstance(value, int | float) else 0
    if magnitude == 0:
        return 0.0
    if isinstance(value, int):
        return math.log10(magnitude + 1)
    return math.log10(max(magnitude, 1 / magnitude) + 1)  # inf (1e999) stays inf


def _exponent_size(node: ast.expr, names: Collection[str]) -> float | None:
    """max(1, |exponent|) for a name (read as 10) or a number written with + − × ÷ of
    constants, when at most `MAX_EXPONENT`; None for anything else (a power inside)."""
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Name):
        return 10.0 if node.id in names else None
    try:
        value = abs(_constant_value(node))
    except (ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    return max(float(value), 1.0) if value <= MAX_EXPONENT else None


def _constant_value(node: ast.expr) -> Fraction:
    """The exact value of + − × ÷ of int and float constants; ValueError for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return Fraction(node.value)  # inf and nan raise (OverflowError, ValueError)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _constant_value(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC_OPS):
        a, b = _constant_value(node.left), _constant_value(node.right)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        return a * b if isinstance(node.op, ast.Mult) else a / b
    raise ValueError("not a number")
