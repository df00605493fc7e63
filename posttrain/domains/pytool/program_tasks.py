"""`pytool/function-count-v1`: run a given function on many inputs and count the True results.

The prompt shows a small generated Python predicate `f(n)` (one of three templates:
a digit fold, a bit count, a guarded polynomial residue, with random constants) and
asks how many n in 1..N make it return True, N = 300·d. Too many inputs to trace by
hand; one python call that pastes the function and counts does it. The answer is
computed here by running the same source on the host (our own code, never the
model's). Modality `code`, verification `exact` (one integer).

Not guaranteed: the count can be 0 or N for unlucky constants (rare); the templates
are few, so a model can learn their shapes, but not the counts.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from posttrain.domains.base import Axes
from posttrain.domains.pytool.tool import Problem, PytoolDomain

_TEMPLATES: tuple[str, ...] = (
    "def f(n):\n    s = 0\n    x = n\n    while x > 0:\n        s = s * {a} + x % 10\n"
    "        x //= 10\n    return s % {m} == {r}\n",
    "def f(n):\n    v = (n * {a}) ^ {b}\n    return bin(v).count('1') % {k} == {r}\n",
    "def f(n):\n    if n % {p} == 0:\n        return False\n"
    "    return (n * n + {a} * n + {b}) % {m} < {t}\n",
)


def _source(rng: random.Random) -> str:
    which = rng.randrange(len(_TEMPLATES))
    if which == 0:
        m = rng.randint(3, 9)
        return _TEMPLATES[0].format(a=rng.randint(3, 13), m=m, r=rng.randrange(m))
    if which == 1:
        k = rng.randint(2, 5)
        return _TEMPLATES[1].format(a=rng.randint(3, 99), b=rng.randint(1, 999), k=k, r=rng.randrange(k))  # fmt: skip
    m = rng.randint(7, 31)
    return _TEMPLATES[2].format(
        p=rng.randint(3, 11), a=rng.randint(1, 50), b=rng.randint(1, 50), m=m, t=rng.randint(2, m - 1)
    )  # fmt: skip


def _compiled(source: str) -> Callable[[int], bool]:
    namespace: dict[str, object] = {}
    exec(source, namespace)  # our own generated predicate, run on the host
    return namespace["f"]  # type: ignore[return-value]


class FunctionCountDomain(PytoolDomain):
    """Count the inputs in 1..N for which a shown function returns True."""

    id = "pytool/function-count-v1"
    axes = Axes("code", "python", "multi", "exact")
    kind = "integer"
    what = "the count of inputs for which f returns True"

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 300 * difficulty
        source = _source(rng)
        f = _compiled(source)
        count = sum(1 for i in range(1, n + 1) if f(i))
        prompt = (
            f"Here is a Python function:\n```python\n{source}```\n"
            f"How many integers n with 1 <= n <= {n} make f(n) return True? "
            "Answer with the integer alone."
        )
        code = f"{source}\nprint(sum(1 for n in range(1, {n} + 1) if f(n)))\n"
        opposite = n - count if n - count != count else count + 2
        return Problem(
            prompt=prompt,
            answer=str(count),
            code=code,
            measure=float(n),
            near_misses=[str(count + 1), str(count - 1), str(opposite)],
            meta={"inputs": n, "source": source},
        )


DOMAINS = (FunctionCountDomain(),)
