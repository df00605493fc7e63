"""The `extract/*` family: structured extraction to JSON from short documents.

Thirteen single-turn domains, each a different document kind with its own generator
and schema: ten verified by structure (strict JSON, JSON Schema, then field by field)
and three cited variants verified by fields + citations (every value with a verbatim
quote). `record.py` holds the shared prompt and scoring, `documents.py` the pieces
documents are built from.

    from posttrain.domains.extract import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Not guaranteed: see each module's docstring; the documents are synthetic and built
from small pools of names, places and phrasings.
"""

from posttrain.domains.extract import citations, commerce, events, finance, people

DOMAINS = (
    *commerce.DOMAINS,
    *finance.DOMAINS,
    *people.DOMAINS,
    *events.DOMAINS,
    *citations.DOMAINS,
)

__all__ = ["DOMAINS"]
