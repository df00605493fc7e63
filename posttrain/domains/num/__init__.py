"""The `num` family: arithmetic and number formats, as single-turn one-answer domains.

    from posttrain.domains.num import DOMAINS
    for domain in DOMAINS:
        task = domain.generate(seed=0, difficulty=3)

Every domain is an `AnswerDomain` in cell text / none / single, verified by one of:

- exact — one canonical answer (an integer, `Q R`, a reduced `p/q`, a rounded decimal,
  a Roman numeral, words ...): `integers.py`, `divisibility.py` (gcd, lcm),
  `fractions_decimals.py` (simplify, round, largest), `formats.py`, `words.py`,
  `percents_stats.py` (median);
- numeric — a decimal within the absolute tolerance the prompt states:
  `percents_stats.py` (percent of, percent change, mean);
- math — any equivalent form of the value: `divisibility.py` (prime factorization in
  any order), `fractions_decimals.py` (fraction arithmetic, reduced or not).

`numerals.py` holds the strict number readers and writers they share. Each module's
docstring says what its domains ask and how difficulty grows.

Not guaranteed: answers must be exactly in the format each prompt states (prose around
the answer scores 0); the family covers school arithmetic, not word problems.
"""

from posttrain.domains.answer_domain import AnswerDomain
from posttrain.domains.num import (
    divisibility,
    formats,
    fractions_decimals,
    integers,
    percents_stats,
    words,
)

DOMAINS: tuple[AnswerDomain, ...] = (
    *integers.DOMAINS,
    *divisibility.DOMAINS,
    *fractions_decimals.DOMAINS,
    *percents_stats.DOMAINS,
    *formats.DOMAINS,
    *words.DOMAINS,
)

__all__ = ["DOMAINS"]
