"""The `text` family's single-turn domains: encode, rewrite, count and recognize strings.

    from posttrain.domains.text_ops import DOMAINS
    for domain in DOMAINS:
        task = domain.generate(seed=0, difficulty=3)

Every domain is an `AnswerDomain` in cell text / none / single, verified by one of:

- exact — one string or integer: `ciphers.py` (Caesar encoding, Vigenère decoding,
  run-length encoding), `words.py` (snake_case ↔ camelCase, title case, acronym, pig
  latin, sorting words by length, longest word), `counting.py` (vowels, whole-word
  occurrences, substring position, edit distance);
- structure — a JSON object of letter counts: `counting.py` (character frequency);
- set match — numbers or words in any order, none repeated: `patterns.py`
  (palindromes, anagrams);
- validity — any string meeting the stated constraints: `patterns.py` (bracket
  completion).

`formats.py` holds the answer judges they share and `vocabulary.py` the word bank.
`text/reverse-v1` (in `posttrain/domains/strings.py`) belongs to the family but not to
this package.

Not guaranteed: answers must be exactly in the format each prompt states (prose around
the answer scores 0); inputs are ASCII, mostly lowercase English words.
"""

from posttrain.domains.answer_domain import AnswerDomain
from posttrain.domains.text_ops import ciphers, counting, patterns, words

DOMAINS: tuple[AnswerDomain, ...] = (
    *ciphers.DOMAINS,
    *words.DOMAINS,
    *counting.DOMAINS,
    *patterns.DOMAINS,
)

__all__ = ["DOMAINS"]
