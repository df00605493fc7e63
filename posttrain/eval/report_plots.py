"""The figures of the HTML reports: matplotlib drawings embedded as PNG, each followed by
the exact data it plots, and the builders that take that data from a run's files.

    series = [{"name": "all", "source": "metrics.jsonl", "stage": "grpo", "key": "reward",
               "x": [1, 2, 3], "y": [0.1, 0.3, None]}]
    html = line_figure("curve-reward", "Reward", [("reward", series)])
    html = domain_bars("checkpoints", {"sft": doc}, {"sft": "evals/sft.json"})

Every figure is one `<figure>` holding `<img src="data:image/png;base64,...">` and,
beside it, `<script type="application/json" class="series" data-figure=ID>` with
`{"figure": ID, "series": [...]}`: each series names its `source` file, `stage` and
`key` and holds exactly what was plotted, as read (floats unmodified), so a plot can be
checked against its source. A `None` in `y` is a value that was not finite in the
source (metrics.jsonl writes those as null); it is drawn as a gap. Bars add `low` and
`high` (Wilson 95%); histograms hold bin edges in `x` and counts in `y`. matplotlib is
imported on the first figure, with the Agg backend, so importing posttrain stays light.

Not guaranteed: the PNGs are small (dpi 80), meant for a screen, not print; with more
than ten series in one figure the colours repeat. Series values must be JSON numbers or
None (`json.dumps(allow_nan=False)` refuses NaN).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

Series = dict[str, Any]
DPI = 80


def esc(value: Any) -> str:
    """`value` as text safe inside HTML (element content and quoted attributes)."""
    return html.escape(str(value), quote=True)


def missing(text: str) -> str:
    """A visible note that something the section needs is not there."""
    return f'<p class="missing">{esc(text)}</p>'


def series_script(figure_id: str, series: Sequence[Series]) -> str:
    """The `<script class="series">` block holding `series` exactly."""
    text = json.dumps({"figure": figure_id, "series": list(series)}, allow_nan=False)
    # "<", ">" and "&" as JSON escapes: no string from the run can close the script.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<script type="application/json" class="series" data-figure="{esc(figure_id)}">'
        f"{text}</script>"
    )


def line_figure(
    figure_id: str, title: str, panels: Sequence[tuple[str, Sequence[Series]]], xlabel: str = "step"
) -> str:
    """One subplot per `(ylabel, series)` panel, one line per series (y against x)."""

    def draw(plt: Any) -> Any:
        fig, axes = plt.subplots(
            1, len(panels), figsize=(4.6 * len(panels), 3.0), dpi=DPI, squeeze=False
        )
        for ax, (ylabel, group) in zip(axes[0], panels, strict=True):
            for s in group:
                # The overall curve stands out from the per-family ones drawn with it.
                bold = {"color": "black", "linewidth": 2.0} if s["name"] == "all" else {}
                ax.plot(
                    s["x"], _floats(s["y"]), label=_label(s["name"]), **({"linewidth": 1.2} | bold)
                )
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            if len(group) > 1:
                ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        return fig

    return _figure(figure_id, title, [s for _, group in panels for s in group], draw)


def bar_figure(figure_id: str, title: str, series: Sequence[Series], ylabel: str) -> str:
    """Grouped bars: categories `x` (shared by every series), one bar per series in each
    group, with error bars from the series' `low` and `high`."""
    categories: list[str] = list(series[0]["x"]) if series else []

    def draw(plt: Any) -> Any:
        width = min(14.0, max(5.0, 0.28 * len(categories) * max(1, len(series)) + 2))
        fig, ax = plt.subplots(figsize=(width, 3.6), dpi=DPI)
        bar_w = 0.8 / max(1, len(series))
        for i, s in enumerate(series):
            xs = [j + (i - (len(series) - 1) / 2) * bar_w for j in range(len(categories))]
            ys = _floats(s["y"])
            lows, highs = _floats(s["low"]), _floats(s["high"])
            err = [
                [y - lo for y, lo in zip(ys, lows, strict=True)],
                [hi - y for y, hi in zip(ys, highs, strict=True)],
            ]
            ax.bar(xs, ys, bar_w, yerr=err, capsize=2, label=_label(s["name"]))
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels([_label(c) for c in categories], rotation=30, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=7, ncol=min(5, len(series)), loc="upper right")
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        return fig

    return _figure(figure_id, title, series, draw)


