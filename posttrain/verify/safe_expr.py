"""Gates for answer text that a third-party scorer will evaluate as code.

Some reasoning-gym scorers run the model's answer through Python's `eval` (to read a
list literal) or SymPy's `parse_expr` (which ends in `eval` too). An answer is model
output, so either is arbitrary code execution in the process that scores every later
rollout: one answer could patch a scorer to pass everything after it. These checks
run first, on the syntax tree, and let through only what the scorer legitimately
needs:

    is_literal("[[1, 2], [3, 4]]")                           # True: a list literal
    is_literal("1 2 3")                                      # True: eval cannot run it
    is_literal("__import__('os').getcwd()")                  # False
    is_arithmetic("(33*87 + 61)/13")                         # True
    is_arithmetic("3*X**9/5 + C", names={"X", "C"}, power=True)   # True
    is_arithmetic("Integral(X**2, X)", names={"X"}, power=True)   # False: a call

Not guaranteed: `is_literal` allows text that Python cannot parse (eval then raises
before running anything); `is_arithmetic` does not, because SymPy rewrites text
before evaluating it (`3!` becomes a call). Text nested too deeply or too long for
Python's parser (it raises RecursionError or MemoryError) is refused by both: eval,
parsing at another stack depth, might still run it. Size is not bounded otherwise:
`9**9**9` with `power=True` is arithmetic; callers that allow powers cap the text's length.

`parse_model_text` is `ast.parse` for model output: the compiler's warnings about it
("invalid decimal literal" for `12abc`, invalid escapes) are dropped, since a run
parses thousands of answers and would print one line per new mistake.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Collection

# SymPy functions an antiderivative may use; calling them runs no user code.
MATH_FUNCTIONS = frozenset(
    {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log",
     "sqrt", "Abs"}
)  # fmt: skip
# A bare name is allowed: evaluating it calls nothing (string_insertion's answers are
# letters, which parse as one).
_LITERAL = (ast.Expression, ast.List, ast.Tuple, ast.Constant, ast.Name, ast.UnaryOp,
            ast.USub, ast.UAdd, ast.Load)  # fmt: skip
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
    strings, bare names): True also when the text does not parse, since eval then runs
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
) -> bool:
    """Whether `text` is plain arithmetic: numbers, the given `names`, calls of the given
    `functions` with positional arguments, + − × ÷ (and ** with `power`). False when it
    does not parse as Python, or is too deeply nested or too long to check."""
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
    return True
