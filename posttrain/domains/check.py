"""The domain self-check: does a domain keep the Domain contract's promises? (`posttrain domains check`)

    from posttrain.domains.check import check_domains
    results = check_domains([get_domain("arith/addition-v1")], difficulties=(1, 5))
    failed = [r for r in results if not r.ok]

Properties, each a `CheckResult` per domain:

- ``api`` — a `Domain` with a well-formed id, a valid matrix cell, `max_turns ≥ 1`;
  `generate` returns the task it was asked for and refuses difficulties 0 and 11.
- ``determinism`` — the same (seed, difficulty) gives the same task byte for byte,
  in this process and in two fresh processes with different `PYTHONHASHSEED`.
- ``reference`` — the reference, replayed through the real episode loop
  (`engines/replay`), passes with reward 1.
- ``corruptions`` — the domain declares `corrupt`; every corruption, replayed the
  same way, fails and scores below the reference; at least one scores ≤ 0.2.
- ``wrong_answers`` — another seed's reference (when its answer differs) and an
  integer answer off by one fail.
- ``junk`` — empty, whitespace, 100 KB of junk, broken UTF-8, the prompt echoed and
  (unless the domain sets `accepts_prose = True`) the answer buried in prose score
  0, not passed, with a reason and without a verifier error.
- ``difficulty`` — when declared, `difficulty_measure` (mean over the seeds) never
  decreases as difficulty grows.

Not guaranteed: the check samples `seeds` × `difficulties`; a domain can pass it
and still be wrong elsewhere. The determinism subprocesses unpickle the domain
objects, so a domain must be picklable (defined at module level) to be checked.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from posttrain.domains import base
from posttrain.domains.matrix import AXIS_VALUES
from posttrain.domains.registry import DOMAIN_ID, SPAN_SUFFIX
from posttrain.types import Message, Reference, Rollout, Task

PROPERTIES = (
    "api",
    "determinism",
    "reference",
    "corruptions",
    "wrong_answers",
    "junk",
    "difficulty",
)


@dataclass(frozen=True)
class CheckResult:
    domain: str
    property: str
    ok: bool
    detail: str


class _Failed(Exception):
    """One property does not hold; the message says where."""


# ----------------------------------------------------------------------------- entry point


def check_domains(
    domains: Sequence[base.Domain],
    difficulties: Sequence[int] = (1, 5),
    seeds: Sequence[int] = (0, 1),
    tokenizer: Any = None,
    on_domain: Callable[[str, list[CheckResult]], None] | None = None,
) -> list[CheckResult]:
    """Every property for every domain, in `PROPERTIES` order per domain; `on_domain(id,
    its results)` is called as each domain is done (progress for long checks)."""
    if tokenizer is None:
        from posttrain.models.tiny import build_tokenizer

        tokenizer = build_tokenizer()
        tokenizer.model_max_length = 1 << 30  # the junk battery is long on purpose
    hashes = _hashes_in_fresh_processes(domains, seeds, difficulties)
    results = []
    for domain in domains:
        name = str(getattr(domain, "id", repr(domain)))
        checks: dict[str, Callable[[], str]] = {
            "api": partial(_api, domain, seeds, difficulties),
            "determinism": partial(_determinism, domain, seeds, difficulties, hashes),
            "reference": partial(_reference, domain, seeds, difficulties, tokenizer),
            "corruptions": partial(_corruptions, domain, seeds, difficulties, tokenizer),
            "wrong_answers": partial(_wrong_answers, domain, seeds, difficulties, tokenizer),
            "junk": partial(_junk, domain, seeds[0], difficulties, tokenizer),
            "difficulty": partial(_difficulty, domain, seeds),
        }
        for prop, run in checks.items():
            try:
                results.append(CheckResult(name, prop, True, run()))
            except _Failed as exc:
                results.append(CheckResult(name, prop, False, str(exc)))
            except Exception as exc:  # the domain crashed inside the check: that is a failure
                results.append(
                    CheckResult(name, prop, False, f"raised {type(exc).__name__}: {exc}")
                )
        if on_domain is not None:
            on_domain(name, results[-len(checks) :])
    return results


# ----------------------------------------------------------------------------- properties


def _api(domain: base.Domain, seeds: Sequence[int], difficulties: Sequence[int]) -> str:
    if not isinstance(domain, base.Domain):
        raise _Failed("not a Domain (id, axes, max_turns, generate, reference, verify)")
    plain, at, span = domain.id.partition("@")
    if not DOMAIN_ID.fullmatch(plain) or (at and not SPAN_SUFFIX.fullmatch(at + span)):
        raise _Failed(f"id {domain.id!r} is not 'family/name-vN' (or 'family/name-vN@MIN-MAX')")
    for axis, allowed in AXIS_VALUES.items():
        value = getattr(domain.axes, axis, None)
        if value not in allowed:
            raise _Failed(f"axes.{axis}={value!r} is not one of {', '.join(allowed)}")
    if not isinstance(domain.max_turns, int) or domain.max_turns < 1:
        raise _Failed(f"max_turns must be a positive integer, got {domain.max_turns!r}")
    for seed in seeds:
        for difficulty in difficulties:
            task = domain.generate(seed, difficulty)
            if not isinstance(task, Task):
                raise _Failed(f"generate returned {type(task).__name__}, not Task")
            got = (task.domain, task.seed, task.difficulty)
            if got != (domain.id, seed, difficulty):
                raise _Failed(f"generate({seed}, {difficulty}) returned a task for {got}")
            if not task.prompt:
                raise _Failed(f"task {task.id} has an empty prompt")
    for bad in (0, 11):
        try:
            domain.generate(seeds[0], bad)
        except ValueError:
            continue
        raise _Failed(f"generate accepted difficulty {bad} (must raise ValueError)")
    return f"cell {domain.axes.modality}/{domain.axes.tools}/{domain.axes.rounds}/{domain.axes.verification}"


def _task_hash(task: Task) -> str:
    return hashlib.sha256(task.to_json().encode()).hexdigest()


def _determinism(
    domain: base.Domain,
    seeds: Sequence[int],
    difficulties: Sequence[int],
    hashes: dict[str, list[dict[str, str]] | str],
) -> str:
    here = {f"{s}.{d}": _task_hash(domain.generate(s, d)) for s in seeds for d in difficulties}
    again = {f"{s}.{d}": _task_hash(domain.generate(s, d)) for s in seeds for d in difficulties}
    if here != again:
        raise _Failed("two calls in one process gave different tasks")
    found = hashes.get(domain.id)
    if isinstance(found, str):
        raise _Failed(f"could not generate in a fresh process: {found}")
    assert found is not None
    for hash_seed, theirs in zip(("1", "2"), found, strict=True):
        differing = sorted(k for k in here if theirs.get(k) != here[k])
        if differing:
            raise _Failed(
                f"PYTHONHASHSEED={hash_seed} process differs at seed.difficulty {differing}"
            )
    return f"{len(here)} tasks identical in 3 processes"


def _reference(domain: base.Domain, seeds: Sequence[int], difficulties: Sequence[int], tokenizer: Any) -> str:  # fmt: skip
    tasks = [domain.generate(s, d) for s in seeds for d in difficulties]
    rollouts = replay_solutions(domain, [(t, domain.reference(t)) for t in tasks], tokenizer)
    for task, rollout in zip(tasks, rollouts, strict=True):
        verdict = rollout.verdict
        if not verdict.passed or verdict.reward < 1.0:
            why = verdict.error or rollout.error or verdict.reason
            raise _Failed(f"{task.id}: reference scored {verdict.reward} ({why})")
    return f"{len(tasks)} references pass through the episode loop"


def _corruptions(domain: base.Domain, seeds: Sequence[int], difficulties: Sequence[int], tokenizer: Any) -> str:  # fmt: skip
    corrupt = getattr(domain, "corrupt", None)
    if corrupt is None:
        raise _Failed("declares no corrupt(): known-wrong solutions are required")
    pairs = []
    for s in seeds:
        for d in difficulties:
            task = domain.generate(s, d)
            for wrong in corrupt(task, domain.reference(task)):
                pairs.append((task, wrong))
    if not pairs:
        raise _Failed("corrupt() returned no solutions")
    lowest = 1.0
    for (task, wrong), rollout in zip(
        pairs, replay_solutions(domain, pairs, tokenizer), strict=True
    ):
        v = rollout.verdict
        if v.error:
            raise _Failed(f"{task.id}: the verifier raised on a corruption: {v.error}")
        if v.passed or v.reward >= 1.0:
            raise _Failed(f"{task.id}: corruption {wrong.final[:60]!r} passed (reward {v.reward})")
        lowest = min(lowest, v.reward)
    if lowest > 0.2:
        raise _Failed(f"no corruption scores ≤ 0.2 (lowest {lowest})")
    return f"{len(pairs)} corruptions fail, lowest reward {lowest:g}"


def _wrong_answers(domain: base.Domain, seeds: Sequence[int], difficulties: Sequence[int], tokenizer: Any) -> str:  # fmt: skip
    pairs: list[tuple[Task, Reference]] = []
    for d in difficulties:
        task = domain.generate(seeds[0], d)
        other = _other_seed_task(domain, task)
        if other is not None:
            pairs.append((task, domain.reference(other)))
        reference = domain.reference(task)
        if isinstance(task.answer, str) and task.answer.strip().lstrip("-").isdigit():
            shifted = str(int(task.answer) + 1)
            turns = list(reference.turns[:-1]) + [Message("assistant", shifted)]
            pairs.append((task, Reference(turns)))
    for (task, wrong), rollout in zip(
        pairs, replay_solutions(domain, pairs, tokenizer), strict=True
    ):
        if rollout.verdict.passed:
            raise _Failed(f"{task.id}: wrong answer {wrong.final[:60]!r} passed")
        if rollout.verdict.error:
            raise _Failed(f"{task.id}: the verifier raised: {rollout.verdict.error}")
    return f"{len(pairs)} wrong answers fail"


def _other_seed_task(domain: base.Domain, task: Task) -> Task | None:
    """A task of another seed whose answer and reference both differ from `task`'s."""
    mine = domain.reference(task).final
    for offset in range(1, 20):
        other = domain.generate(task.seed + 1000 + offset, task.difficulty)
        if other.answer != task.answer and domain.reference(other).final != mine:
            return other
    return None


