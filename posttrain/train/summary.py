"""`summary.md` of a run: held-out completion per checkpoint, paired tests, the stages
and the resolved config, as Markdown.

Not guaranteed: it shows what the run's `RecipeResult` holds; evaluations loaded on a
resume carry no rollouts, which the summary never needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from posttrain.config import RunConfig, config_to_yaml

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
    lines += ["", "## Config", "", "```yaml", config_to_yaml(config).rstrip(), "```", ""]
    return "\n".join(lines)
