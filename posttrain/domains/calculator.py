"""`tools/calculator-v1`: multiply two numbers by calling a calculator tool.

The prompt is one user message, `"calc 482*37"`; the operands are long enough
(even at difficulty 1) that a tiny model cannot multiply them in its head, so it
must call the `calculator` tool and then state the result. Difficulty sets the
digit counts: `a` has `2 + (d - 1) // 5` (2..3), `b` has `1 + (d - 1) // 3` (1..4;
a one-digit `b` is 2..9).

`open(task)` gives a `CalculatorSession` whose one tool evaluates integer
expressions (`+ - * // %`, parentheses, unary minus) with a small AST walker,
never `eval`: at most 200 characters, every intermediate result at most 10**30 in
absolute value. Bad calls come back as `Observation(error=True)`; only a call
after `close()` raises, since that is the caller's bug.

The verdict has three components: `format` (the final text is exactly one
integer), `correct` (the last integer in the final text is the product) and
`used_tool` (some turn called the calculator on an expression with at least one
operation that evaluates to the product); the reward is 1 only when all hold.

Not guaranteed: `used_tool` checks the calls recorded in the rollout, not that
the model read the observation; difficulties 1 and 2 share operand lengths.
"""

from __future__ import annotations

import ast
import copy
import operator
import random
from collections.abc import Callable
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.tools.parse import format_tool_call, function_schema
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict
from posttrain.verify.answers import last_integer, strict_integer
from posttrain.verify.safe_expr import parse_model_text

MAX_EXPRESSION_CHARS = 200
MAX_RESULT = 10**30
TOOL_NAME = "calculator"

_OPERATORS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Pow: "**",
    ast.Div: "/",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.Invert: "~",
    ast.Not: "not",
}
_FORBIDDEN: dict[type[ast.AST], str] = {
    ast.Call: "function calls",
    ast.Name: "names",
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Compare: "comparisons",
    ast.BoolOp: "boolean operators",
    ast.Lambda: "lambdas",
}


class CalculatorError(ValueError):
    """An expression the calculator refuses; the message says why."""


def evaluate_expression(expression: str) -> int:
    """The value of an integer expression; CalculatorError when it is not allowed.

    >>> evaluate_expression("(7 - 2) * -3 // 2")
    -8
    """
    if not isinstance(expression, str):
        raise CalculatorError("the expression must be a string")
    text = expression.strip()
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = parse_model_text(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise CalculatorError("the expression is not valid arithmetic syntax") from None
    return _evaluate(tree.body)


def _bounded(value: int) -> int:
    if abs(value) > MAX_RESULT:
        raise CalculatorError("a result exceeds 10**30 in absolute value")
    return value


def _unsupported(op: ast.AST) -> CalculatorError:
    symbol = _SYMBOLS.get(type(op), type(op).__name__)
    return CalculatorError(f"operator {symbol} is not supported; use + - * // % ( )")


def _evaluate(node: ast.AST) -> int:
    if isinstance(node, ast.Constant):
        if type(node.value) is not int:
            kind = type(node.value).__name__
            raise CalculatorError(
                f"{kind} literals are not allowed; use integers with + - * // % ( )"
            )
        return _bounded(node.value)
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd):
            raise _unsupported(node.op)
        value = _evaluate(node.operand)
        return _bounded(-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp):
        apply = _OPERATORS.get(type(node.op))
        if apply is None:
            raise _unsupported(node.op)
        left, right = _evaluate(node.left), _evaluate(node.right)
        if right == 0 and isinstance(node.op, ast.FloorDiv | ast.Mod):
            raise CalculatorError("division by zero")
        return _bounded(apply(left, right))
    what = _FORBIDDEN.get(type(node), f"{type(node).__name__} expressions")
    raise CalculatorError(f"{what} are not allowed; use integers with + - * // % ( )")


def _computes(expression: str) -> bool:
    """True when the expression holds at least one binary operation (not a bare number)."""
    try:
        tree = parse_model_text(expression.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, ast.BinOp) for node in ast.walk(tree))


