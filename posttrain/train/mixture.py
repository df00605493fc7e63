"""Which tasks each stage trains and evaluates on: domain weights (by id, family or
matrix axis: `mixture_weights`), difficulty ranges, seed streams, and the held-out set.
A sampler's position, RNG and curriculum state round-trip through `state_dict`.

Held-out evaluation tasks use seeds from `seed_offset` up, cycling difficulties
1..10, with distinct prompts per domain; every training stream draws from its own
seed range below that, and skips any task whose prompt equals a held-out prompt, so
held-out means held out by content, not only by seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from posttrain.domains.base import Domain
from posttrain.domains.base import prompt_key as messages_key
from posttrain.types import Task

# Each stream's seeds start at its own base, far apart, all below the held-out offset.
STREAM_BASES = {
    "sft": 0,
    "sft-val": 10**8,
    "dpo": 2 * 10**8,
    "dpo-val": 3 * 10**8,
    "grpo": 4 * 10**8,
}


# A stream that meets only held-out prompts this many times in a row gives up.
MAX_CONSECUTIVE_SKIPS = 10_000

# Held-out redraws of a repeated prompt: seeds this far apart, at most this many tries.
REDRAW_STRIDE = 10**7
MAX_REDRAWS = 1_000


def prompt_key(task: Task) -> str:
    """A task's prompt as the held-out set and the task streams compare it: its domain,
    then every message's role and content with whitespace runs collapsed
    (`domains.base.prompt_key`, the key dataset domains split by). Copies that differ
    only in whitespace are one prompt: held out once, and never drawn for training."""
    return task.domain + "\x00" + messages_key(task.prompt)


def heldout_tasks(
    domains: Sequence[Domain],
    per_domain: int,
    seed_offset: int,
    difficulties: Sequence[int] = tuple(range(1, 11)),
) -> list[Task]:
    """`per_domain` tasks per domain with distinct prompts, cycling through
    `difficulties` (1..10 unless given), seeds from `seed_offset`.

    Task i has seed `seed_offset + i`; when its prompt repeats an earlier one of the
    domain (small difficulties have few distinct prompts), it is redrawn from
    `seed_offset + i + k * REDRAW_STRIDE`, k = 1, 2, ...: a paired test counts each
    task once, so a repeated prompt would count one outcome twice. A domain with too
    few distinct prompts at a difficulty raises, naming it.
    """
    levels = list(difficulties)
    tasks: list[Task] = []
    for domain in domains:
        seen: set[str] = set()
        for i in range(per_domain):
            level = levels[i % len(levels)]
            for k in range(MAX_REDRAWS):
                task = domain.generate(seed_offset + i + k * REDRAW_STRIDE, level)
                if prompt_key(task) not in seen:
                    break
            else:
                raise ValueError(
                    f"{domain.id} gave no new prompt at difficulty {level} in {MAX_REDRAWS} "
                    f"draws: it has too few distinct prompts for {per_domain} held-out tasks; "
                    "lower eval.tasks_per_domain, widen eval.difficulties, or (a dataset "
                    "domain) raise its heldout_fraction"
                )
            seen.add(prompt_key(task))
            tasks.append(task)
    return tasks


class StreamExhausted(ValueError):
    """A task stream met only prompts it must skip, `MAX_CONSECUTIVE_SKIPS` in a row."""


class MixtureError(ValueError):
    """A mixture weight names no domain of the mix, or is negative or not finite; the
    message says which."""


def mixture_weights(domains: Sequence[Domain], spec: Mapping[str, float]) -> list[float]:
    """One weight per domain from `spec`, whose keys are domain ids, families (`arith`)
    or axis filters (`modality=table`). The most specific key wins: an id over a family
    over an axis filter (several matching filters multiply); unmatched domains weigh 1.

    >>> from posttrain.domains import get_domain
    >>> mix = [get_domain("arith/addition-v1"), get_domain("tools/calculator-v1")]
    >>> mixture_weights(mix, {"tools": 3.0, "rounds=single": 0.5})
    [0.5, 3.0]
    """
    from posttrain.domains.matrix import AXIS_VALUES, family_of

    for key, weight in spec.items():
        if not 0 <= weight < math.inf:  # NaN fails both
            raise MixtureError(
                f"mixture weight of {key!r} must be a finite number >= 0, got {weight}"
            )
        if "=" in key:
            axis, _, value = key.partition("=")
            if axis not in AXIS_VALUES or value not in AXIS_VALUES[axis]:
                raise MixtureError(
                    f"mixture key {key!r}: unknown axis or value; axes: "
                    + "; ".join(f"{a}={'|'.join(v)}" for a, v in AXIS_VALUES.items())
                )
        if not any(_matches(d, key, family_of(d.id)) for d in domains):
            raise MixtureError(
                f"mixture key {key!r} matches no domain of the mix "
                f"({', '.join(d.id for d in domains)})"
            )
    weights = []
    for d in domains:
        family = family_of(d.id)
        if d.id in spec:
            weights.append(float(spec[d.id]))
        elif family in spec:
            weights.append(float(spec[family]))
        else:
            w = 1.0
            for key, factor in spec.items():
                if "=" in key and _matches(d, key, family):
                    w *= float(factor)
            weights.append(w)
    for d, w in zip(domains, weights, strict=True):
        if not math.isfinite(w):  # finite filters whose product overflows (× 0: NaN)
            raise MixtureError(f"the matching axis filters' product overflows for {d.id}")
    if not any(w > 0 for w in weights):
        raise MixtureError("every domain of the mix has weight 0")
    return weights


def _matches(domain: Domain, key: str, family: str) -> bool:
    if "=" in key:
        axis, _, value = key.partition("=")
        return str(getattr(domain.axes, axis, None)) == value
    return key in (domain.id, family)


class TaskSampler:
    """An endless, reproducible stream of training tasks for one stage.

    Each draw picks a (domain, difficulty) cell by domain weight; with `adaptive`,
    also by how much signal the cell currently gives (see `cell_weight`), which
    GRPO keeps up to date through `observe`; with `cost_aware` too, divided by the
    cell's episode length in tokens. `window` (lowest, highest), when set,
    limits draws to those difficulties (or to the nearest allowed one below it, see
    `levels`): GRPO's length curriculum slides it up."""

    def __init__(
        self,
        domains: Sequence[Domain],
        stream: str,
        difficulties: Sequence[int] = tuple(range(1, 11)),
        weights: Sequence[float] | None = None,
        exclude: set[str] | None = None,
        seed: int = 0,
        adaptive: bool = False,
        floor: float = 0.05,
        cost_aware: bool = False,
    ) -> None:
        if stream not in STREAM_BASES:
            raise ValueError(f"unknown task stream {stream!r}; known: {sorted(STREAM_BASES)}")
        if weights is not None and len(weights) != len(domains):
            raise ValueError(f"{len(weights)} weights for {len(domains)} domains")
        for domain, weight in zip(domains, weights or [], strict=False):
            if not 0 <= weight < math.inf:  # NaN fails both
                raise MixtureError(
                    f"weight of {domain.id} must be a finite number >= 0, got {weight}"
                )
        if weights is not None and not any(w > 0 for w in weights):
            raise MixtureError("every domain of the mix has weight 0")
        self.domains = list(domains)
        self.difficulties = list(difficulties)
        self.weights = list(weights) if weights is not None else [1.0] * len(self.domains)
        self.exclude = exclude or set()
        self.rng = random.Random(f"{stream}|{seed}")
        self.next_seed = STREAM_BASES[stream] + seed * 10**6
        if not 0 < floor <= 1:
            raise ValueError(f"adaptive floor must be in (0, 1], got {floor}")
        self.adaptive = adaptive
        self.floor = floor
        self.cost_aware = cost_aware
        self.stream = stream
        self.pass_rates: dict[tuple[str, int], float] = {}
        self.tokens: dict[tuple[str, int], float] = {}  # mean tokens per episode (EMA)
        self.window: tuple[int, int] | None = None

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed stage needs to draw the same tasks next (JSON-able)."""
        version, internal, gauss = self.rng.getstate()
        return {
            "stream": self.stream,
            "next_seed": self.next_seed,
            "rng": [version, list(internal), gauss],
            "pass_rates": [[d, k, p] for (d, k), p in sorted(self.pass_rates.items())],
            "tokens": [[d, k, t] for (d, k), t in sorted(self.tokens.items())],
            "window": list(self.window) if self.window else None,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state["stream"] != self.stream:
            raise ValueError(f"sampler state of stream {state['stream']!r}, not {self.stream!r}")
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.next_seed = int(state["next_seed"])
        self.pass_rates = {(d, int(k)): float(p) for d, k, p in state["pass_rates"]}
        self.tokens = {(d, int(k)): float(t) for d, k, t in state.get("tokens", [])}
        window = state.get("window")
        self.window = (int(window[0]), int(window[1])) if window else None

    def cell_weight(self, domain_id: str, difficulty: int) -> float:
        """1 for every cell, or, when adaptive, 4·p(1−p) of the cell's recent pass rate p,
        floored at `floor`: cells the policy always or never solves teach GRPO nothing, and
        the floor keeps them drawn now and then so their pass rate stays current.

        With `cost_aware`, that (the floor included) times mean(t) / t, t the cell's mean
        episode length in tokens and mean(t) over the cells seen (a cell not seen yet
        counts as the mean): signal per token sampled. A step's rollouts take as long as
        their longest episode, so one long group in a batch of short ones sets the step's
        time. The price: a long cell at the floor is drawn t / mean(t) times less often,
        so its pass rate is refreshed as much less often."""
        return self._weight(domain_id, difficulty, self._mean_tokens())

    def _mean_tokens(self) -> float | None:
        if not (self.adaptive and self.cost_aware and self.tokens):
            return None
        return math.fsum(self.tokens.values()) / len(self.tokens)  # (exact: any dict order)

    def _weight(self, domain_id: str, difficulty: int, mean_tokens: float | None) -> float:
        if not self.adaptive:
            return 1.0
        p = self.pass_rates.get((domain_id, difficulty), 0.5)
        weight = max(self.floor, 4.0 * p * (1.0 - p))
        if mean_tokens is not None:
            length = self.tokens.get((domain_id, difficulty), mean_tokens)
            weight *= mean_tokens / max(length, 1.0)
        return weight

    def observe(
        self, task: Task, rewards: Sequence[float], tokens: Sequence[int] | None = None
    ) -> None:
        """Fold one group's rewards into its cell's pass rate, and its episodes' lengths
        in tokens (`tokens`, when given) into the cell's mean length (EMAs, weight 0.3)."""
        if not rewards:
            return
        key = (task.domain, task.difficulty)
        mean = sum(rewards) / len(rewards)
        self.pass_rates[key] = 0.7 * self.pass_rates.get(key, 0.5) + 0.3 * mean
        if tokens:
            length = sum(tokens) / len(tokens)
            self.tokens[key] = 0.7 * self.tokens.get(key, length) + 0.3 * length

    def levels(self) -> list[int]:
        """The difficulties draws come from: those of `difficulties` inside `window`; when
        the window holds none, the highest one below its top (the lowest one if none is),
        so that a rising window never draws above its ceiling."""
        if self.window is None:
            return list(self.difficulties)
        low, high = self.window
        inside = [k for k in self.difficulties if low <= k <= high]
        if inside:
            return inside
        below = [k for k in self.difficulties if k <= high]
        return [max(below)] if below else [min(self.difficulties)]

    def sample(self, count: int) -> list[Task]:
        tasks: list[Task] = []
        levels = self.levels()
        cells = [(d, k) for d in range(len(self.domains)) for k in levels]
        mean = self._mean_tokens()  # nothing below changes the weights: once per call
        weights = [self.weights[d] * self._weight(self.domains[d].id, k, mean) for d, k in cells]
        skipped = 0
        while len(tasks) < count:
            d, difficulty = self.rng.choices(cells, weights=weights)[0]
            task = self.domains[d].generate(self.next_seed, difficulty)
            self.next_seed += 1
            if prompt_key(task) not in self.exclude:
                tasks.append(task)
                skipped = 0
            elif (skipped := skipped + 1) >= MAX_CONSECUTIVE_SKIPS:
                raise StreamExhausted(
                    f"the {self.stream!r} stream drew {skipped} held-out prompts in a row (last "
                    f"from {task.domain}): the mix has too few distinct tasks outside the "
                    "held-out set; lower eval.tasks_per_domain or add data"
                )
        return tasks