def _junk(domain: base.Domain, seed: int, difficulties: Sequence[int], tokenizer: Any) -> str:
    pairs = []
    for d in difficulties:
        task = domain.generate(seed, d)
        battery = {
            "empty": "",
            "whitespace": " \n\t ",
            "100 KB junk": ("junk ✓ 🦀 " * 10_000)[:100_000],
            "broken UTF-8": b"\xff\xfe\xc3(\x80abc".decode("utf-8", "replace"),
            "prompt echoed": "\n".join(m.content for m in task.prompt),
        }
        if not getattr(domain, "accepts_prose", False):
            final = domain.reference(task).final
            battery["answer in prose"] = f"Let me think. I believe the answer is {final}, surely."
        for name, text in battery.items():
            pairs.append((task, name, Reference.single(text)))
    rollouts = replay_solutions(domain, [(t, r) for t, _, r in pairs], tokenizer)
    for (task, name, _), rollout in zip(pairs, rollouts, strict=True):
        v = rollout.verdict
        if v.error:
            raise _Failed(f"{task.id}: the verifier raised on {name}: {v.error}")
        if v.passed or v.reward != 0.0:
            raise _Failed(f"{task.id}: {name} scored {v.reward} (must be 0)")
        if not v.reason.strip():
            raise _Failed(f"{task.id}: {name} got no reason")
    return f"{len(pairs)} junk answers score 0 with a reason"