CALCULATOR_SCHEMA = function_schema(
    TOOL_NAME,
    "Evaluate an integer arithmetic expression with + - * // % and parentheses.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)


class CalculatorSession:
    """One episode's calculator: evaluates calls and records every call made."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.tools: list[dict[str, Any]] = [copy.deepcopy(CALCULATOR_SCHEMA)]
        self.calls: list[ToolCall] = []
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed CalculatorSession")
        arguments = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        # A shallow copy: model-made arguments can nest too deeply for copy.deepcopy.
        self.calls.append(ToolCall(tool_call.name, dict(arguments), tool_call.id))
        if tool_call.name != TOOL_NAME:
            shown = tool_call.name[:40]
            message = f"error: unknown tool {shown!r}; the only tool is {TOOL_NAME!r}"
            return Observation(message, error=True)
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            return Observation("error: missing string argument 'expression'", error=True)
        try:
            value = evaluate_expression(expression)
        except CalculatorError as exc:
            return Observation(f"error: {exc}", error=True)
        return Observation(str(value))

    def user_turn(self, assistant_message: Message) -> Message | None:
        """No scripted user: the episode ends at the first answer without tool calls."""
        return None

    def snapshot(self) -> list[ToolCall]:
        """The calls made so far (recorded calls are never mutated, so a list copy will do)."""
        return list(self.calls)

    def restore(self, snapshot: Any) -> None:
        self.calls = list(snapshot)

    def close(self) -> None:
        self.closed = True


def _operands(rng: random.Random, difficulty: int) -> tuple[int, int]:
    a_digits = 2 + (difficulty - 1) // 5
    b_digits = 1 + (difficulty - 1) // 3
    a = rng.randint(10 ** (a_digits - 1), 10**a_digits - 1)
    b = rng.randint(2, 9) if b_digits == 1 else rng.randint(10 ** (b_digits - 1), 10**b_digits - 1)
    return a, b


def _tool_turn(expression: str) -> Message:
    call = ToolCall(TOOL_NAME, {"expression": expression}, id="call_0")
    return Message("assistant", format_tool_call(call), tool_calls=[call])


def _used_tool(rollout: Rollout, value: int) -> bool:
    for turn in rollout.turns:
        for call in turn.tool_calls:
            if call.name != TOOL_NAME or not isinstance(call.arguments, dict):
                continue
            expression = call.arguments.get("expression")
            if not isinstance(expression, str):
                continue
            try:
                result = evaluate_expression(expression)  # checks the length before parsing
            except CalculatorError:
                continue
            if result == value and _computes(expression):
                return True
    return False


class CalculatorDomain:
    """Multiply two numbers with the calculator tool, then state the product."""

    id = "tools/calculator-v1"
    axes = Axes("text", "simulated_api", "multi", "exact")
    max_turns = 3

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        a, b = _operands(rng, difficulty)
        expression = f"{a}*{b}"
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", f"calc {expression}")],
            answer=str(a * b),
            difficulty=difficulty,
            seed=seed,
            meta={"operands": [a, b], "expression": expression},
        )

    def open(self, task: Task, sandbox: object | None = None) -> CalculatorSession:
        """A fresh calculator for one episode of `task`; `sandbox` is not used."""
        return CalculatorSession(task)

    def reference(self, task: Task) -> Reference:
        return Reference([_tool_turn(task.meta["expression"]), Message("assistant", task.answer)])

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text if isinstance(rollout.final_text, str) else ""
        expected = int(task.answer)
        well_formed = strict_integer(text) is not None
        correct = last_integer(text) == expected
        used_tool = _used_tool(rollout, expected)
        components = {
            "format": float(well_formed),
            "correct": float(correct),
            "used_tool": float(used_tool),
        }
        if well_formed and correct and used_tool:
            reason = "The product is correct and was computed with the calculator."
        elif not text.strip():
            reason = "The final text is empty."
        elif not well_formed and not correct:
            reason = "The final text is not an integer and does not end with the product."
        elif not correct:
            reason = f"The answer is not the product; expected {expected}."
        elif not well_formed:
            reason = "The product appears, but the final text is not just the integer."
        else:
            reason = "The answer is right, but no calculator call computed it."
        passed = well_formed and correct and used_tool
        return Verdict(float(passed), passed, reason, components)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """A tool call then a wrong product, the product with no tool call, and a call on
        the wrong expression followed by its value."""
        a, b = task.meta["operands"]
        value = int(task.answer)
        tool_turn = _tool_turn(task.meta["expression"])
        wrong_expression = f"{a}*{b + 1}"
        return [
            Reference([tool_turn, Message("assistant", str(value + 1))]),
            Reference.single(str(value)),
            Reference(
                [_tool_turn(wrong_expression), Message("assistant", str(a * (b + 1)))],
            ),
        ]

    def difficulty_measure(self, task: Task) -> float:
        """The operands' total digit count."""
        return float(sum(len(str(x)) for x in task.meta["operands"]))
