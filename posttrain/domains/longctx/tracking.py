"""Tracking families: follow references through a long document to one value.

- `longctx/var-tracking-v1` — statements such as "Set VAR_QX to 17." and "Set VAR_KD
  to VAR_QX." scattered in order through the document, carried out in the order they
  appear; the question asks the final value of one variable, reached through 1 to 3
  copies, after reassignments that overwrite earlier values and among distractor
  variables. The answer is the integer (computed by running the statements).
- `longctx/multi-hop-v1` — project budgets defined through a chain of references
  across chapters ("The budget of Project Wren equals the budget of the project led by
  Dr. Varga."), with look-alike leaders (Dr. Vargas) and distractor projects; the
  answer is the integer budget, reached in 1 hop at d1 to 4 at d10.

Not guaranteed: only forward references are used (a copy reads the value current at
that point of the document), and no statement is conditional; distractor counts grow
with the prompt's length, not with the hop count.
"""

from __future__ import annotations

import itertools
import random
import string

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.longctx.framework import Case, DocumentDomain, depths
from posttrain.domains.longctx.haystack import length_scale
from posttrain.types import Task, Verdict
from posttrain.verify import strict_integer

_VARIABLES = tuple(f"VAR_{a}{b}" for a, b in itertools.product(string.ascii_uppercase, repeat=2))
_PROJECTS = (
    "Wren", "Lark", "Plover", "Tern", "Bittern", "Curlew", "Dunlin", "Egret", "Finch",
    "Grebe", "Ibis", "Jay", "Kite", "Linnet", "Merlin", "Nightjar", "Oriole", "Petrel",
    "Redstart", "Siskin", "Teal", "Warbler", "Avocet", "Bunting",
)  # fmt: skip
_LEADERS = (
    "Varga", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Petrov", "Alvarez", "Brandt",
    "Castillo", "Demir", "Esposito", "Haddad", "Ivanova", "Kowalski", "Nakamura", "Rossi",
    "Sandoval", "Weber", "Yilmaz", "Ferreira",
)  # fmt: skip

Statement = tuple[str, str | int]  # (variable, a literal value or the variable it copies)


def run_statements(program: list[Statement]) -> dict[str, int]:
    """The variables' values after the statements run in order.

    >>> run_statements([("VAR_A", 3), ("VAR_B", "VAR_A"), ("VAR_A", 5)])
    {'VAR_A': 5, 'VAR_B': 3}
    """
    values: dict[str, int] = {}
    for target, source in program:
        values[target] = source if isinstance(source, int) else values[source]
    return values


def _sentence(statement: Statement) -> str:
    return f"Set {statement[0]} to {statement[1]}."


class VarTrackingDomain(DocumentDomain):
    """The final value of one variable after scattered assignments and copies."""

    base_id = "longctx/var-tracking-v1"
    axes = Axes("document", "none", "single", "exact")

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        hops = rng.randint(1, 3)
        extra = 2 + length_scale(tokens)
        names = rng.sample(_VARIABLES, hops + 1 + extra)
        chain, others = names[: hops + 1], names[hops + 1 :]
        literals = rng.sample(range(1, 100), 3 + extra)
        value, stale, target_stale = literals[:3]
        # The chain in order; the stale values are overwritten before they are read.
        core: list[Statement] = [(chain[0], stale), (chain[0], value)]
        core += [(chain[i], chain[i - 1]) for i in range(1, hops + 1)]
        core.insert(rng.randint(0, len(core) - 1), (chain[-1], target_stale))
        program = list(core)
        for name, literal in zip(others, literals[3:], strict=True):
            # A distractor is a literal, or a copy of a variable already set.
            cut = len(program) // 2
            assigned = [t for t, _ in program[:cut]]
            copy = assigned and rng.random() < 0.4
            source: str | int = rng.choice(assigned) if copy else literal
            program.insert(rng.randint(cut, len(program)), (name, source))
        answer = run_statements(program)[chain[-1]]
        assert answer == value, "the chain's value must survive the distractors"
        sentences = [_sentence(s) for s in program]
        facts = list(zip(depths(rng, len(program), ordered=True), sentences, strict=True))
        evidence = [_sentence(s) for s in core if isinstance(s[1], str) or s[1] == value]
        question = (
            "The Set statements in the document are carried out in the order they appear; "
            f"a statement that sets one variable to another copies its current value. What is "
            f"the final value of {chain[-1]}? Answer with the integer only."
        )
        meta = {"hops": hops, "variable": chain[-1], "stale": [target_stale, stale]}
        return Case(facts, question, str(answer), evidence, meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = strict_integer(text)
        return verdict(got == int(task.answer), f"the integer {task.answer}", why=f"got {text[:20]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        stale = [str(v) for v in task.meta["stale"][:2]]
        return [str(int(task.answer) + 1), *stale]


class MultiHopDomain(DocumentDomain):
    """A project's budget defined through a chain of leader references."""

    base_id = "longctx/multi-hop-v1"
    axes = Axes("document", "none", "single", "exact")

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        hops = 1 + (difficulty - 1) // 3
        extra = 1 + length_scale(tokens) // 2
        projects = rng.sample(_PROJECTS, hops + 1 + extra)
        leaders = rng.sample(_LEADERS, hops + extra)
        budgets = rng.sample(range(120, 990), 2 + extra)
        value = budgets[0]
        chain, others = projects[: hops + 1], projects[hops + 1 :]
        evidence = [f"Project {chain[0]} has a budget of {value} thousand crowns."]
        for i in range(1, hops + 1):
            evidence.append(f"Dr. {leaders[i - 1]} leads Project {chain[i - 1]}.")
            evidence.append(
                f"The budget of Project {chain[i]} equals the budget of the project led "
                f"by Dr. {leaders[i - 1]}."
            )
        # The first distractor is led by a look-alike of the last leader in the chain.
        decoys = [f"Dr. {leaders[hops - 1]}s leads Project {others[0]}."]
        decoys.append(f"Project {others[0]} has a budget of {budgets[1]} thousand crowns.")
        for i, project in enumerate(others[1:], start=1):
            decoys.append(f"Dr. {leaders[hops - 1 + i]} leads Project {project}.")
            decoys.append(f"Project {project} has a budget of {budgets[1 + i]} thousand crowns.")
        sentences = evidence + decoys
        facts = list(zip(depths(rng, len(sentences)), sentences, strict=True))
        question = (
            f"What is the budget of Project {chain[-1]}, in thousands of crowns? "
            "Answer with the integer only."
        )
        meta = {"hops": hops, "decoy_budgets": budgets[1:]}
        return Case(facts, question, str(value), evidence, meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = strict_integer(text)
        return verdict(got == int(task.answer), f"the budget {task.answer}", why=f"got {text[:20]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        value = int(task.answer)
        return [str(value + 1), str(task.meta["decoy_budgets"][0]), str(value * 1000)]


DOMAINS: tuple[DocumentDomain, ...] = (VarTrackingDomain(), MultiHopDomain())
