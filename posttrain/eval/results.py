"""The evaluation results file: one JSON document per evaluated checkpoint, the input of
`posttrain compare`, the reports and anyone's own analysis.

    data = results_document(result, model="runs/x/checkpoints/grpo", settings={...})
    save_results(path, data)
    data = load_results(path)          # ResultsFileError naming the path and the problem
    data["per_domain"]["arith/addition-v1"]["completed"]["rate"]

Layout (`FORMAT` names the version):

    format       "posttrain-eval-results/1"
    label, model, created (UTC ISO time), seconds, settings (free-form: n, k, seed, ...)
    overall      a rate: {"successes", "n", "rate", "low", "high"} (Wilson 95%)
    mean         the unweighted mean of the per-domain completion rates
    mean_tokens  sampled tokens per task (assistant tokens, all turns)
    per_domain   id -> {"cell": [modality, tools, rounds, verification], "completed",
                 "format", "correct" (rates; each absent when the domain's verifier
                 does not report it), "mean_tokens", "pass_at_k" (or null)}
    per_cell     "modality/tools/rounds/verification" -> {"domains", "completed", "pass_at_k"}
    pass_at_k    {"k", "samples", "temperature", "overall"} or null
    tasks        one row per task, in evaluation order: {"id", "domain", "difficulty",
                 "passed", "reward", "tokens", "error", "samples", "samples_passed"}

`completed` is the greedy pass rate; pass@k comes from `samples` extra draws per task
at `temperature` (unbiased estimator, `stats.pass_at_k`).

Not guaranteed: `load_results` checks the structure the readers need (keys, types,
one row per task), not that the numbers agree with each other; a file edited by hand
can be internally inconsistent. A domain's cell is read from the registry when the
file is written; an unregistered domain gets the cell "unregistered".
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from posttrain.eval.stats import Rate, pass_at_k, rate
from posttrain.store.atomic import atomic_write_text

FORMAT = "posttrain-eval-results/1"
UNREGISTERED = ("unregistered", "unregistered", "unregistered", "unregistered")
# A run's evaluations, its final one first: the pipeline's last stage, the control arm last.
FINAL_ORDER = ("grpo", "dpo", "sft", "untrained", "control")
_TASK_KEYS: dict[str, type] = {"id": str, "domain": str, "passed": bool}
_NUMBER = (int, float)
_RATE_KEYS: dict[str, type | tuple[type, ...]] = {
    "successes": int, "n": int, "rate": _NUMBER, "low": _NUMBER, "high": _NUMBER
}  # fmt: skip


class ResultsFileError(ValueError):
    """A results file is missing, not JSON, or lacks what readers need; says which."""


def rate_dict(r: Rate) -> dict[str, float | int]:
    return {"successes": r.successes, "n": r.n, "rate": r.rate, "low": r.low, "high": r.high}


def cell_key(cell: Sequence[str]) -> str:
    return "/".join(cell)


def domain_cell(domain_id: str) -> tuple[str, str, str, str]:
    """The registered domain's matrix cell, or `UNREGISTERED`."""
    from posttrain.domains import get_domain
    from posttrain.domains.matrix import cell_of

    try:
        return cell_of(get_domain(domain_id))
    except KeyError:
        return UNREGISTERED


