"""Split a document into token-bounded chunks along its own structure.

    chunks = chunk_text(text, doc_id="manual", tokenizer=tok, max_tokens=200, overlap_tokens=30)
    chunks[3].id, chunks[3].text, chunks[3].heading, text[chunks[3].start:chunks[3].end]

How a document is cut:
- a heading line (markdown `#`, `Chapter N` / `Part IV` / `Appendix B` / `Book One`
  with the keyword capitalised, or a short all-caps title line; never inside a fenced
  code block) starts a new section; chunks never cross sections, and every
  chunk of a section records the heading in `Chunk.heading` (the first chunk also
  holds the heading line itself);
- inside a section, paragraphs (blank-line separated), tables and headings are
  packed greedily up to `max_tokens`; consecutive chunks of one section share
  `overlap_tokens` tokens (fewer when the next block would not fit otherwise);
- a table (two or more consecutive lines with `|`, or with tab-separated columns)
  is kept whole when it fits in a chunk, else it is split between rows only;
- a paragraph larger than a chunk is split at sentence ends (`.`, `!`, `?` before a
  space; `。`, `！`, `？` anywhere), and a sentence (or a
  table row) larger than a chunk at token boundaries, as a last resort; a single
  character that alone takes more than `max_tokens` tokens (an emoji is 4 byte-level
  tokens) is a ValueError, since no chunk may exceed `max_tokens`.

The document is tokenized once (one batched call, one piece per paragraph with the
blank lines after it); every chunk's `n_tokens` is then its exact count with the
same tokenizer (one more batched call), trimmed if the seams made it too long. What
a trim cuts off starts the next chunk of the section (or a chunk of its own), so
every non-blank character of the document lies in some chunk.
Ids are `f"{doc_id}#{index}"`: the same text and settings give the same ids.

Not guaranteed: sentence detection is a regex (abbreviations like "Dr." may end a
"sentence"); headings are recognised by the three line shapes above only; with
`tokenizer=None` sizes are the chars/4 estimate of `tokens.py`. A counter that is not a
fast tokenizer (an object with `count` or `encode` only) gives no token offsets: blocks
are packed by the estimate, and a chunk it overfills is cut at the last word that fits
by that counter's own count (a binary search).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from posttrain.context.tokens import TokenCounter, count_batch, token_counter, token_spans


@dataclass(frozen=True)
class Chunk:
    """One piece of a document. `start`/`end` are character offsets into it."""

    id: str
    doc_id: str
    index: int
    text: str
    start: int
    end: int
    n_tokens: int
    heading: str = ""


_MD_HEADING = re.compile(r"#{1,6}\s+\S")
# "Chapter 3", "PART IV", "Appendix B", "Book One": the keyword capitalised, then a
# number, a roman numeral, one capital letter or a number word ("part of the ..." is prose)
_NAMED_HEADING = re.compile(
    r"(?:Chapter|Part|Section|Book|Appendix|CHAPTER|PART|SECTION|BOOK|APPENDIX)\s+"
    r"(?:[0-9]+(?:\.[0-9]+)*|(?i:(?=[MDCLXVI])M{0,4}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))"
    r"|[A-Z]|(?i:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
    r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty))(?![\w'’-])"
)
_FENCE = re.compile(r"\s*(?:```|~~~)")
_WORD_RUN = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+|[。！？][」』）]*")  # CJK ends need no space
_MAX_HEADING_CHARS = 80
_HEAD_TOKENS = 8  # how much of a word `_Tokens.size` counts standing alone


def is_heading(line: str) -> bool:
    """Markdown heading, `Chapter 3: ...`-style line, or a short all-caps title."""
    s = line.strip()
    if not s or len(s) > _MAX_HEADING_CHARS or "|" in s or "\t" in s:
        return False
    if _MD_HEADING.match(s):
        return True
    if _NAMED_HEADING.match(s) and not s.endswith((".", ",", ";")):
        return True
    letters = [c for c in s if c.isalpha()]
    return len(letters) >= 3 and all(c.isupper() for c in letters) and s[-1] not in ".,;"


def _is_table_line(line: str) -> bool:
    s = line.strip()
    return bool(s) and ("|" in s or "\t" in s)


@dataclass
class _Block:
    kind: str  # "heading" | "table" | "para"
    start: int
    end: int
    rows: list[tuple[int, int]]  # line spans, for tables


@dataclass(frozen=True)
class _Span:
    """A chunk-to-be: its character span and the section it belongs to."""

    start: int
    end: int
    section: int
    heading: str


def _lines(text: str) -> Iterator[tuple[int, int]]:
    pos = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        yield pos, end
        pos = end + 1


def _blocks(text: str) -> list[_Block]:
    """Headings, tables and paragraphs in document order (spans exclude blank lines)."""
    lines = list(_lines(text))
    kinds: list[str] = []
    fenced = False  # inside a ``` code block: a `# comment` line is no heading
    for s, e in lines:
        line = text[s:e]
        if _FENCE.match(line):
            fenced = not fenced
        if not line.strip():
            kinds.append("blank")
        elif is_heading(line) and not (fenced or _FENCE.match(line)):
            kinds.append("heading")
        elif _is_table_line(line):
            kinds.append("table")
        else:
            kinds.append("para")
    # a lone line with a pipe or a tab is prose, not a table
    for i, k in enumerate(kinds):
        if k == "table":
            prev_t = i > 0 and kinds[i - 1] == "table"
            next_t = i + 1 < len(kinds) and kinds[i + 1] == "table"
            if not (prev_t or next_t):
                kinds[i] = "para"
    blocks: list[_Block] = []
    for (s, e), kind in zip(lines, kinds, strict=True):
        if kind == "blank":
            continue
        s = _first_nonspace(text, s, e)  # an indent is not part of the block's text
        prev = blocks[-1] if blocks else None
        contiguous = prev is not None and text.count("\n", prev.end, s) == 1
        if prev is not None and contiguous and kind == prev.kind and kind != "heading":
            prev.end = e
            if kind == "table":
                prev.rows.append((s, e))
            continue
        blocks.append(_Block(kind, s, e, [(s, e)] if kind == "table" else []))
    return blocks


class _Tokens:
    """The document's token start offsets, for counting tokens of any span."""

    def __init__(self, text: str, blocks: list[_Block], tokenizer: Any | None) -> None:
        # one piece per block, the blank lines before it included: the pieces tile the
        # text, and a cut between a non-space and a newline is a token boundary for
        # regex pre-tokenizers, so the pieces' tokens are the whole text's tokens
        cuts = [0] + [b.end for b in blocks[:-1]] + [len(text)]
        pieces = [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]
        spans = token_spans(tokenizer, pieces)
        arrays = [sp + a for sp, a in zip(spans, cuts, strict=False)]
        self.starts = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        self.n = len(self.starts)
        self.text = text
        self.counter = token_counter(tokenizer)
        # Offsets of the counter's own tokens (a fast tokenizer, or the estimate's
        # 4-character pseudo-tokens for None); else pseudo-tokens in another unit.
        self.exact = tokenizer is None or getattr(tokenizer, "backend_tokenizer", None) is not None
        self._heads: dict[int, tuple[int, int]] = {}

    def index(self, pos: int) -> int:
        """How many tokens start before character `pos`."""
        return int(np.searchsorted(self.starts, pos, side="left"))

    def _head(self, pos: int) -> tuple[int, int]:
        """(end of the word at `pos`, its token count standing alone): a chunk that
        starts mid-paragraph loses the word's leading space, which often changes
        how that one word is tokenized. A word is cut after `_HEAD_TOKENS` tokens, so
        a long run without spaces (CJK text, base64, minified code) costs a short
        count per call, not one over the whole run; `_finish` counts exactly anyway."""
        got = self._heads.get(pos)
        if got is None:
            m = _WORD_RUN.match(self.text, pos)
            end = min(m.end(), self.char(self.index(pos) + _HEAD_TOKENS)) if m else pos
            got = self._heads[pos] = (end, self.counter.count(self.text[pos:end]))
        return got

    def size(self, a: int, b: int) -> int:
        """Tokens the text [a, b) takes standing alone (exact for regex pre-tokenizers
        up to merges across the two ends)."""
        end, head = self._head(a)
        if end <= a or end >= b:
            return self.index(b) - max(0, int(np.searchsorted(self.starts, a, "right")) - 1)
        return head + self.index(b) - self.index(end)

    def char(self, tok: int) -> int:
        """Where token `tok` starts; the end of the text for `tok` past the last token."""
        return int(self.starts[tok]) if tok < self.n else len(self.text)


