"""The `codeqa` family: reason about short generated programs without running them.

    from posttrain.domains.codeqa import DOMAINS
    for domain in DOMAINS:
        task = domain.generate(seed=0, difficulty=3)

Every domain is an `AnswerDomain` in cell code / none / single; the answers are computed
when the task is generated, by our own interpreters over programs we generated (never by
executing text), and verification only compares strings:

- `tracing.py` — Python snippets: printed output, a variable's final value, a line's
  execution count (exact), the lines that never run (set match);
- `calls.py` — recursive functions' return values (exact) and the order of function calls
  (structure: a JSON array);
- `sql.py` — a SELECT over a tiny inline table (set match of names);
- `shell.py` — a `sort | uniq -c | sort -rn | head` style pipeline over given text (exact).

`snippets.py` generates and interprets the snippets; `judging.py` holds the shared judges.

Not guaranteed: answers must be exactly in the format each prompt states (prose around
the answer scores 0); programs are small and use only a narrow subset of each language.
"""

from posttrain.domains.answer_domain import AnswerDomain
from posttrain.domains.codeqa import calls, shell, sql, tracing

DOMAINS: tuple[AnswerDomain, ...] = (
    *tracing.DOMAINS,
    *calls.DOMAINS,
    *sql.DOMAINS,
    *shell.DOMAINS,
)

__all__ = ["DOMAINS"]
