"""Compare two evaluations task by task: per-domain and per-cell deltas with intervals,
and which differences are significant. Behind `posttrain compare A B`.

    a, b = load_side("runs/x:control"), load_side("runs/x")     # or results files
    table = compare_results(a, b)
    for row in table.rows: print(row.scope, row.name, row.delta, row.low, row.high, row.p_value)

A side is a results file (`posttrain eval --out`), a run directory (its final
evaluation: grpo, else dpo, sft, untrained, control), or `RUN:LABEL` for one
evaluation of a run (`runs/x:control`). Tasks are paired by id; only tasks both
sides evaluated count, and at least one must be shared. Each row gives both rates,
the delta (B − A) with Newcombe's paired 95% interval, the discordant counts and the
exact McNemar p; `significant` means p < `alpha`.

Not guaranteed: no correction for the many rows compared at once (one row in
twenty is "significant" at alpha 0.05 by chance when nothing changed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posttrain.eval.results import (
    FINAL_ORDER,
    UNREGISTERED,
    ResultsFileError,
    cell_key,
    load_results,
)
from posttrain.eval.stats import mcnemar_exact, paired_difference_interval


@dataclass
class DeltaRow:
    scope: str  # "all", "domain" or "cell"
    name: str
    n: int
    a_rate: float
    b_rate: float
    only_a: int
    only_b: int
    low: float
    high: float
    p_value: float
    significant: bool

    @property
    def delta(self) -> float:
        return self.b_rate - self.a_rate


@dataclass
class Comparison:
    a_label: str
    b_label: str
    shared: int
    only_in_a: int
    only_in_b: int
    rows: list[DeltaRow]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a_label,
            "b": self.b_label,
            "shared_tasks": self.shared,
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "rows": [dict(vars(r), delta=r.delta) for r in self.rows],
        }


def load_side(spec: str) -> dict[str, Any]:
    """A results document from a results file, a run directory or `RUN:LABEL`."""
    path, label = Path(spec), None
    if not path.exists() and ":" in spec:
        head, _, label = spec.rpartition(":")
        path = Path(head)
    if path.is_file():
        if label is not None:
            raise ResultsFileError(f"{spec}: a label (:{label}) only applies to a run directory")
        return load_results(path)
    if not path.is_dir():
        raise ResultsFileError(f"{spec} is neither a results file nor a run directory")
    evals = path / "evals"
    found = sorted(p.stem for p in evals.glob("*.json")) if evals.is_dir() else []
    if not found:
        raise ResultsFileError(f"run directory {path} has no evaluations (no evals/*.json)")
    if label is None:
        label = next((x for x in FINAL_ORDER if x in found), found[-1])
    elif label not in found:
        raise ResultsFileError(
            f"run directory {path} has no evaluation {label!r}; it has: {', '.join(found)}"
        )
    doc = load_results(evals / f"{label}.json")
    doc["label"] = f"{path.name}:{label}"
    return doc


def compare_results(a: dict[str, Any], b: dict[str, Any], alpha: float = 0.05) -> Comparison:
    """Rows for all shared tasks, then per domain, then per matrix cell; `alpha` is the
    significance level of `DeltaRow.significant`, in (0, 1)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    ta = {t["id"]: t for t in a["tasks"]}
    tb = {t["id"]: t for t in b["tasks"]}
    shared = [i for i in ta if i in tb]
    if not shared:
        raise ResultsFileError(
            f"{a['label']!r} and {b['label']!r} share no tasks: compare evaluations made with "
            "the same domains, seeds and difficulties"
        )
    cells = {**_cells(a), **_cells(b)}
    by_domain: dict[str, list[str]] = {}
    by_cell: dict[str, list[str]] = {}
    for i in shared:
        domain = ta[i]["domain"]
        by_domain.setdefault(domain, []).append(i)
        # A domain neither file gives a cell for pools with the unregistered ones.
        by_cell.setdefault(cells.get(domain, cell_key(UNREGISTERED)), []).append(i)
    groups = [("all", "all", shared)]
    groups += [("domain", name, ids) for name, ids in by_domain.items()]
    groups += [("cell", name, ids) for name, ids in by_cell.items()]
    rows = []
    for scope, name, ids in groups:
        pa = [bool(ta[i]["passed"]) for i in ids]
        pb = [bool(tb[i]["passed"]) for i in ids]
        both = sum(x and y for x, y in zip(pa, pb, strict=True))
        only_a = sum(x and not y for x, y in zip(pa, pb, strict=True))
        only_b = sum(y and not x for x, y in zip(pa, pb, strict=True))
        low, high = paired_difference_interval(
            both, only_a, only_b, len(ids) - both - only_a - only_b
        )
        p = mcnemar_exact(only_a, only_b)
        rows.append(
            DeltaRow(
                scope,
                name,
                len(ids),
                sum(pa) / len(ids),
                sum(pb) / len(ids),
                only_a,
                only_b,
                low,
                high,
                p,
                p < alpha,
            )  # fmt: skip
        )
    return Comparison(
        a["label"], b["label"], len(shared), len(ta) - len(shared), len(tb) - len(shared), rows
    )


def _cells(doc: dict[str, Any]) -> dict[str, str]:
    return {
        name: cell_key(entry["cell"])
        for name, entry in doc["per_domain"].items()
        if isinstance(entry, dict) and isinstance(entry.get("cell"), list)
    }