def _snap(text: str, pos: int, limit: int, tables: list[tuple[int, int]], fallback: int) -> int:
    """Move an overlap start forward to a row start inside a table, else to a word
    start, so no chunk opens with half a row or half a word; `fallback` (the next
    piece) when no such point lies before `limit`, except in a script written without
    spaces (CJK, Thai: letters of category Lo), where the token boundary `pos` stays."""
    i = bisect.bisect_right(tables, (pos, len(text) + 1)) - 1
    in_table = i >= 0 and tables[i][0] <= pos < tables[i][1]
    if pos > 0 and text[pos - 1] != "\n" and (in_table or not text[pos - 1].isspace()):
        stop = "\n" if in_table else None
        j = pos
        while j < limit and not (text[j] == stop if stop else text[j].isspace()):
            j += 1
        if j < limit or in_table or not _unspaced(text, pos):
            pos = j + 1
    return pos if pos < limit else fallback


def _unspaced(text: str, pos: int) -> bool:
    """Whether `pos` lies between letters of a script written without spaces."""
    return any(unicodedata.category(c) == "Lo" for c in text[max(0, pos - 1) : pos + 1])


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        out.append((pos, m.start() + 1 + len(m.group(0).rstrip()) - 1))
        pos = m.end()
    if pos < end:
        out.append((pos, end))
    return [(a, b) for a, b in out if b > a]