def results_document(
    result: Any,
    model: str,
    settings: Mapping[str, Any] | None = None,
    samples: Mapping[str, Sequence[bool]] | None = None,
    k: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The results file of an `EvalResult` (`posttrain.eval.evaluate`). `samples` maps
    task id -> pass/fail of its extra sampled draws, for pass@`k`."""
    tasks = []
    for r in result.rollouts:
        draws = list(samples.get(r.task_id, ())) if samples else []
        tasks.append(
            {
                "id": r.task_id,
                "domain": r.domain,
                "difficulty": r.difficulty,
                "passed": bool(r.verdict.passed),
                "reward": float(r.verdict.reward),
                "tokens": int(sum(r.loss_mask)),
                "error": r.error or r.verdict.error,
                "samples": len(draws),
                "samples_passed": int(sum(draws)),
            }
        )
    doc: dict[str, Any] = {
        "format": FORMAT,
        "label": result.label,
        "model": model,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seconds": float(result.seconds),
        "settings": dict(settings or {}),
    }
    doc.update(summarize(tasks, result.per_domain, k, temperature))
    return doc


def summarize(
    tasks: list[dict[str, Any]],
    per_domain_scores: Mapping[str, Any] | None = None,
    k: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """Overall, per-domain and per-cell figures from task rows (`per_domain_scores`
    adds the format / correct rates that only the verdicts know)."""
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for t in tasks:
        by_domain.setdefault(t["domain"], []).append(t)
    per_domain: dict[str, Any] = {}
    per_cell: dict[str, Any] = {}
    for name, rows in by_domain.items():
        cell = domain_cell(name)
        entry: dict[str, Any] = {
            "cell": list(cell),
            "completed": rate_dict(rate(sum(t["passed"] for t in rows), len(rows))),
            "mean_tokens": sum(t["tokens"] for t in rows) / len(rows),
            "pass_at_k": _pass_at_k(rows, k),
        }
        score = (per_domain_scores or {}).get(name)
        if score is not None and score.format is not None:
            entry["format"] = rate_dict(score.format)
        if score is not None and score.correct is not None:
            entry["correct"] = rate_dict(score.correct)
        per_domain[name] = entry
        per_cell.setdefault(cell_key(cell), {"domains": [], "rows": []})
        per_cell[cell_key(cell)]["domains"].append(name)
        per_cell[cell_key(cell)]["rows"] += rows
    for value in per_cell.values():
        rows = value.pop("rows")
        value["completed"] = rate_dict(rate(sum(t["passed"] for t in rows), len(rows)))
        value["pass_at_k"] = _pass_at_k(rows, k)
    n = len(tasks)
    return {
        "overall": rate_dict(rate(sum(t["passed"] for t in tasks), n)),
        "mean": sum(d["completed"]["rate"] for d in per_domain.values()) / max(1, len(per_domain)),
        "mean_tokens": sum(t["tokens"] for t in tasks) / max(1, n),
        "per_domain": per_domain,
        "per_cell": per_cell,
        "pass_at_k": None
        if not k
        else {
            "k": k,
            "samples": min((t["samples"] for t in tasks), default=0),
            "temperature": temperature,
            "overall": _pass_at_k(tasks, k),
        },
        "tasks": tasks,
    }


def _pass_at_k(rows: list[dict[str, Any]], k: int | None) -> float | None:
    if not k or not rows or any(t["samples"] < k for t in rows):
        return None
    return sum(pass_at_k(t["samples"], t["samples_passed"], k) for t in rows) / len(rows)


def save_results(path: str | Path, doc: Mapping[str, Any]) -> Path:
    """Write `doc` as indented JSON, atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return path


def load_results(path: str | Path) -> dict[str, Any]:
    """A results file, checked for what readers need; ResultsFileError otherwise."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsFileError(f"results file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"results file {path} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"results file {path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ResultsFileError(
            f"results file {path} is not a posttrain results file: format is {found!r}, "
            f"expected {FORMAT!r}"
        )
    shape: tuple[tuple[str, type], ...] = (("label", str), ("model", str), ("overall", dict),
                                          ("tasks", list), ("per_domain", dict), ("per_cell", dict))  # fmt: skip
    for key, kind in shape:
        if not isinstance(doc.get(key), kind):
            raise ResultsFileError(
                f"results file {path}: {key!r} is missing or not a {kind.__name__}"
            )
    first: dict[str, int] = {}
    for i, row in enumerate(doc["tasks"]):
        for key, kind in _TASK_KEYS.items():
            if not isinstance(row, dict) or not isinstance(row.get(key), kind):
                raise ResultsFileError(
                    f"results file {path}: tasks[{i}].{key} is missing or not a {kind.__name__}"
                )
        if first.setdefault(row["id"], i) != i:  # a paired test needs one outcome per task
            raise ResultsFileError(
                f"results file {path}: tasks[{i}].id {row['id']!r} repeats "
                f"tasks[{first[row['id']]}].id"
            )
    for name, entry in doc["per_domain"].items():
        problem = _domain_entry_problem(f"per_domain[{name!r}]", entry)
        if problem:
            raise ResultsFileError(f"results file {path}: {problem}")
    return dict(doc)


def _domain_entry_problem(where: str, entry: Any) -> str | None:
    """What is wrong with one `per_domain` entry, naming its key path; None if nothing."""
    if not isinstance(entry, dict):
        return f"{where} is not a dict"
    cell = entry.get("cell")
    if "cell" in entry and not (isinstance(cell, list) and all(isinstance(c, str) for c in cell)):
        return f"{where}.cell is not a list of strings, got {cell!r}"
    problem = _rate_problem(f"{where}.completed", entry.get("completed"))
    for key in ("format", "correct"):  # absent when the verifier does not report them
        if problem is None and key in entry:
            problem = _rate_problem(f"{where}.{key}", entry[key])
    return problem


def _rate_problem(where: str, value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"{where} is missing or not a rate (a dict of {', '.join(_RATE_KEYS)})"
    for key, kinds in _RATE_KEYS.items():
        # bool is an int to isinstance, but never a count or a rate.
        if isinstance(value.get(key), bool) or not isinstance(value.get(key), kinds):
            kind = "an integer" if kinds is int else "a number"
            return f"{where}.{key} is missing or not {kind}"
    return None


def eval_result_from_document(doc: dict[str, Any]) -> Any:
    """An `EvalResult` (without rollouts) rebuilt from a results document: what a
    resumed run uses for an evaluation it made in an earlier life."""
    from posttrain.eval.evaluate import DomainScore, EvalResult
    from posttrain.eval.stats import Rate

    def as_rate(r: dict[str, Any]) -> Rate:
        return Rate(int(r["successes"]), int(r["n"]), float(r["rate"]), float(r["low"]),
                    float(r["high"]))  # fmt: skip

    def maybe_rate(r: dict[str, Any] | None) -> Rate | None:
        return None if r is None else as_rate(r)

    per_domain = {
        name: DomainScore(
            name,
            as_rate(entry["completed"]),
            maybe_rate(entry.get("format")),
            maybe_rate(entry.get("correct")),
        )
        for name, entry in doc["per_domain"].items()
    }
    return EvalResult(
        label=doc["label"],
        overall=as_rate(doc["overall"]),
        per_domain=per_domain,
        passed={t["id"]: bool(t["passed"]) for t in doc["tasks"]},
        seconds=float(doc.get("seconds", 0.0)),
    )
