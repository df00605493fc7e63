"""Generated straight-line Python snippets and the tiny interpreter that traces them.

    program = generate_program(rng, difficulty, printing=True, with_input=False)
    print(program.source)          # the Python text shown to the model
    run = program.run              # output lines, final variables, per-line counts

A snippet is a list of integer assignments, `print`s, `for ... in range(...)` loops and
`if` statements (no `else`, so every line's execution count is unambiguous), and for
printing snippets also a string `s` and a list `xs`. We never `exec` text: the answer
comes from `execute`, which walks our own statement tree with Python's own operators,
so `//` and `%` (always by a positive constant) follow Python's floor semantics.

Not guaranteed: generation rejects and redraws snippets whose values grow past 10**6,
that run more than 4,000 statements or print more than 24 lines, so a difficulty's
line count is fixed (`size_for`) but its running time is bounded only by these caps.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

# Expressions are tuples: ("c", int), ("v", name), ("b", op, left, right), ("len",), ("sum",)
Expr = tuple[Any, ...]

_PREC = {"<": 0, ">": 0, "==": 0, "!=": 0, "+": 1, "-": 1, "*": 2, "//": 2, "%": 2}
_LIMIT = 10**6
_MAX_STEPS = 4_000
_MAX_OUTPUT = 24


class Rejected(Exception):
    """The drawn snippet breaks a cap; the generator draws another."""


@dataclass
class Stmt:
    """One statement; `line` is its 1-based line in the rendered source."""

    kind: str  # init | assign | aug | print | append | strcat | for | if
    target: str = ""
    expr: Expr = ()
    args: tuple[Any, ...] = ()
    body: list[Stmt] = field(default_factory=list)
    line: int = 0


@dataclass
class Run:
    """What executing a snippet did."""

    output: list[str]
    env: dict[str, Any]
    counts: dict[int, int]  # line -> times executed (0 for never)


@dataclass
class Program:
    stmts: list[Stmt]
    source: str
    run: Run
    ints: list[str]  # integer variables, input `n` excluded
    loop_lines: list[int]  # simple statements inside at least one loop


def render_expr(e: Expr, parent: int = -1, right: bool = False) -> str:
    if e[0] == "c":
        return str(e[1])
    if e[0] == "v":
        return str(e[1])
    if e[0] == "len":
        return "len(xs)"
    if e[0] == "sum":
        return "sum(xs)"
    op = e[1]
    text = f"{render_expr(e[2], _PREC[op])} {op} {render_expr(e[3], _PREC[op], True)}"
    if _PREC[op] < parent or (right and _PREC[op] == parent):
        return f"({text})"
    return text


def eval_expr(e: Expr, env: dict[str, Any]) -> Any:
    if e[0] == "c":
        return e[1]
    if e[0] == "v":
        return env[e[1]]
    if e[0] == "len":
        return len(env["xs"])
    if e[0] == "sum":
        return sum(env["xs"])
    a, b = eval_expr(e[2], env), eval_expr(e[3], env)
    ops = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "//": lambda: a // b,
        "%": lambda: a % b,
        "<": lambda: a < b,
        ">": lambda: a > b,
        "==": lambda: a == b,
        "!=": lambda: a != b,
    }
    value = ops[e[1]]()
    if isinstance(value, int) and abs(value) > _LIMIT:
        raise Rejected("value too large")
    return value


def render(stmts: list[Stmt]) -> str:
    lines: list[str] = []

    def emit(block: list[Stmt], indent: int) -> None:
        pad = "    " * indent
        for s in block:
            s.line = len(lines) + 1
            lines.append(pad + _render_stmt(s))
            if s.kind in ("for", "if"):
                emit(s.body, indent + 1)

    emit(stmts, 0)
    return "\n".join(lines)


def _render_stmt(s: Stmt) -> str:
    if s.kind == "init":
        return 's = ""' if s.target == "s" else "xs = []"
    if s.kind == "assign":
        return f"{s.target} = {render_expr(s.expr)}"
    if s.kind == "aug":
        return f"{s.target} {s.args[0]}= {render_expr(s.expr)}"
    if s.kind == "print":
        return "print(" + ", ".join(render_expr(a) for a in s.args) + ")"
    if s.kind == "append":
        return f"xs.append({render_expr(s.expr)})"
    if s.kind == "strcat":
        return f"s += {s.args[0]!r}" if not s.expr else f"s += str({render_expr(s.expr)})"
    if s.kind == "for":
        start, stop, step = s.args
        bounds = f"{start}, {stop}" + (f", {step}" if step != 1 else "")
        return f"for {s.target} in range({bounds}):"
    return f"if {render_expr(s.expr)}:"


def execute(stmts: list[Stmt], env: dict[str, Any]) -> Run:
    """Run the statement tree on `env` (changed in place); raises `Rejected` past a cap."""
    output: list[str] = []
    counts: dict[int, int] = {}
    steps = [0]

    def visit(block: list[Stmt]) -> None:
        for s in block:
            counts[s.line] = counts.get(s.line, 0) + 1
            steps[0] += 1
            if steps[0] > _MAX_STEPS:
                raise Rejected("too many steps")
            if s.kind == "init":
                env[s.target] = "" if s.target == "s" else []
            elif s.kind == "assign":
                env[s.target] = eval_expr(s.expr, env)
            elif s.kind == "aug":
                env[s.target] = eval_expr(("b", s.args[0], ("v", s.target), s.expr), env)
            elif s.kind == "print":
                output.append(" ".join(str(eval_expr(a, env)) for a in s.args))
                if len(output) > _MAX_OUTPUT:
                    raise Rejected("too much output")
            elif s.kind == "append":
                env["xs"].append(eval_expr(s.expr, env))
            elif s.kind == "strcat":
                env["s"] += s.args[0] if not s.expr else str(eval_expr(s.expr, env))
                if len(env["s"]) > 60:
                    raise Rejected("string too long")
            elif s.kind == "for":
                for value in range(*s.args):
                    env[s.target] = value
                    visit(s.body)
            elif eval_expr(s.expr, env):
                visit(s.body)

    visit(stmts)
    return Run(output, env, counts)


def size_for(difficulty: int) -> int:
    """Body lines (between the initial assignments and the final prints) at `difficulty`."""
    return 2 + 2 * difficulty


class _Builder:
    def __init__(
        self,
        rng: random.Random,
        difficulty: int,
        printing: bool,
        names: list[str],
        spans: tuple[int, int] | None = None,
    ):
        self.rng = rng
        self.difficulty = difficulty
        # Iterations of a loop: 1 .. 2 + d//3 unless given (every loop of a d1 program
        # then runs once or twice, which `line-count` cannot use).
        self.spans = spans or (1, 2 + difficulty // 3)
        self.printing = printing
        self.names = names
        self.max_depth = 1 + (difficulty + 2) // 4

    def operand(self, scope: list[str]) -> Expr:
        if self.rng.random() < 0.6:
            return ("v", self.rng.choice(scope))
        return ("c", self.rng.randint(1, 9))

    def value(self, scope: list[str]) -> Expr:
        left = ("v", self.rng.choice(scope))
        roll = self.rng.random()
        if roll < 0.2:
            return left
        if roll < 0.75:
            return ("b", self.rng.choice(["+", "-"]), left, self.operand(scope))
        op = self.rng.choice(["*", "//", "%"])
        right: Expr = ("c", self.rng.randint(2, 3 if op == "*" else 5))
        if self.difficulty >= 6 and self.rng.random() < 0.5:
            return ("b", "+", ("b", op, left, right), self.operand(scope))
        return ("b", op, left, right)

    def condition(self, scope: list[str]) -> Expr:
        var: Expr = ("v", self.rng.choice(scope))
        if self.rng.random() < 0.4:
            k = self.rng.randint(2, 4)
            return ("b", self.rng.choice(["==", "!="]), ("b", "%", var, ("c", k)), ("c", 0))
        return ("b", self.rng.choice(["<", ">", "==", "!="]), var, ("c", self.rng.randint(0, 12)))

    def simple(self, scope: list[str]) -> Stmt:
        rng = self.rng
        roll = rng.random()
        target = rng.choice(self.names)
        if self.printing and roll < 0.15:
            args = tuple(("v", v) for v in rng.sample(scope, min(len(scope), rng.randint(1, 2))))
            return Stmt("print", args=args)
        if self.printing and roll < 0.3:
            if rng.random() < 0.5:
                return Stmt("append", expr=self.value(scope))
            if rng.random() < 0.5:
                return Stmt("strcat", args=(rng.choice(["a", "b", "xy", "-"]),))
            return Stmt("strcat", expr=("v", rng.choice(scope)), args=("",))
        if roll < 0.65:
            op = rng.choice(["+", "+", "-"])
            return Stmt("aug", target=target, expr=self.operand(scope), args=(op,))
        return Stmt("assign", target=target, expr=self.value(scope))

    def block(self, budget: int, depth: int, scope: list[str]) -> list[Stmt]:
        stmts: list[Stmt] = []
        while budget > 0:
            if budget >= 2 and depth < self.max_depth and self.rng.random() < 0.4:
                inner = self.rng.randint(1, min(budget - 1, 4))
                stmts.append(self.compound(inner, depth, scope))
                budget -= inner + 1
            else:
                stmts.append(self.simple(scope))
                budget -= 1
        return stmts

    def compound(self, inner: int, depth: int, scope: list[str]) -> Stmt:
        if self.rng.random() < 0.55:
            var = "ijk"[min(depth, 2)]
            start = self.rng.randint(0, 3)
            span = self.rng.randint(*self.spans)
            step = 1 if self.rng.random() < 0.7 else 2
            body = self.block(inner, depth + 1, [*scope, var])
            return Stmt("for", target=var, args=(start, start + span * step, step), body=body)
        cond = self.condition(scope)
        return Stmt("if", expr=cond, body=self.block(inner, depth + 1, scope))


def generate_program(
    rng: random.Random,
    difficulty: int,
    *,
    printing: bool,
    with_input: bool,
    loop_spans: tuple[int, int] | None = None,
) -> Program:
    """A snippet of fixed size for `difficulty`, redrawn until it keeps every cap;
    `loop_spans` (lowest, highest) overrides how many times its loops run."""
    names = ["a", "b", "c"] if difficulty < 5 else ["a", "b", "c", "d"]
    for _ in range(200):
        builder = _Builder(rng, difficulty, printing, names, loop_spans)
        head = [Stmt("assign", target=v, expr=("c", rng.randint(0, 9))) for v in names]
        if with_input:
            head.insert(0, Stmt("assign", target="n", expr=("c", rng.randint(0, 12))))
        if printing:
            head += [Stmt("init", target="s"), Stmt("init", target="xs")]
        scope = ["n", *names] if with_input else list(names)
        body = builder.block(size_for(difficulty), 0, scope)
        tail: list[Stmt] = []
        if printing:
            tail = [
                Stmt("print", args=tuple(("v", v) for v in names)),
                Stmt("print", args=(("v", "s"), ("len",))),
                Stmt("print", args=(("v", "xs"),)),
            ]
        stmts = head + body + tail
        source = render(stmts)
        env: dict[str, Any] = {}
        try:
            run = execute(stmts, env)
        except Rejected:
            continue
        for line in range(1, source.count("\n") + 2):
            run.counts.setdefault(line, 0)
        return Program(stmts, source, run, list(names), _loop_lines(body))
    raise RuntimeError("no snippet kept the caps in 200 draws")  # pragma: no cover


def _loop_lines(body: list[Stmt], inside: bool = False) -> list[int]:
    found: list[int] = []
    for s in body:
        if s.kind in ("for", "if"):
            found += _loop_lines(s.body, inside or s.kind == "for")
        elif inside:
            found.append(s.line)
    return found