def heatmap_figure(
    figure_id: str,
    title: str,
    rows: Sequence[str],
    cols: Sequence[str],
    cells: dict[tuple[str, str], tuple[float, int]],
    series: Sequence[Series],
) -> str:
    """A rows × cols grid coloured by rate in [0, 1], each filled cell annotated with its
    rate and n; `(row, col)` pairs absent from `cells` stay blank."""

    def draw(plt: Any) -> Any:
        import numpy as np

        grid = np.full((len(rows), len(cols)), np.nan)
        for (r, c), (value, _) in cells.items():
            grid[rows.index(r), cols.index(c)] = value
        fig, ax = plt.subplots(
            figsize=(min(16.0, 4.5 + 1.0 * len(cols)), min(14.0, 2.0 + 0.45 * len(rows))), dpi=DPI
        )
        cmap = plt.get_cmap("RdYlGn").with_extremes(bad="white")
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
        for (r, c), (value, n) in cells.items():
            ax.text(
                cols.index(c),
                rows.index(r),
                f"{value:.2f}\nn={n}",
                ha="center",
                va="center",
                fontsize=6,
            )
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels([_label(c) for c in cols], rotation=35, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([_label(r) for r in rows], fontsize=7)
        ax.set_xlabel("rounds · verification", fontsize=8)
        ax.set_ylabel("modality · tools", fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.03)
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        return fig

    return _figure(figure_id, title, series, draw)


def histogram_figure(figure_id: str, title: str, series: Sequence[Series], xlabel: str) -> str:
    """Overlaid histograms already counted: `x` holds the bin edges (one more than `y`),
    `y` the counts in each bin, drawn as steps."""

    def draw(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(5.5, 3.2), dpi=DPI)
        for s in series:
            ax.stairs(s["y"], s["x"], label=_label(s["name"]), fill=False, linewidth=1.5)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("rollouts")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center")
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        return fig

    return _figure(figure_id, title, series, draw)


def _figure(
    figure_id: str, caption: str, series: Sequence[Series], draw: Callable[[Any], Any]
) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    buffer = io.BytesIO()
    try:
        fig = draw(plt)
        fig.savefig(buffer, format="png", dpi=DPI)
        plt.close(fig)
    finally:
        # A drawing that failed half-way still leaves no figure open in pyplot.
        for number in set(plt.get_fignums()) - before:
            plt.close(number)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<figure id="fig-{esc(figure_id)}"><img alt="{esc(caption)}" '
        f'src="data:image/png;base64,{data}">'
        f"<figcaption>{esc(caption)}</figcaption>{series_script(figure_id, series)}</figure>"
    )


def _label(text: Any) -> str:
    # A "$" pair would switch matplotlib to mathtext, which can fail on names from the run.
    return str(text).replace("$", r"\$")


