"""`code/function-synthesis-v1`: write a Python function from a docstring and examples.

The prompt names the function, states what it must do and shows two examples; the
model answers with the function in a ```python block. The verifier runs the code
in the sandbox on hidden cases (inputs the model never saw, edge cases included)
and compares the returned values on the host (`verify/unit_tests.py`): the expected
values never enter the sandbox. Reward 1 only when every hidden case returns the
right value; components: `format` (a code block defining the function), `pass_rate`.

Difficulty sets the size of the inputs and the number of hidden cases (4 at d=1,
up to 13 at d=10); the functions come from a library of templates (`TEMPLATES`).

Not guaranteed: the verifier needs a working sandbox; without one the verdict
carries `error` (an infrastructure failure), never a wrong-answer reward.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.types import Message, Reference, Rollout, Task, Verdict

_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Template:
    name: str
    signature: str
    doc: str
    source: str  # the reference implementation
    make_args: Callable[[random.Random, int], list[Any]]  # (rng, size) -> positional args


def _ints(rng: random.Random, n: int, lo: int = -9, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def _word(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdeiou") for _ in range(n))


TEMPLATES: tuple[Template, ...] = (
    Template(
        "sum_of_evens", "sum_of_evens(numbers: list[int]) -> int",
        "Return the sum of the even numbers in the list (0 for none).",
        "def sum_of_evens(numbers):\n    return sum(x for x in numbers if x % 2 == 0)\n",
        lambda rng, n: [_ints(rng, rng.randint(0, n))],
    ),
    Template(
        "dedupe", "dedupe(items: list[int]) -> list[int]",
        "Remove repeated items, keeping the first occurrence of each, in order.",
        "def dedupe(items):\n    seen, out = set(), []\n    for x in items:\n"
        "        if x not in seen:\n            seen.add(x)\n            out.append(x)\n    return out\n",
        lambda rng, n: [_ints(rng, rng.randint(0, n), 0, 5)],
    ),
    Template(
        "running_max", "running_max(numbers: list[int]) -> list[int]",
        "Return the list whose i-th item is the largest of numbers[0..i].",
        "def running_max(numbers):\n    out, best = [], None\n    for x in numbers:\n"
        "        best = x if best is None or x > best else best\n        out.append(best)\n    return out\n",
        lambda rng, n: [_ints(rng, rng.randint(0, n))],
    ),
    Template(
        "count_vowels", "count_vowels(text: str) -> int",
        "Count the vowels a, e, i, o, u in the text, upper or lower case.",
        "def count_vowels(text):\n    return sum(ch in 'aeiouAEIOU' for ch in text)\n",
        lambda rng, n: [_word(rng, rng.randint(0, n)).upper() if rng.random() < 0.3 else _word(rng, rng.randint(0, n))],
    ),
    Template(
        "second_largest", "second_largest(numbers: list[int]) -> int | None",
        "Return the second largest distinct value, or None if there are fewer than two.",
        "def second_largest(numbers):\n    values = sorted(set(numbers))\n"
        "    return values[-2] if len(values) >= 2 else None\n",
        lambda rng, n: [_ints(rng, rng.randint(0, n), 0, 6)],
    ),
    Template(
        "chunk", "chunk(items: list[int], size: int) -> list[list[int]]",
        "Split the list into consecutive pieces of `size` items; the last may be shorter.",
        "def chunk(items, size):\n    return [items[i:i + size] for i in range(0, len(items), size)]\n",
        lambda rng, n: [_ints(rng, rng.randint(0, n)), rng.randint(1, 4)],
    ),
    Template(
        "run_lengths", "run_lengths(text: str) -> list[list]",
        "Run-length encode the text as [character, count] pairs, in order.",
        "def run_lengths(text):\n    out = []\n    for ch in text:\n        if out and out[-1][0] == ch:\n"
        "            out[-1][1] += 1\n        else:\n            out.append([ch, 1])\n    return out\n",
        lambda rng, n: ["".join(rng.choice("ab") * rng.randint(1, 3) for _ in range(rng.randint(0, n)))],
    ),
    Template(
        "clamp_all", "clamp_all(numbers: list[int], low: int, high: int) -> list[int]",
        "Return the numbers with each value limited to the range [low, high].",
        "def clamp_all(numbers, low, high):\n    return [min(max(x, low), high) for x in numbers]\n",
        lambda rng, n: [_ints(rng, rng.randint(0, n)), -3, rng.randint(0, 10)],
    ),
)  # fmt: skip


def _reference_function(template: Template) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(template.source, namespace)  # our own reference code, run on the host
    return namespace[template.name]  # type: ignore[no-any-return]


def extract_code(text: str) -> str | None:
    """The last ```python block of `text`, or None."""
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1] if blocks else None


class FunctionSynthesisDomain:
    """Write a Python function from its description and two examples."""

    id = "code/function-synthesis-v1"
    axes = Axes("code", "python", "single", "unit_tests")
    max_turns = 1
    accepts_prose = True  # a code block inside an explanation is a fine answer

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        template = TEMPLATES[rng.randrange(len(TEMPLATES))]
        reference = _reference_function(template)
        size = 2 + difficulty
        examples = [template.make_args(rng, 3) for _ in range(2)]
        hidden = [template.make_args(rng, size) for _ in range(3 + difficulty)]
        hidden.append(template.make_args(rng, 0))  # the empty/edge input
        shown = "\n".join(
            f">>> {template.name}({', '.join(map(repr, a))})\n{reference(*a)!r}" for a in examples
        )
        prompt = (
            f"Write a Python function `{template.signature}`.\n{template.doc}\n\n{shown}\n\n"
            "Answer with the function in a ```python code block."
        )
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", prompt)],
            answer=[reference(*args) for args in hidden],
            difficulty=difficulty,
            seed=seed,
            meta={"template": template.name, "cases": hidden, "size": size},
        )

    def reference(self, task: Task) -> Reference:
        template = _template(task)
        return Reference.single(f"```python\n{template.source}```")

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        from posttrain.verify.unit_tests import run_hidden_cases

        name = task.meta["template"]
        code = extract_code(rollout.final_text)
        if code is None or f"def {name}(" not in code:
            return Verdict(
                0.0,
                False,
                f"No ```python block defining {name}().",
                {"format": 0.0, "pass_rate": 0.0},
            )
        outcome = run_hidden_cases(code, name, task.meta["cases"])
        if outcome.error:
            return Verdict(
                0.0,
                False,
                "The sandbox failed; nothing was judged.",
                {"format": 1.0},
                error=outcome.error,
            )
        passed_cases = sum(out == want and raised is None for out, want, raised in zip(outcome.outputs, task.answer, outcome.raised, strict=True))  # fmt: skip
        rate = passed_cases / len(task.answer)
        passed = passed_cases == len(task.answer)
        if passed:
            reason = f"All {len(task.answer)} hidden cases return the right value."
        elif outcome.detail:
            reason = f"The code did not run to the end ({outcome.detail})."
        else:
            reason = f"{passed_cases} of {len(task.answer)} hidden cases return the right value."
        return Verdict(float(passed), passed, reason, {"format": 1.0, "pass_rate": rate})

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """A stub returning None, a syntax error, the first hidden answer hard-coded, and
        the reference with its function renamed."""
        template = _template(task)
        name = template.name
        header = template.source.splitlines()[0]
        wrong = [
            f"```python\n{header}\n    return None\n```",
            f"```python\n{header}\n    return (\n```",
            f"```python\n{header}\n    return {task.answer[0]!r}\n```",
            f"```python\n{template.source.replace(f'def {name}(', f'def {name}_v2(')}```",
        ]
        return [Reference.single(text) for text in wrong]

    def difficulty_measure(self, task: Task) -> float:
        """The hidden inputs' size bound times their count."""
        return float(task.meta["size"] * len(task.meta["cases"]))


def _template(task: Task) -> Template:
    return next(t for t in TEMPLATES if t.name == task.meta["template"])
