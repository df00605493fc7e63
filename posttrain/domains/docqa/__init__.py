"""The `docqa/*` family: question answering over generated documents.

Reports, memos, policies, meeting notes and financial summaries, each a different
task kind with its own generator and verifier: a span (who approved a request), a
computed figure (growth between two years), a set (everyone who owns an open item),
an answer with a verbatim supporting quote, an answer-or-"unanswerable" decision, and
a long handbook readable only through `search` / `read_section` tools.
`corpus.py` holds the shared document pieces.

    from posttrain.domains.docqa import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Not guaranteed: see each module's docstring; the documents are synthetic and built
from small pools of names, projects and phrasings.
"""

from posttrain.domains.docqa import answerable, finance, handbook, memos

DOMAINS = (*memos.DOMAINS, *finance.DOMAINS, *answerable.DOMAINS, *handbook.DOMAINS)

__all__ = ["DOMAINS"]