def _floats(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


# ---- figures from the run's data --------------------------------------------------------

# (overall key, by_family/{family}/ suffix or None, label): the GRPO learning curves.
CURVES = (
    ("reward", "reward", "reward"),
    ("pass_rate", "pass_rate", "pass rate"),
    ("completion_tokens", "tokens", "completion tokens"),
    ("kl", None, "KL"),
    ("entropy", None, "entropy"),
    ("logprob_mismatch", None, "logprob mismatch"),
)
HIST_BINS = 20


def metric_series(rows: Sequence[dict[str, Any]], stage: str, key: str, name: str) -> Series | None:
    """The values of `key` in `rows` (one stage's metrics.jsonl records) exactly as
    logged, with their steps; None when `key` was never logged."""
    hits = [row for row in rows if key in (row.get("values") or {})]
    if not hits:
        return None
    return {
        "name": name,
        "source": "metrics.jsonl",
        "stage": stage,
        "key": key,
        "x": [row.get("step") for row in hits],
        "y": [row["values"][key] for row in hits],
    }


def learning_curves(stages: dict[str, list[dict[str, Any]]]) -> list[str]:
    """GRPO curves (overall and per domain family), the continuous held-out curve and
    the SFT / DPO / control losses, from metrics records grouped by stage."""
    figures = []
    grpo = stages.get("grpo", [])
    keys = dict.fromkeys(k for row in grpo for k in (row.get("values") or {}))
    families = list(dict.fromkeys(
        k.split("/")[1] for k in keys if k.startswith("by_family/") and k.count("/") == 2
    ))  # fmt: skip
    for key, suffix, label in CURVES:
        group = [metric_series(grpo, "grpo", key, "all")]
        if suffix:
            group += [metric_series(grpo, "grpo", f"by_family/{f}/{suffix}", f) for f in families]
        found = [s for s in group if s is not None]
        if found:
            title = f"GRPO {label}" + (" per domain family" if len(found) > 1 else "")
            figures.append(line_figure(f"curve-{key}", title, [(label, found)]))
    heldout = stages.get("heldout", [])
    domains = dict.fromkeys(
        k for row in heldout for k in (row.get("values") or {}) if k.endswith("/completion")
    )
    group = [metric_series(heldout, "heldout", "completion", "all")]
    group += [metric_series(heldout, "heldout", k, k.removesuffix("/completion")) for k in domains]
    found = [s for s in group if s is not None]
    if found:
        title = "Held-out completion during GRPO"
        figures.append(line_figure("curve-heldout", title, [("completion", found)], "GRPO step"))
    else:
        figures.append(missing('No continuous held-out evaluation (stage "heldout") logged.'))
    panels = []
    for stage in ("sft", "dpo", "control"):
        loss = metric_series(stages.get(stage, []), stage, "loss", stage)
        if loss is not None:
            panels.append((f"{stage} loss", [loss]))
    if panels:
        figures.append(line_figure("curve-loss", "Training loss", panels))
    return figures


def throughput_figure(grpo: list[dict[str, Any]]) -> str | None:
    """Seconds per GRPO step (rollout, update) and tokens per second; None if unlogged."""
    seconds = [s for k in ("rollout_s", "update_s") if (s := metric_series(grpo, "grpo", k, k))]
    speed = metric_series(grpo, "grpo", "tokens_per_s", "tokens_per_s")
    panels = [("seconds per step", seconds)] if seconds else []
    panels += [("tokens / s", [speed])] if speed else []
    return line_figure("throughput", "Throughput (GRPO)", panels) if panels else None


def domain_bars(figure_id: str, docs: dict[str, dict[str, Any]], sources: dict[str, str]) -> str:
    """Grouped bars: per domain, the completion rate of each results document (by label),
    with its Wilson interval; a domain a document lacks is null there."""
    domains = list(dict.fromkeys(d for doc in docs.values() for d in doc.get("per_domain", {})))
    if not domains:
        return missing("The results hold no domains.")
    series = []
    for label, doc in docs.items():
        rates = [doc["per_domain"].get(d, {}).get("completed") for d in domains]
        series.append({
            "name": label, "source": sources[label], "stage": label,
            "key": "per_domain/*/completed", "x": domains,
            "y": [x["rate"] if x else None for x in rates],
            "low": [x["low"] if x else None for x in rates],
            "high": [x["high"] if x else None for x in rates],
        })  # fmt: skip
    return bar_figure(figure_id, "Completion rate per domain", series, "completion")


def cell_order(per_cell: dict[str, Any]) -> list[str]:
    """The per-cell keys ("modality/tools/rounds/verification") in the axes' value order;
    keys that are not four parts are left out."""
    from posttrain.domains.matrix import AXIS_VALUES

    def rank(key: str) -> list[tuple[int, str]]:
        ranks = []
        for values, value in zip(AXIS_VALUES.values(), key.split("/"), strict=True):
            ranks.append((values.index(value) if value in values else len(values), value))
        return ranks

    return sorted((k for k in per_cell if k.count("/") == 3), key=rank)


def cell_heatmap(figure_id: str, doc: dict[str, Any], source: str, label: str) -> str:
    """The matrix as a 2-D grid (rows: modality · tools; columns: rounds · verification),
    only non-empty rows and columns, coloured and annotated by the cells' pass rates."""
    per_cell = doc.get("per_cell") or {}
    order = cell_order(per_cell)
    if not order:
        return missing(f"{source} holds no per-cell results.")
    parts = [k.split("/") for k in order]
    row_of = [f"{p[0]} · {p[1]}" for p in parts]
    col_of = [f"{p[2]} · {p[3]}" for p in parts]
    rates = [per_cell[k]["completed"] for k in order]
    series = [{
        "name": label, "source": source, "stage": label, "key": "per_cell/*/completed",
        "x": order, "y": [c["rate"] for c in rates], "n": [c["n"] for c in rates],
        "low": [c["low"] for c in rates], "high": [c["high"] for c in rates],
    }]  # fmt: skip
    grid = {(r, c): (x["rate"], x["n"]) for r, c, x in zip(row_of, col_of, rates, strict=True)}
    title = "Pass rate per matrix cell"
    rows, cols = list(dict.fromkeys(row_of)), list(dict.fromkeys(col_of))
    return heatmap_figure(figure_id, title, rows, cols, grid, series)


def reward_histograms(rewards: Sequence[tuple[int, float]]) -> str:
    """Histograms of GRPO rollout rewards, (step, reward) pairs: the first fifth of the
    steps against the last fifth (all steps when there is only one)."""
    import numpy as np

    steps = sorted({step for step, _ in rewards})
    fifth = max(1, len(steps) // 5)
    groups = [("early", steps[:fifth]), ("late", steps[-fifth:])] if len(steps) > 1 else []
    groups = groups or [("all", steps)]
    finite = [v for _, v in rewards if math.isfinite(v)]
    low, high = min([0.0, *finite]), max([1.0, *finite])
    edges = np.linspace(low, high, HIST_BINS + 1)
    series = []
    for name, chosen in groups:
        first, last = chosen[0], chosen[-1]
        picked = [v for s, v in rewards if first <= s <= last and math.isfinite(v)]
        counts, _ = np.histogram(picked, bins=edges)
        series.append({
            "name": f"{name}: steps {first}-{last} ({len(picked)} rollouts)",
            "source": "traces.sqlite", "stage": "grpo", "key": "reward",
            "x": [float(e) for e in edges], "y": [int(c) for c in counts],
            "steps": [first, last], "n": len(picked),
        })  # fmt: skip
    return histogram_figure("rewards", "GRPO rollout rewards, early vs late", series, "reward")
