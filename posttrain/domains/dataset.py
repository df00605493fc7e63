"""Domains from users' own data: a JSONL or Parquet file of prompts and answers.

Each row is `{"prompt": "..."}` or `{"messages": [{"role": "user", "content": "..."}, ...]}`
plus `"answer"` (any JSON value) and optionally `"difficulty"` (1..10; all rows or none)
and `"id"` (unique when given). A recipe declares the domain under `datasets:` and then names its id in
`domains:` like any other (`RunConfig.datasets`); the reward comes from one named
verifier of `posttrain/verify` (`NAMED_VERIFIERS`) or from reward functions given by
import path:

    datasets:
      - id: mine/capitals-v1
        path: data/capitals.jsonl
        verifier: exact              # or: reward: [mypkg.rewards:exact_city]

`numeric` matches a gold written as an integer ("10000", "12%") exactly and any other
within 1e-4 relative (docs/domains.md).

A reward function follows TRL's shape: it takes a batch and returns one score per
completion, `None` meaning "not applicable" (scored 0):

    def exact_city(prompts: list[str], completions: list[str], answer: list[Any],
                   **columns: list[Any]) -> list[float | None]: ...

`prompts` are the rows' last user messages, `completions` the model's final texts,
`answer` the rows' answers, and every other column of the rows arrives in `columns`.
Scores must lie in [0, 1]; with several functions the reward is their weighted mean
(`reward_weights`), each function's score is a verdict component, and the answer
passes when the reward reaches `pass_threshold`.

Train and held-out rows never mix, and neither do their prompts: the split hashes each
row's prompt (`prompt_key`: every message's role and content, whitespace runs collapsed
to one space and the ends stripped), not its line, so rows that repeat a prompt (exact
duplicates, the same question with two answers or under two ids, a re-wrapped copy) all
land on one side. Prompts whose SHA-256 falls in the first `heldout_fraction` go to seeds
at or above `heldout_seed_offset` (the evaluation's seed range), all others to the
training seeds below it. The split depends only on the prompts, so it is the same in
every process and on every machine, whatever the rows' order, the domain's id or its
version; `heldout_fraction` counts distinct prompts, not rows. With two or more distinct
prompts each side gets at least one; a file with a single distinct prompt serves it on
both sides (nothing can be held out). This rule replaced a hash of the domain id, the
row's line and its answer, so a dataset domain made before it splits differently now:
compare held-out scores only between runs made under the same rule.

Not guaranteed: the whole file is read into memory at construction (fine up to some
hundred thousand rows); a reward function runs in-process and unbounded in time, so it
must be trusted code; the self-check's corruptions for a dataset domain are generic
(another row's answer, a truncated answer, ±1 on numbers) and can accidentally be right;
the split catches repeated prompts up to whitespace, not paraphrases, a changed system
message, or letter case.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, prompt_key, task_id, task_rng
from posttrain.types import Message, Reference, Rollout, Task, Verdict

RewardFunction = Callable[..., Sequence[float | None]]
# A named verifier: (completion, answer) -> (score in [0, 1], passed, reason).
NamedVerifier = Callable[[str, Any], tuple[float, bool, str]]


class DatasetError(ValueError):
    """The file, a row, a verifier name or a reward path is not usable; the message says which."""


# ----------------------------------------------------------------------------- verifiers


def _exact(text: str, answer: Any) -> tuple[float, bool, str]:
    from posttrain.verify.answers import exact_match

    ok = exact_match(text, _answer_text(answer))
    return float(ok), ok, "matches the answer" if ok else "does not match the answer"


def _numeric(text: str, answer: Any) -> tuple[float, bool, str]:
    from posttrain.verify.numeric import numeric_match, strict_number, written_as_integer

    if strict_number(text) is None:
        return 0.0, False, "is not a number"
    gold = _answer_text(answer)
    # A gold written as an integer (a count, a year, an exact amount) is matched exactly,
    # as FinQA's rule does (equal to 5 places): 1e-4 relative slack passed 10001 for 10000.
    ok = numeric_match(text, gold, rel_tol=0.0 if written_as_integer(gold) else 1e-4)
    return float(ok), ok, "equals the answer numerically" if ok else "is a different number"


def _math(text: str, answer: Any) -> tuple[float, bool, str]:
    from posttrain.verify.math_equiv import math_equal

    ok = math_equal(text, _answer_text(answer))
    return float(ok), ok, "is equivalent to the answer" if ok else "is not equivalent"


def _set_f1(text: str, answer: Any) -> tuple[float, bool, str]:
    from posttrain.verify.sets import parse_items, set_f1

    gold = [str(a) for a in answer] if isinstance(answer, list) else parse_items(str(answer))
    score = set_f1(parse_items(text), gold)
    return score, score == 1.0, f"has item-set F1 {score:.2f} against the answer"


def _fuzzy(text: str, answer: Any) -> tuple[float, bool, str]:
    from posttrain.verify.fuzzy import fuzzy_ratio

    ratio = fuzzy_ratio(text, _answer_text(answer))
    ok = ratio >= 0.9
    return (1.0 if ok else 0.0), ok, f"has fuzzy similarity {ratio:.2f} (0.90 needed)"


def _json(text: str, answer: Any) -> tuple[float, bool, str]:
    from posttrain.verify.state import state_hash
    from posttrain.verify.structure import parse_json

    value = parse_json(text)
    if value is None and text.strip() != "null":  # parse_json's None also means "not JSON"
        return 0.0, False, "is not one JSON value"
    ok = state_hash(value) == state_hash(answer)
    return float(ok), ok, "is the answer's JSON value" if ok else "is a different JSON value"


NAMED_VERIFIERS: dict[str, NamedVerifier] = {
    "exact": _exact,
    "numeric": _numeric,
    "math": _math,
    "set_f1": _set_f1,
    "fuzzy": _fuzzy,
    "json": _json,
}
# The matrix cell's verification method for each named verifier.
_METHOD = {
    "exact": "exact",
    "numeric": "numeric",
    "math": "math",
    "set_f1": "set_match",
    "fuzzy": "exact",
    "json": "structure",
}


def _answer_text(answer: Any) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer)


def reference_text(answer: Any, verifier: str | None) -> str:
    """The answer as the reply its verifier expects: JSON for `json` (a string answer
    quoted), comma-separated items for a list under `set_f1`, else the text itself.

    >>> reference_text("12", "json"), reference_text([1, "b"], "set_f1")
    ('"12"', '1, b')
    """
    if verifier == "json":
        return json.dumps(answer)
    if verifier == "set_f1" and isinstance(answer, list):
        return ", ".join(str(a) for a in answer)
    return _answer_text(answer)


def load_reward_function(path: str) -> RewardFunction:
    """The callable named by `pkg.module:function`; DatasetError saying what is wrong."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise DatasetError(f"reward {path!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DatasetError(f"reward {path!r}: cannot import {module_name!r}: {exc}") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise DatasetError(f"reward {path!r}: {module_name!r} has no callable {attr!r}")
    return function  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    index: int
    prompt: tuple[Message, ...]
    answer: Any
    difficulty: int | None
    columns: dict[str, Any]


def load_rows(path: str | Path) -> list[Row]:
    """Every row of a `.jsonl` or `.parquet` file, checked; DatasetError naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dataset file {str(path)!r} does not exist")
    records = _read_parquet(path) if path.suffix == ".parquet" else _read_jsonl(path)
    rows = [_row(path, number, record) for number, record in records]
    if not rows:
        raise DatasetError(f"dataset file {str(path)!r} holds no rows")
    first_line: dict[str, int] = {}
    for row in rows:
        if "id" in row.columns:
            key = json.dumps(row.columns["id"], sort_keys=True, default=str)
            if key in first_line:
                raise DatasetError(
                    f"{path}:{row.index + 1}: id {row.columns['id']!r} repeats the row of "
                    f"line {first_line[key]}; ids must be unique"
                )
            first_line[key] = row.index + 1
    with_difficulty = sum(r.difficulty is not None for r in rows)
    if 0 < with_difficulty < len(rows):
        raise DatasetError(
            f"{path}: {with_difficulty} of {len(rows)} rows give a difficulty; give it on "
            "every row or on none"
        )
    return rows


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    records = []
    with path.open(encoding="utf-8", errors="strict") as lines:
        try:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    try:
                        records.append((number, json.loads(line)))
                    except json.JSONDecodeError as exc:
                        raise DatasetError(f"{path}:{number}: not valid JSON ({exc})") from None
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not UTF-8 text ({exc})") from None
    return records


def _read_parquet(path: Path) -> list[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None
    return list(enumerate(table.to_pylist(), start=1))


def _row(path: Path, number: int, record: Any) -> Row:
    where = f"{path}:{number}"
    if not isinstance(record, dict):
        raise DatasetError(f"{where}: a row must be a JSON object, got {type(record).__name__}")
    if "answer" not in record:
        raise DatasetError(f"{where}: the row has no 'answer'")
    prompt = _prompt(where, record)
    difficulty = record.get("difficulty")
    if difficulty is not None and (
        not isinstance(difficulty, int) or isinstance(difficulty, bool) or not 1 <= difficulty <= 10
    ):
        raise DatasetError(f"{where}: difficulty must be an integer 1..10, got {difficulty!r}")
    columns = {k: v for k, v in record.items() if k not in ("prompt", "messages", "answer")}
    return Row(number - 1, prompt, record["answer"], difficulty, columns)


def _prompt(where: str, record: dict[str, Any]) -> tuple[Message, ...]:
    if ("prompt" in record) == ("messages" in record):
        raise DatasetError(f"{where}: give exactly one of 'prompt' and 'messages'")
    if "prompt" in record:
        if not isinstance(record["prompt"], str) or not record["prompt"].strip():
            raise DatasetError(f"{where}: 'prompt' must be a non-empty string")
        return (Message("user", record["prompt"]),)
    messages = record["messages"]
    if not isinstance(messages, list) or not messages:
        raise DatasetError(f"{where}: 'messages' must be a non-empty list")
    out = []
    for i, m in enumerate(messages):
        if not (isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")):
            raise DatasetError(f"{where}: messages[{i}] needs a role system|user|assistant")
        if not isinstance(m.get("content"), str):
            raise DatasetError(f"{where}: messages[{i}] needs string 'content'")
        out.append(Message(m["role"], m["content"]))
    if out[-1].role != "user":
        raise DatasetError(f"{where}: the last message must be the user's")
    return tuple(out)


# ----------------------------------------------------------------------------- the domain


class DatasetDomain:
    """A single-turn domain over the rows of a user's file; see the module docstring."""

    max_turns = 1
    accepts_prose = False

    def __init__(
        self,
        id: str,
        path: str | Path,
        verifier: str | None = None,
        reward: Sequence[str] = (),
        reward_weights: Sequence[float] | None = None,
        pass_threshold: float = 1.0,
        axes: Axes | None = None,
        heldout_fraction: float = 0.1,
        heldout_seed_offset: int = 10**9,
    ) -> None:
        if (verifier is None) == (not reward):
            raise DatasetError(f"dataset {id!r}: give exactly one of 'verifier' and 'reward'")
        if verifier is not None and verifier not in NAMED_VERIFIERS:
            raise DatasetError(
                f"dataset {id!r}: unknown verifier {verifier!r}; known: {', '.join(NAMED_VERIFIERS)}"
            )
        weights = list(reward_weights) if reward_weights is not None else [1.0] * len(reward)
        if len(weights) != len(reward) or any(w < 0 for w in weights) or (reward and not sum(weights)):  # fmt: skip
            raise DatasetError(
                f"dataset {id!r}: reward_weights must be {len(reward)} non-negative numbers, not all 0"
            )
        if not 0.0 < pass_threshold <= 1.0:
            raise DatasetError(f"dataset {id!r}: pass_threshold must be in (0, 1]")
        if not 0.0 <= heldout_fraction < 1.0:
            raise DatasetError(f"dataset {id!r}: heldout_fraction must be in [0, 1)")
        self.id = id
        self.path = str(path)
        self.verifier = verifier
        self.reward = list(reward)
        self.reward_weights = weights
        self.pass_threshold = pass_threshold
        method = _METHOD[verifier] if verifier is not None else "exact"
        self.axes = axes or Axes("text", "none", "single", method)  # type: ignore[arg-type]
        self.heldout_seed_offset = heldout_seed_offset
        for path_ in self.reward:
            load_reward_function(path_)  # fail at start-up, not at the first verdict
        self.rows = load_rows(path)
        self._check_answers()
        self._split(heldout_fraction)

    def _check_answers(self) -> None:
        """DatasetError naming the line of the first row whose answer cannot pass the named
        verifier (a number column holding words under `numeric` ...). `math` is left out:
        its worker makes a check per row too slow for a start-up check."""
        if self.verifier is None or self.verifier == "math":
            return
        judge = NAMED_VERIFIERS[self.verifier]
        for row in self.rows:
            text = reference_text(row.answer, self.verifier)
            _, ok, how = judge(text, row.answer) if text.strip() else (0, False, "is empty")
            if not ok:
                raise DatasetError(
                    f"{self.path}:{row.index + 1}: the answer {row.answer!r:.80} can never pass "
                    f"the {self.verifier} verifier (as a reply it {how})"
                )

    def _split(self, heldout_fraction: float) -> None:
        keys = [prompt_key(r.prompt) for r in self.rows]
        held = heldout_prompts(keys, heldout_fraction)
        heldout = [r for r, k in zip(self.rows, keys, strict=True) if k in held]
        train = [r for r, k in zip(self.rows, keys, strict=True) if k not in held]
        self.train_rows, self.heldout_rows = train or heldout, heldout or train

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        pool = self.heldout_rows if seed >= self.heldout_seed_offset else self.train_rows
        pool = _nearest_difficulty(pool, difficulty)
        row = pool[task_rng(self.id, seed, difficulty).randrange(len(pool))]
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=list(row.prompt),
            answer=row.answer,
            difficulty=difficulty,
            seed=seed,
            meta={"row": row.index, "row_difficulty": row.difficulty, "columns": row.columns},
        )

    def task_for_row(self, index: int) -> Task:
        """The task of row `index` whatever its split: `posttrain score` uses it for
        completions saved by row. `index` is what tasks carry as `meta["row"]`: the row's
        0-based line in a JSONL file (blank lines count), its position in a Parquet one.
        IndexError when no row has it."""
        by_index = {r.index: r for r in self.rows}
        if not isinstance(index, int) or isinstance(index, bool) or index not in by_index:
            raise IndexError(
                f"row must be an integer in 0..{self.rows[-1].index} naming a row "
                f"(0-based line), got {index!r}"
            )
        row = by_index[index]
        difficulty = row.difficulty or 1
        return Task(
            id=f"{self.id}@row{index}",
            domain=self.id,
            prompt=list(row.prompt),
            answer=row.answer,
            difficulty=difficulty,
            seed=index,
            meta={"row": row.index, "row_difficulty": row.difficulty, "columns": row.columns},
        )

    def reference(self, task: Task) -> Reference:
        return Reference.single(reference_text(task.answer, self.verifier))

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text
        if not isinstance(text, str) or not text.strip():
            return Verdict(0.0, False, "The final text is empty.", {"correct": 0.0})
        try:
            if self.verifier is not None:
                score, ok, how = NAMED_VERIFIERS[self.verifier](text, task.answer)
                reason = f"The answer {how} ({self.verifier} verifier)."
                return Verdict(float(score) if ok else min(float(score), 0.99), ok, reason,
                               {self.verifier: float(score)})  # fmt: skip
            return self._score_with_functions(task, text)
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(0.0, False, "The verifier failed on this answer.", {},
                           error=f"{type(exc).__name__}: {exc}")  # fmt: skip

    def _score_with_functions(self, task: Task, text: str) -> Verdict:
        columns = {k: [v] for k, v in task.meta.get("columns", {}).items()}
        prompt = next((m.content for m in reversed(task.prompt) if m.role == "user"), "")
        components: dict[str, float] = {}
        for path in self.reward:
            scores = list(load_reward_function(path)(prompts=[prompt], completions=[text], answer=[task.answer], **columns))  # fmt: skip
            if len(scores) != 1:
                raise DatasetError(
                    f"reward {path!r} returned {len(scores)} scores for 1 completion"
                )
            score = 0.0 if scores[0] is None else float(scores[0])
            if not 0.0 <= score <= 1.0:
                raise DatasetError(f"reward {path!r} returned {score}, outside [0, 1]")
            components[path.rpartition(":")[2]] = score
        total = sum(w * s for w, s in zip(self.reward_weights, components.values(), strict=True))
        reward = total / sum(self.reward_weights)
        passed = reward >= self.pass_threshold
        shown = ", ".join(f"{k}={v:g}" for k, v in components.items())
        return Verdict(reward if passed else min(reward, 0.99), passed,
                       f"Reward functions scored {shown}.", components)  # fmt: skip

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """Generic known-wrong answers: an empty-ish answer, another row's answer, a
        truncated answer, and ±1 when the answer is a number."""
        right = reference.final
        wrong = ["none"]
        other = next((r.answer for r in self.rows if _answer_text(r.answer) != right), None)
        if other is not None:
            wrong.append(_answer_text(other))
        if len(right) >= 2:
            wrong.append(right[: len(right) // 2])
        if isinstance(task.answer, int | float) and not isinstance(task.answer, bool):
            wrong += [_answer_text(task.answer + 1), _answer_text(task.answer - 1)]
        return [Reference.single(w) for w in wrong if w != right]

    def difficulty_measure(self, task: Task) -> float:
        """The row's own difficulty, or 0 when the rows give none (then every row serves
        every level and difficulty changes nothing)."""
        return float(task.meta.get("row_difficulty") or 0)


def heldout_prompts(keys: Sequence[str], heldout_fraction: float) -> set[str]:
    """The prompt keys held out: those whose SHA-256 falls below `heldout_fraction`. With
    two or more distinct keys and a fraction above 0 both sides keep at least one: the
    lowest-hashing key is held out when none fell there, the highest trained on when all did."""

    def bucket(key: str) -> float:
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64

    distinct = sorted(set(keys), key=bucket)
    heldout = {k for k in distinct if bucket(k) < heldout_fraction}
    if heldout_fraction > 0 and len(distinct) >= 2:
        if not heldout:
            heldout = {distinct[0]}
        elif len(heldout) == len(distinct):
            heldout.discard(distinct[-1])
    return heldout


def _nearest_difficulty(rows: list[Row], difficulty: int) -> list[Row]:
    if rows[0].difficulty is None:
        return rows
    levels = sorted({r.difficulty for r in rows if r.difficulty is not None})
    nearest = min(levels, key=lambda level: (abs(level - difficulty), level))
    return [r for r in rows if r.difficulty == nearest]
