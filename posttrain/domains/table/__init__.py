"""The `table` family: question answering over synthetic tables rendered as Markdown, HTML or CSV.

    from posttrain.domains.table import DOMAINS
    for domain in DOMAINS:
        task = domain.generate(seed=0, difficulty=3)

Every domain is a single-turn `TableQuestion` (an `AnswerDomain`) in cell
table / none / single. One generator (`data.py`: sales, employees, city temperatures,
inventory, league results) and three renderers (`render.py`; the rendering is a task
parameter in `task.meta["format"]`, not a domain) serve all questions, which are split
by what they ask:

- `lookup.py` — exact: a cell, the column holding a value, a value through a join;
- `aggregate.py` — a filtered count (exact), a column sum and mean (numeric), and a
  group-by aggregate as a JSON object (structure);
- `compare.py` — the row with the largest or smallest value and a row's rank (exact),
  the difference and the percent change between two rows (numeric);
- `select.py` — the rows meeting several conditions and the top k (set match), and the
  rows sorted by a column (exact, ordered).

Rows grow from 4 (d=1) to 40 (d=10), number columns from 2 to 6, and conditions get
compound; `difficulty_measure` is the number of cells shown. Questions that order rows
state their tie rule (by name, alphabetically).

Not guaranteed: answers must be exactly in the format each prompt states (prose around
the answer scores 0); tables are synthetic and small enough to fit a prompt.
"""

from posttrain.domains.table import aggregate, compare, lookup, select
from posttrain.domains.table.question import TableQuestion

DOMAINS: tuple[TableQuestion, ...] = (
    *lookup.DOMAINS,
    *aggregate.DOMAINS,
    *compare.DOMAINS,
    *select.DOMAINS,
)

__all__ = ["DOMAINS"]