def _difficulty(domain: base.Domain, seeds: Sequence[int]) -> str:
    measure = getattr(domain, "difficulty_measure", None)
    if measure is None:
        return "no difficulty_measure declared"
    means = []
    for d in range(1, 11):
        values = [float(measure(domain.generate(s, d))) for s in seeds]
        means.append(sum(values) / len(values))
    for d in range(1, 10):
        if means[d] < means[d - 1]:
            raise _Failed(f"difficulty_measure drops from d={d} ({means[d - 1]:g}) to d={d + 1} ({means[d]:g})")  # fmt: skip
    return f"non-decreasing: {means[0]:g} at d=1 → {means[-1]:g} at d=10"


# ----------------------------------------------------------------------------- plumbing


def replay_solutions(domain: base.Domain, pairs: Sequence[tuple[Task, Reference]], tokenizer: Any) -> list[Rollout]:  # fmt: skip
    """Each (task, solution) played through the real episode loop (tasks get unique keys),
    one rollout per pair in order: the self-check, `domains show` and `posttrain score`."""
    from posttrain.engines.base import SamplingParams
    from posttrain.engines.replay import ReplayEngine
    from posttrain.rollout.episode import run_episodes

    engine = ReplayEngine(tokenizer)
    tasks = []
    for i, (task, reference) in enumerate(pairs):
        keyed = dataclasses.replace(task, id=f"{task.id}#check{i}")
        engine.add(keyed.id, reference)
        tasks.append(keyed)
    params = SamplingParams(max_tokens=1 << 18, temperature=0.0)
    groups = run_episodes(tasks, engine, tokenizer, params, lambda _id: domain)
    return [group[0] for group in groups]


