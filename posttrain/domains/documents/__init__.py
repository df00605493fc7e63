"""The `documents/*` family: financial-document analysis over generated annual filings.

One seeded company (`company.py`: income statement, balance sheet, cash flows,
segments, identities that always hold) becomes a filing (`filing.py`: id-carrying
tables and note lines; `narrative.py`: distractor tables and narrative to a token
target, up to ~200k tokens with `long_filing`; `render.py`: plain text, Markdown,
HTML). Twelve single-turn domains ask different things of it (`frame.py` holds the
shared body, `cite.py` the traceability rule), and two multi-turn long variants hide
a 10k-200k-token filing behind search tools (`long_filing.py`):

- fields + citations: `extract-cited`, `crossdoc-cited` (`tasks_cited.py`);
- numeric: `metric-formula`, `scale-sum`, `restated-figure` (`tasks_numeric.py`),
  `segment-share` (table);
- exact: `reconcile`; set match: `anomalies`, `covenants` (`tasks_checks.py`),
  `growth-set` (table, `tasks_tables.py`);
- structure: `missing-cells` (table), `cash-bridge` (`tasks_derive.py`);
- retrieval tools: `long-cited-extraction` (fields + citations), `long-metric` (numeric).

    from posttrain.domains.documents import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Not guaranteed: see each module's docstring; the companies are synthetic.
"""

from posttrain.domains.documents import (
    long_filing,
    tasks_checks,
    tasks_cited,
    tasks_derive,
    tasks_numeric,
    tasks_tables,
)

DOMAINS = (
    *tasks_cited.DOMAINS,
    *tasks_numeric.DOMAINS,
    *tasks_checks.DOMAINS,
    *tasks_derive.DOMAINS,
    *tasks_tables.DOMAINS,
    *long_filing.DOMAINS,
)

__all__ = ["DOMAINS"]
