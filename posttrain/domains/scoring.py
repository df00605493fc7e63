"""Score saved completions without a model: reward debugging (`posttrain score`).

Each line of the input JSONL names a task and what the model said:

    {"seed": 3, "difficulty": 2, "completion": "42"}           # the domain regenerates the task
    {"task": {...Task JSON...}, "completion": "42"}            # a task saved with the rollout
    {"row": 17, "completion": "Paris"}                         # a dataset domain's row
    {"seed": 3, "difficulty": 2, "turns": ["<tool call>", "42"]}  # multi-turn: every assistant text

Every completion is played through the real episode loop (`check.replay_solutions`), so
tool calls in `turns` run against the domain's session exactly as in training:

    items = read_completions("completions.jsonl", domain)
    scored = score_completions(domain, items)
    summary = summarize(scored)   # n, pass rate with its Wilson interval, component means

Not guaranteed: a `{"seed", "difficulty"}` line scores against the task the *current*
domain version generates; a domain whose id was not bumped after a change can score an
old completion against a different task (save `task` with the completion to be safe).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posttrain.domains.base import Domain
from posttrain.eval.stats import Rate, rate
from posttrain.types import Message, Reference, Rollout, Task


class ScoreInputError(ValueError):
    """A completions file or line that cannot be scored; the message names file and line."""


@dataclass(frozen=True)
class ScoreItem:
    line: int
    task: Task
    solution: Reference


@dataclass(frozen=True)
class Scored:
    line: int
    task_id: str
    rollout: Rollout


@dataclass(frozen=True)
class ScoreSummary:
    n: int
    passed: Rate
    mean_reward: float
    components: dict[str, float]  # mean of each component over the lines that report it
    errors: int  # verifier or episode errors (not wrong answers)


def read_completions(path: str | Path, domain: Domain) -> list[ScoreItem]:
    """The scoreable lines of `path` for `domain`; ScoreInputError on the first bad one."""
    path = Path(path)
    if not path.is_file():
        raise ScoreInputError(f"completions file {str(path)!r} does not exist")
    items = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ScoreInputError(f"{path}: not UTF-8 text ({exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreInputError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(record, dict):
            raise ScoreInputError(f"{where}: a line must be a JSON object")
        items.append(ScoreItem(number, _task(where, record, domain), _solution(where, record)))
    if not items:
        raise ScoreInputError(f"{path}: no completions to score")
    return items


def _task(where: str, record: dict[str, Any], domain: Domain) -> Task:
    if "task" in record:
        try:
            task = Task.from_dict(record["task"])
        except (TypeError, KeyError, ValueError) as exc:
            raise ScoreInputError(f"{where}: 'task' is not a Task ({exc})") from None
        if task.domain != domain.id:
            raise ScoreInputError(f"{where}: the task is from {task.domain!r}, not {domain.id!r}")
        return task
    if "row" in record:
        task_for_row = getattr(domain, "task_for_row", None)
        if task_for_row is None:
            raise ScoreInputError(f"{where}: 'row' works only for dataset domains")
        try:
            return task_for_row(record["row"])  # type: ignore[no-any-return]
        except (IndexError, TypeError, ValueError) as exc:
            raise ScoreInputError(f"{where}: {exc}") from None
    seed, difficulty = record.get("seed"), record.get("difficulty")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ScoreInputError(
            f"{where}: give 'task', 'row', or a non-negative integer 'seed' with 'difficulty'"
        )
    if not isinstance(difficulty, int) or isinstance(difficulty, bool) or not 1 <= difficulty <= 10:
        raise ScoreInputError(f"{where}: 'difficulty' must be an integer 1..10, got {difficulty!r}")
    return domain.generate(seed, difficulty)


def _solution(where: str, record: dict[str, Any]) -> Reference:
    if ("completion" in record) == ("turns" in record):
        raise ScoreInputError(f"{where}: give exactly one of 'completion' and 'turns'")
    if "completion" in record:
        if not isinstance(record["completion"], str):
            raise ScoreInputError(f"{where}: 'completion' must be a string")
        return Reference.single(record["completion"])
    turns = record["turns"]
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise ScoreInputError(f"{where}: 'turns' must be a non-empty list of strings")
    return Reference([Message("assistant", text) for text in turns])


def score_completions(
    domain: Domain, items: Sequence[ScoreItem], tokenizer: Any = None
) -> list[Scored]:
    """Each item played through the episode loop and verified, in input order."""
    from posttrain.domains.check import replay_solutions

    if tokenizer is None:
        from posttrain.models.tiny import build_tokenizer

        tokenizer = build_tokenizer()
        tokenizer.model_max_length = 1 << 30  # completions are scored whatever their length
    pairs = [(item.task, item.solution) for item in items]
    rollouts = replay_solutions(domain, pairs, tokenizer)
    return [
        Scored(item.line, item.task.id, dataclasses.replace(r, task_id=item.task.id))
        for item, r in zip(items, rollouts, strict=True)
    ]


def summarize(scored: Sequence[Scored]) -> ScoreSummary:
    """Pass rate (Wilson 95%), mean reward and per-component means over `scored`."""
    n = len(scored)
    verdicts = [s.rollout.verdict for s in scored]
    sums: dict[str, list[float]] = {}
    for v in verdicts:
        for name, value in v.components.items():
            sums.setdefault(name, []).append(value)
    return ScoreSummary(
        n=n,
        passed=rate(sum(v.passed for v in verdicts), n),
        mean_reward=sum(v.reward for v in verdicts) / n if n else 0.0,
        components={k: sum(vals) / len(vals) for k, vals in sums.items()},
        errors=sum(bool(v.error or s.rollout.error) for v, s in zip(verdicts, scored, strict=True)),
    )