_CHILD = """
import base64, hashlib, json, pickle, sys
domains = pickle.loads(base64.b64decode(sys.stdin.read()))
seeds, difficulties = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {}
for d in domains:
    try:
        out[d.id] = {f"{s}.{k}": hashlib.sha256(d.generate(s, k).to_json().encode()).hexdigest()
                     for s in seeds for k in difficulties}
    except Exception as exc:
        out[d.id] = f"{type(exc).__name__}: {exc}"
print("\\n@@posttrain-hashes@@" + json.dumps(out))  # generators may print: ours is the marked line
"""


def _hashes_in_fresh_processes(
    domains: Sequence[base.Domain], seeds: Sequence[int], difficulties: Sequence[int]
) -> dict[str, list[dict[str, str]] | str]:
    """Per domain id: the task hashes from two processes (PYTHONHASHSEED 1 and 2), or why not."""
    try:
        payload = base64.b64encode(pickle.dumps(list(domains))).decode()
    except Exception as exc:
        return {str(getattr(d, "id", d)): f"not picklable: {exc}" for d in domains}
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(list(seeds)), json.dumps(list(difficulties))],
            input=payload, capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        if proc.returncode != 0:
            why = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            return {str(getattr(d, "id", d)): why[0] for d in domains}
        marked = [x for x in proc.stdout.splitlines() if x.startswith("@@posttrain-hashes@@")]
        if not marked:
            return {
                str(getattr(d, "id", d)): "the fresh process printed no hashes" for d in domains
            }
        runs.append(json.loads(marked[-1][len("@@posttrain-hashes@@") :]))
    out: dict[str, list[dict[str, str]] | str] = {}
    for domain in domains:
        first, second = runs[0].get(domain.id), runs[1].get(domain.id)
        if isinstance(first, str) or isinstance(second, str) or first is None or second is None:
            out[domain.id] = str(first if isinstance(first, str) else second)
        else:
            out[domain.id] = [first, second]
    return out
