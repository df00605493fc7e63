"""Re-verify stored rollouts with the current verifiers, without touching the store.

    with TraceStore(run.traces_path) as traces:
        report = rescore(traces.select(stage="grpo"))
    report.per_domain["arith/addition-v1"].changed        # passed flipped or reward moved
    report.changes[0].new_reason

Each rollout's task is made again from its id (`domain@seed.dN`, or `domain@rowN` for a
dataset domain) by the registered domain, and must give the stored prompt back. Then:

- single-turn domains (no `open`): `verify(task, stored_rollout, session=None)`, as the
  episode loop called it;
- multi-turn domains: the verifier may judge the live session's final state, which the
  trace does not hold, so the recorded assistant turns are replayed through a fresh
  session (the real episode loop with the replay engine, as `posttrain score` does) and
  that episode is verified, but only when the session answers every recorded turn with
  the recorded observations; otherwise the rollout is reported as not re-verifiable.
  (Traces made before the last allowed turn's observations were recorded hold none
  there; the replay's answer to that turn is not compared.)

A change is a flip of `passed` or a reward that moved by more than `REWARD_TOLERANCE`.
Rollouts whose episode crashed (a trace store placeholder too: its `error` is set), whose
domain is not registered, whose task id does not parse, whose task is no longer the one the
id named, or (multi-turn) whose turns hold a lone surrogate, which no tokenizer replays, are
counted per domain under the reason, never guessed at.

Not guaranteed: a multi-turn verdict is the replayed episode's, whose token ids come from
the built-in tokenizer, not the run's; a verifier that reads token ids may differ for that
reason alone. Dataset domains are only known once their recipe registered them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from posttrain.domains.base import Domain
from posttrain.store.export import prompt_length
from posttrain.types import Message, Reference, Rollout, Task, Verdict, utf8_encodable

REWARD_TOLERANCE = 1e-9
REPLAY_BATCH = 256  # multi-turn rollouts replayed together, per domain
_SEEDED = re.compile(r"(?P<domain>.+)@(?P<seed>\d+)\.d(?P<difficulty>\d+)")
_ROW = re.compile(r"(?P<domain>.+)@row(?P<row>\d+)")


class NotReverifiable(Exception):
    """Why one stored rollout cannot be verified again; the message is the reason."""


@dataclass
class Change:
    """One rollout whose verdict differs now."""

    id: str
    domain: str
    task_id: str
    old_reward: float
    new_reward: float
    old_passed: bool
    new_passed: bool
    old_reason: str
    new_reason: str
    new_error: str | None


@dataclass
class DomainRescore:
    """Counts for one domain; `not_reverifiable` maps each reason to its count."""

    reverified: int = 0
    changed: int = 0
    not_reverifiable: dict[str, int] = field(default_factory=dict)


@dataclass
class RescoreReport:
    per_domain: dict[str, DomainRescore] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "per_domain": {d: asdict(s) for d, s in sorted(self.per_domain.items())},
            "changes": [asdict(c) for c in self.changes],
        }

    def _skip(self, rollout: Rollout, reason: str) -> None:
        counts = self.per_domain.setdefault(rollout.domain, DomainRescore()).not_reverifiable
        counts[reason] = counts.get(reason, 0) + 1

    def _add(self, rollout: Rollout, new: Verdict) -> None:
        stats = self.per_domain.setdefault(rollout.domain, DomainRescore())
        stats.reverified += 1
        old = rollout.verdict
        if old.passed != new.passed or abs(old.reward - new.reward) > REWARD_TOLERANCE:
            stats.changed += 1
            self.changes.append(
                Change(
                    rollout.id,
                    rollout.domain,
                    rollout.task_id,
                    old.reward,
                    new.reward,
                    old.passed,
                    new.passed,
                    old.reason,
                    new.reason,
                    new.error,
                )  # fmt: skip
            )


def parse_task_id(task_id: str) -> tuple[str, int, int] | tuple[str, int] | None:
    """`"arith/addition-v1@3.d2"` → `("arith/addition-v1", 3, 2)`; `"d@row7"` → `("d", 7)`;
    None for an id made some other way."""
    if m := _SEEDED.fullmatch(task_id):
        return m["domain"], int(m["seed"]), int(m["difficulty"])
    if m := _ROW.fullmatch(task_id):
        return m["domain"], int(m["row"])
    return None


def rescore(
    rollouts: Iterable[Rollout],
    lookup: Callable[[str], Domain] | None = None,
    tokenizer: Any = None,
) -> RescoreReport:
    """Verify every rollout again (see the module doc); the stored ones are not changed.

    `lookup` finds a domain by id (default: the registry); `tokenizer` is used to replay
    multi-turn episodes (default: the built-in one, built on first need)."""
    from posttrain.domains import get_domain

    find = lookup or get_domain
    report = RescoreReport()
    pending: dict[str, list[tuple[Rollout, Task]]] = {}
    domains: dict[str, Domain] = {}
    replay_with = _Replayer(tokenizer)
    for rollout in rollouts:
        try:
            domain, task = _task_of(rollout, find)
        except NotReverifiable as why:
            report._skip(rollout, str(why))
            continue
        if getattr(domain, "open", None) is None:
            report._add(rollout, _verify(domain, task, rollout))
            continue
        if not all(utf8_encodable(t.text) for t in rollout.turns):
            report._skip(rollout, "a turn holds a lone surrogate, which no tokenizer replays")
            continue
        domains[domain.id] = domain
        batch = pending.setdefault(domain.id, [])
        batch.append((rollout, task))
        if len(batch) >= REPLAY_BATCH:
            replay_with(domain, pending.pop(domain.id), report)
    for domain_id, batch in pending.items():
        replay_with(domains[domain_id], batch, report)
    return report


def _task_of(rollout: Rollout, lookup: Callable[[str], Domain]) -> tuple[Domain, Task]:
    """The registered domain and the task the rollout's id names, checked against it."""
    if rollout.error is not None:
        raise NotReverifiable("the episode itself failed, so there is no answer to verify")
    try:
        domain = lookup(rollout.domain)
    except KeyError:
        raise NotReverifiable("the domain is not registered in this process") from None
    parsed = parse_task_id(rollout.task_id)
    if parsed is None or parsed[0] != rollout.domain:
        raise NotReverifiable("the task id is not <domain>@<seed>.d<difficulty> of its domain")
    try:
        if len(parsed) == 3:
            task = domain.generate(parsed[1], parsed[2])
        elif hasattr(domain, "task_for_row"):
            task = domain.task_for_row(parsed[1])
        else:
            raise NotReverifiable("the task id names a row, but the domain has no rows")
    except NotReverifiable:
        raise
    except Exception:
        raise NotReverifiable("the domain cannot make this task again (generate raised)") from None
    stored = [m.to_dict() for m in rollout.messages[: prompt_length(rollout)]]
    if task.id != rollout.task_id or [m.to_dict() for m in task.prompt] != stored:
        raise NotReverifiable("the domain now makes a different task for this id")
    return domain, task


