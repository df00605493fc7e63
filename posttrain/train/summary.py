"""`summary.md` of a run: held-out completion per checkpoint, paired tests, the stages,
the rollouts the trace store had to store degraded (when any) and the resolved config,
as Markdown.

Not guaranteed: it shows what the run's `RecipeResult` holds; evaluations loaded on a
resume carry no rollouts, which the summary never needed; a resumed run counts the
degraded rollouts of its last life only (each was logged as a `traces/<kind>` metric).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from posttrain.config import RunConfig, config_to_yaml
from posttrain.store.traces import NOT_STORED

if TYPE_CHECKING:
    from posttrain.train.pipeline import RecipeResult


def summary_markdown(config: RunConfig, result: RecipeResult) -> str:
    lines = [
        f"# Run {result.run_dir.name}",
        "",
        f"Model: `{config.model.name}`; domains: " + ", ".join(f"`{d}`" for d in config.domains),
        "",
        "## Held-out completion (greedy; Wilson 95% intervals)",
        "",
    ]
    labels = list(result.evals)
    domains = list(next(iter(result.evals.values())).per_domain) if result.evals else []
    lines.append("| checkpoint | " + " | ".join(domains) + " | all |")
    lines.append("|---" * (len(domains) + 2) + "|")
    for label in labels:
        ev = result.evals[label]
        cells = [str(ev.per_domain[d].completed) for d in domains]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ev.overall} |")
    lines += [
        "",
        "## Paired tests (exact McNemar)",
        "",
        "| comparison | a | b | only a | only b | p |",
        "|---|---|---|---|---|---|",
    ]
    for name, cmp in result.comparisons.items():
        lines.append(
            f"| {name} | {cmp.a_rate:.3f} | {cmp.b_rate:.3f} | {cmp.only_a} | {cmp.only_b} "
            f"| {cmp.p_value:.2g} |"
        )
    lines += ["", "## Stages", ""]
    for stage, stats in result.stages.items():
        lines.append(f"- **{stage}**: " + ", ".join(f"{k}={v:.4g}" for k, v in stats.items()))
    if degraded := degraded_line(result.degraded_traces):
        lines += ["", "## Traces", "", degraded]
    lines += ["", "## Config", "", "```yaml", config_to_yaml(config).rstrip(), "```", ""]
    return "\n".join(lines)


def degraded_line(degraded: dict[str, int]) -> str:
    """One sentence on the rollouts stored degraded (`TraceStore.degraded`); "" if none."""
    total = sum(degraded.values())
    if not total:
        return ""
    what = {
        "placeholder": f"placeholder (no trajectory kept; its error starts with `{NOT_STORED}`)",
        "escaped": "escaped (a lone surrogate; its JSON is ASCII-escaped and reads back exactly)",
    }
    parts = [f"{n} {what.get(kind, kind)}" for kind, n in sorted(degraded.items()) if n]
    return (
        f"- **{total} rollout{'s' * (total != 1)} stored degraded** in traces.sqlite: "
        + "; ".join(parts)
        + ". Each was logged as a warning and counted in `traces/<kind>`."
    )
