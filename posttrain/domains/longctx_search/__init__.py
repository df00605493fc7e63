"""The `longctx-search/*` family: answer from a haystack of 10k to 1M tokens with search tools.

The model never sees the haystack: it gets `search_document(query, k)` and
`read_chunk(id)` (`posttrain.tools.document.DocumentSearch`, BM25 over ~200-token
chunks) and must cite the chunks it read.

- `longctx-search/needle-v1` (`needle.py`) — one fact among look-alikes; the value
  and the chunk it came from;
- `longctx-search/multi-hop-v1` (`multihop.py`) — two or three facts, each naming the
  next; the final value and one chunk per hop.

`haystack.py` grows the filler prose and plants facts at known offsets, `world.py`
holds the names and templates, `framework.py` the session, the corpus cache and the
base class (also used by `documents/long-*`).

    from posttrain.domains.longctx_search import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Not guaranteed: see each module's docstring; the haystack is synthetic prose and the
document is rebuilt (and indexed, ~1-4 s at 1M tokens) in every process that opens,
references or verifies a task.
"""

from posttrain.domains.longctx_search import multihop, needle

DOMAINS = (*needle.DOMAINS, *multihop.DOMAINS)

__all__ = ["DOMAINS"]