def _windows(tokens: _Tokens, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Cut [start, end) at token boundaries into spans of at most `size` tokens."""
    first, last = tokens.index(start), tokens.index(end)
    out: list[tuple[int, int]] = []
    for t in range(first, last, size):
        a = start if t == first else tokens.char(t)
        b = end if t + size >= last else tokens.char(t + size)
        out.append((a, b))
    return out or [(start, end)]


def _pieces(
    text: str, block: _Block, tokens: _Tokens, max_tokens: int, window: int
) -> list[tuple[int, int]]:
    """The unsplittable spans of one block, each at most `max_tokens` when possible."""

    size = tokens.size
    if size(block.start, block.end) <= max_tokens:
        return [(block.start, block.end)]
    if block.kind == "table":
        parts = block.rows
    elif block.kind == "para":
        parts = _sentences(text, block.start, block.end)
    else:
        parts = [(block.start, block.end)]
    out: list[tuple[int, int]] = []
    for a, b in parts:
        out.extend([(a, b)] if size(a, b) <= max_tokens else _windows(tokens, a, b, window))
    return out


def chunk_text(
    text: str,
    doc_id: str = "doc",
    tokenizer: Any | None = None,
    max_tokens: int = 200,
    overlap_tokens: int = 30,
) -> list[Chunk]:
    """Chunks of at most `max_tokens` tokens (of `tokenizer`; None: the chars/4
    estimate), `overlap_tokens` shared between consecutive chunks of one section.
    Raises ValueError for settings out of range, or a character that alone takes
    more than `max_tokens` tokens."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError(
            f"overlap_tokens must be in [0, max_tokens), got {overlap_tokens} (max_tokens={max_tokens})"
        )
    blocks = _blocks(text)
    if not blocks:
        return []
    tokens = _Tokens(text, blocks, tokenizer)
    window = max(1, max_tokens - overlap_tokens)
    tables = [(b.start, b.end) for b in blocks if b.kind == "table"]
    spans: list[_Span] = []  # before stripping and trimming
    heading = ""
    section = 0  # a number per section: two sections may share a heading's text
    cur_start = cur_end = -1
    section_has_body = False

    def emit() -> None:
        if cur_start >= 0:
            spans.append(_Span(cur_start, cur_end, section, heading))

    for block in blocks:
        if block.kind == "heading":
            line = text[block.start : block.end].strip()
            if section_has_body or cur_start < 0:
                emit()
                cur_start, cur_end = block.start, block.end
                section += 1
            else:  # consecutive headings form one section; the nearest one names it
                cur_end = block.end
            heading, section_has_body = line, False
            continue
        section_has_body = True
        for a, b in _pieces(text, block, tokens, max_tokens, window):
            if cur_start < 0:
                cur_start, cur_end = a, b
                continue
            if tokens.size(cur_start, b) <= max_tokens:
                cur_end = b
                continue
            emit()
            prev_start = _first_nonspace(text, cur_start, cur_end)
            end_tok, first_tok = tokens.index(cur_end), tokens.index(prev_start)
            ov_tok = max(end_tok - overlap_tokens, tokens.index(b) - max_tokens, first_tok + 1)
            cur_start = a
            while overlap_tokens and ov_tok < end_tok:
                cur_start = _snap(text, tokens.char(ov_tok), cur_end, tables, a)
                excess = tokens.size(cur_start, b) - max_tokens
                if excess <= 0:
                    break
                ov_tok, cur_start = ov_tok + excess, a
            if _first_nonspace(text, cur_start, b) <= prev_start:
                cur_start = a  # no step past the last start (tokens may start inside a character)
            cur_end = b
    emit()
    return _finish(text, doc_id, spans, tokens, tokenizer, max_tokens)