def _verify(domain: Domain, task: Task, rollout: Rollout) -> Verdict:
    try:
        return domain.verify(task, rollout, None)
    except Exception as exc:  # the verifier failed: say so, as the episode loop does
        return Verdict(0.0, False, "the verifier raised", error=f"{type(exc).__name__}: {exc}")


class _Replayer:
    """Replays multi-turn rollouts through fresh sessions and adds their verdicts."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def __call__(
        self, domain: Domain, batch: list[tuple[Rollout, Task]], report: RescoreReport
    ) -> None:
        from posttrain.domains.check import replay_solutions

        if self.tokenizer is None:
            from posttrain.models.tiny import build_tokenizer

            self.tokenizer = build_tokenizer()
            self.tokenizer.model_max_length = 1 << 30  # replays are not cut at any length
        pairs = [
            (task, Reference([Message("assistant", t.text) for t in r.turns])) for r, task in batch
        ]
        replayed = replay_solutions(domain, pairs, self.tokenizer)
        for (rollout, _), new in zip(batch, replayed, strict=True):
            why = _divergence(rollout, new)
            if why is None:
                report._add(rollout, new.verdict)
            else:
                report._skip(rollout, why)


def _divergence(stored: Rollout, replayed: Rollout) -> str | None:
    """Why the replayed episode is not the recorded one, or None when it is."""
    if replayed.error is not None:
        return "replaying the recorded turns failed in the session"
    if len(replayed.turns) != len(stored.turns):
        return "the replayed episode took a different number of turns"

    def seen(r: Rollout) -> list[list[tuple[str, str, str | None]]]:
        return [[(m.role, m.content, m.name) for m in t.observations] for t in r.turns]

    recorded, now = seen(stored), seen(replayed)
    if recorded and not recorded[-1]:
        # Traces made before the last allowed turn's observations were recorded hold none
        # there; any other episode whose last turn was answered holds them on both sides.
        now[-1] = []
    if now != recorded:
        return "the session now answers the recorded turns differently"
    return None