def _finish(
    text: str,
    doc_id: str,
    spans: list[_Span],
    tokens: _Tokens,
    tokenizer: Any | None,
    max_tokens: int,
) -> list[Chunk]:
    """Strip, count exactly, and trim any chunk the seams made too long. A trimmed
    tail joins the next span of its section (which then starts where the trimmed
    chunk ends), or, at the end of a section, becomes a chunk of its own: no text
    is lost to trimming. A span left inside the chunk before it is dropped."""
    pending = deque(s for s in (_strip(text, sp) for sp in spans) if s is not None)
    counter = token_counter(tokenizer)
    counts: deque[int | None] = deque(
        count_batch(counter, [text[sp.start : sp.end] for sp in pending])
    )
    chunks: list[Chunk] = []
    while pending:
        span = pending.popleft()
        counted = counts.popleft()
        n = counted if counted is not None else counter.count(text[span.start : span.end])
        a, b = span.start, span.end
        if n > max_tokens:
            b, n = _trim(text, a, b, n, tokens, counter, max_tokens)
            rest = _strip(text, replace(span, start=b))
            joins_next = bool(pending) and pending[0].section == span.section
            if rest is not None and joins_next:
                if pending[0].start > rest.start:  # else the next span's overlap holds it
                    pending[0] = replace(pending[0], start=rest.start)
                    counts[0] = None
            elif rest is not None:
                pending.appendleft(rest)
                counts.appendleft(None)
        if chunks and chunks[-1].start <= a and b <= chunks[-1].end:
            continue  # all overlap (a trim left only what the last chunk holds): no repeat
        i = len(chunks)
        chunks.append(Chunk(f"{doc_id}#{i}", doc_id, i, text[a:b], a, b, n, span.heading))
    return chunks


def _first_nonspace(text: str, start: int, end: int) -> int:
    """The first position in [start, end) that is not whitespace (`end` if none)."""
    seg = text[start:end]
    return start + (len(seg) - len(seg.lstrip()))


def _strip(text: str, span: _Span) -> _Span | None:
    """`span` without its leading and trailing whitespace; None when nothing is left."""
    seg = text[span.start : span.end]
    start = _first_nonspace(text, span.start, span.end)
    end = span.end - (len(seg) - len(seg.rstrip()))
    return replace(span, start=start, end=end) if end > start else None


def _trim(
    text: str, a: int, b: int, n: int, tokens: _Tokens, counter: TokenCounter, max_tokens: int
) -> tuple[int, int]:
    """Shorten [a, b), `n` tokens long, until it fits in `max_tokens`; returns the new
    end and its token count. Raises ValueError when the first character alone takes
    more: chunks are at most `max_tokens` long, and a character cannot be split."""
    while n > max_tokens:
        if b - a <= 1:
            raise ValueError(
                f"max_tokens={max_tokens} is too small: the character {text[a]!r} at "
                f"offset {a} alone takes {n} tokens"
            )
        if tokens.exact:  # cut the excess off the end, in the document's tokens
            end_tok = tokens.index(b) - (n - max_tokens)
            new_b = tokens.char(max(end_tok, tokens.index(a) + 1))
        else:  # offsets in another unit than the counter's: search with the counter
            new_b = _fitting_end(text, a, b, counter, max_tokens)
        new_b = a + len(text[a:new_b].rstrip())
        if new_b <= a or new_b >= b:
            # no token boundary helps: shrink in proportion, at least one character
            new_b = a + max(1, (b - a) * max_tokens // n)
        b = new_b
        n = counter.count(text[a:b])
    return b, n


def _fitting_end(text: str, a: int, b: int, counter: TokenCounter, max_tokens: int) -> int:
    """The longest [a, end) with end < b that `counter` puts within `max_tokens`
    (a binary search over characters: counts grow with the text, up to merges),
    moved back to the last word's end when it falls inside a word."""
    lo, hi = a + 1, b - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[a:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    if not (text[lo].isspace() or text[lo - 1].isspace()):  # inside a word
        space = max(text.rfind(c, a + 1, lo) for c in " \n\t")
        if space > a:
            lo = space
    return lo
