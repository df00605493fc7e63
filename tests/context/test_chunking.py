"""Chunking: token bounds, overlap, structure-respecting boundaries, stable ids."""

from __future__ import annotations

import random
from typing import Any

import pytest

from posttrain.context.chunking import chunk_text, is_heading
from posttrain.context.tokens import token_counter


def test_chunks_fit_max_tokens_with_the_real_tokenizer(smollm2: Any, document: str) -> None:
    chunks = chunk_text(document, "d", smollm2, max_tokens=64, overlap_tokens=10)
    counter = token_counter(smollm2)
    assert len(chunks) > 10
    for c in chunks:
        assert counter.count(c.text) == c.n_tokens <= 64


def test_chunk_text_is_the_document_span(smollm2: Any, document: str) -> None:
    for c in chunk_text(document, "d", smollm2, max_tokens=80, overlap_tokens=10):
        assert document[c.start : c.end] == c.text
        assert c.id == f"d#{c.index}"


def test_chunks_cover_every_word(smollm2: Any, document: str) -> None:
    chunks = chunk_text(document, "d", smollm2, max_tokens=50, overlap_tokens=0)
    covered = bytearray(len(document))
    for c in chunks:
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, ch in enumerate(document) if not ch.isspace() and not covered[i]]
    assert missing == []


def test_consecutive_chunks_of_a_section_overlap(smollm2: Any) -> None:
    sentence = "The northern canal carries barges of copper past the old stone mill. "
    text = "Chapter 1\n\n" + sentence * 60
    chunks = chunk_text(text, "d", smollm2, max_tokens=60, overlap_tokens=15)
    counter = token_counter(smollm2)
    assert len(chunks) >= 3
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end  # they share text
        shared = counter.count(text[b.start : a.end])
        assert 10 <= shared <= 16


def test_no_overlap_across_a_heading(smollm2: Any, document: str) -> None:
    chunks = chunk_text(document, "d", smollm2, max_tokens=64, overlap_tokens=10)
    for a, b in zip(chunks, chunks[1:], strict=False):
        if a.heading != b.heading:
            assert b.start >= a.end
            assert b.text.startswith(b.heading)


def test_heading_lines_start_chunks_and_name_them(smollm2: Any) -> None:
    text = "# Intro\n\nShort intro.\n\nCHAPTER TWO\n\nSecond part.\n\nChapter 3: The End\n\nLast."
    chunks = chunk_text(text, "d", smollm2, max_tokens=200, overlap_tokens=20)
    assert [c.heading for c in chunks] == ["# Intro", "CHAPTER TWO", "Chapter 3: The End"]
    assert [c.text.splitlines()[0] for c in chunks] == [c.heading for c in chunks]


def test_heading_detection_ignores_prose_lines() -> None:
    assert is_heading("## Setup") and is_heading("Chapter 12") and is_heading("PART ONE")
    assert not is_heading("Chapter 3 was the best one, said Anna.")
    assert not is_heading("A normal sentence.") and not is_heading("| A | B |")
    # hard-wrapped prose that opens with a heading keyword is no heading
    assert is_heading("Appendix B") and is_heading("Section 2.3 Results") and is_heading("Part IV")
    for line in ("part of the cooling system was damaged beyond repair", "Section of pipe had",
                 "Book a room at the inn before", "Chapter 3's aftermath"):  # fmt: skip
        assert not is_heading(line), line


def test_a_comment_in_a_fenced_code_block_is_no_heading() -> None:
    text = "Intro.\n\n```python\n# set up\nx = 1\n```\n\n# Usage\n\nCall it."
    chunks = chunk_text(text, "d", None, max_tokens=200, overlap_tokens=0)
    assert [c.heading for c in chunks] == ["", "# Usage"]
    assert "# set up" in chunks[0].text


def test_a_table_that_fits_is_kept_whole(smollm2: Any) -> None:
    prose = "Words of prose about the harbor and its many boats. " * 6
    table = "| name | value |\n|---|---|\n" + "\n".join(f"| row{i} | {i * 7} |" for i in range(8))
    text = f"{prose}\n\n{table}\n\n{prose}"
    chunks = chunk_text(text, "d", smollm2, max_tokens=120, overlap_tokens=10)
    assert any(table in c.text for c in chunks)


def test_a_long_table_splits_between_rows_only(smollm2: Any) -> None:
    rows = [f"| row {i} | value {i * 13} | note {i} |" for i in range(80)]
    text = "| key | value | note |\n" + "\n".join(rows)
    chunks = chunk_text(text, "d", smollm2, max_tokens=60, overlap_tokens=10)
    assert len(chunks) > 3
    for c in chunks:
        for line in c.text.splitlines():
            assert line.startswith("|") and line.endswith("|"), line


def test_a_long_paragraph_splits_at_sentence_ends(smollm2: Any) -> None:
    text = " ".join(f"Sentence number {i} talks about the harbor lantern." for i in range(60))
    chunks = chunk_text(text, "d", smollm2, max_tokens=50, overlap_tokens=0)
    assert len(chunks) > 3
    assert all(c.text.endswith(".") for c in chunks)


def test_a_giant_sentence_splits_at_token_boundaries(smollm2: Any) -> None:
    text = "word " * 500
    chunks = chunk_text(text, "d", smollm2, max_tokens=40, overlap_tokens=5)
    assert len(chunks) > 10
    assert all(c.n_tokens <= 40 for c in chunks)


def test_same_text_and_settings_give_the_same_ids(smollm2: Any, document: str) -> None:
    a = chunk_text(document, "d", smollm2, max_tokens=64, overlap_tokens=8)
    b = chunk_text(document, "d", smollm2, max_tokens=64, overlap_tokens=8)
    assert a == b


def test_works_without_a_tokenizer(document: str) -> None:
    chunks = chunk_text(document, "d", None, max_tokens=64, overlap_tokens=8)
    assert chunks and all(c.n_tokens <= 64 for c in chunks)


def test_byte_level_tokenizer_bounds_hold(tokenizer: Any, document: str) -> None:
    chunks = chunk_text(document[:3000], "d", tokenizer, max_tokens=100, overlap_tokens=20)
    counter = token_counter(tokenizer)
    assert all(counter.count(c.text) <= 100 for c in chunks)
    assert all(not document[c.start - 1].isalnum() for c in chunks if c.start)  # no half words


def test_empty_or_blank_text_gives_no_chunks() -> None:
    assert chunk_text("") == [] and chunk_text(" \n\n \n") == []


@pytest.mark.parametrize(("max_tokens", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_bad_settings_are_refused(max_tokens: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="tokens"):
        chunk_text("some text", max_tokens=max_tokens, overlap_tokens=overlap)


# Words that stress the seams: multi-byte characters, digits, pipes and tabs.
_FUZZ_WORDS = [
    "river",
    "stone",
    "market",
    "Dr.",
    "e.g.",
    "naïve",
    "café",
    "日本語",
    "emoji🙂",
    "x|y",
    "a\tb",
    "1234567",
    "x!",
    "y.",
]
_FUZZ_HEADINGS = ["# Notes", "## Notes", "Chapter 2", "PART ONE"]


def _random_document(rng: random.Random) -> str:
    """Headings (some repeated), short tables and prose, with varied blank lines."""
    parts: list[str] = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.25:
            parts.append(rng.choice(_FUZZ_HEADINGS))
        elif r < 0.4:
            rows = rng.randint(2, 5)
            parts.append(
                "\n".join(
                    f"| {rng.choice(_FUZZ_WORDS)} | {rng.randint(0, 99)} |" for _ in range(rows)
                )
            )
        else:
            words = " ".join(rng.choice(_FUZZ_WORDS) for _ in range(rng.randint(1, 25)))
            indent = rng.choice(["", "", "    ", "\t\t"])
            parts.append(indent + words + rng.choice([".", "!", ""]))
    return "".join(p + rng.choice(["\n\n", "\n", "\n \n"]) for p in parts)


def _crosses_a_section(text: str, start: int, end: int) -> bool:
    """True when a heading line follows body text inside the chunk text[start:end]."""
    line_start = text.rfind("\n", 0, start) + 1  # judge a cut first line by its whole line
    seen_body = False
    for line in text[line_start:end].splitlines():
        if is_heading(line) and seen_body:
            return True
        seen_body = seen_body or (bool(line.strip()) and not is_heading(line))
    return False


@pytest.fixture(params=["estimate", "bytes", "smollm2"])
def any_tokenizer(request: pytest.FixtureRequest) -> Any:
    """No tokenizer (the chars/4 estimate), the built-in byte-level one, SmolLM2's."""
    if request.param == "estimate":
        return None
    return request.getfixturevalue("tokenizer" if request.param == "bytes" else "smollm2")


def test_an_indent_neither_splits_a_paragraph_nor_repeats_it(smollm2: Any) -> None:
    text = "Pump A failed. The generator was serviced in spring by the night crew."
    plain = chunk_text(text, "d", None, max_tokens=18, overlap_tokens=4)
    indented = chunk_text("        " + text, "d", None, max_tokens=18, overlap_tokens=4)
    assert [c.text for c in indented] == [c.text for c in plain] == [text]
    for max_tokens, overlap in [(17, 5), (10, 6), (8, 6)]:
        chunks = chunk_text("\t\t" + text, "d", smollm2, max_tokens, overlap)
        starts = [c.start for c in chunks]
        assert starts == sorted(set(starts)), (max_tokens, overlap, starts)


def test_random_documents_lose_no_text_and_stay_in_bounds(any_tokenizer: Any) -> None:
    counter = token_counter(any_tokenizer)
    rng = random.Random(0)
    for case in range(300):
        text = _random_document(rng)
        # 4 tokens at least: one emoji is 4 byte-level tokens, and a character cannot be cut
        max_tokens = rng.choice([4, 6, 12, 24, 48])
        overlap = rng.choice([0, 1, max_tokens // 4, max_tokens // 2])
        chunks = chunk_text(text, "d", any_tokenizer, max_tokens, overlap)
        covered = bytearray(len(text))
        for c, d in zip(chunks, chunks[1:], strict=False):
            where = f"case {case} ({max_tokens=}, {overlap=}), {c.id} and {d.id} of {text!r}"
            assert d.start > c.start and d.end > c.end, where  # never a repeat of the last
        for c in chunks:
            where = f"case {case} ({max_tokens=}, {overlap=}), chunk {c.id} of {text!r}"
            assert text[c.start : c.end] == c.text, where
            assert counter.count(c.text) == c.n_tokens <= max_tokens, where
            assert not _crosses_a_section(text, c.start, c.end), where
            covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        # whitespace between chunks (blank lines, a trimmed seam) is stripped by design
        lost = [ch for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
        assert lost == [], f"case {case} ({max_tokens=}, {overlap=}) lost {lost} of {text!r}"


@pytest.mark.parametrize(
    ("text", "max_tokens", "use_smollm2"), [("y. ccc eeeee", 2, False), ("日本語 x!", 4, True)]
)
def test_a_trimmed_last_chunk_keeps_its_tail(
    smollm2: Any, text: str, max_tokens: int, use_smollm2: bool
) -> None:
    chunks = chunk_text(text, "d", smollm2 if use_smollm2 else None, max_tokens, 0)
    assert chunks[-1].end == len(text)
    assert all(c.n_tokens <= max_tokens for c in chunks)


def test_a_trimmed_tail_does_not_join_the_next_section_of_the_same_name() -> None:
    text = "# Notes\n\nlantern stone café 日本語\n\n# Notes\n\nstone stone river"
    chunks = chunk_text(text, "d", None, max_tokens=5, overlap_tokens=0)
    assert "日本語" in {c.text for c in chunks}
    assert [c.text for c in chunks if "# Notes" in c.text] == ["# Notes", "# Notes"]


def test_trimming_up_to_the_last_token_of_the_document(smollm2: Any) -> None:
    # once an IndexError: the trim asked where the token after the last one starts
    text = "y. café market"
    chunks = chunk_text(text, "d", smollm2, max_tokens=3, overlap_tokens=0)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")


def test_a_character_longer_than_max_tokens_is_a_value_error(tokenizer: Any) -> None:
    # the emoji is 4 byte-level tokens; trimming once looped forever trying to cut it
    with pytest.raises(ValueError, match=r"max_tokens=3 .*'🙂'"):
        chunk_text("stone y. emoji🙂 café", "d", tokenizer, max_tokens=3, overlap_tokens=0)


class _ByteCounter:
    """Counts UTF-8 bytes: a counter whose units are not the 4-character pseudo-tokens."""

    def count(self, text: str) -> int:
        return len(text.encode())


def test_a_counter_in_other_units_gets_whole_chunks_cut_between_words() -> None:
    text = "The generator in hall B was serviced in spring by the night crew. " * 30
    chunks = chunk_text(text, "d", _ByteCounter(), max_tokens=64, overlap_tokens=0)
    assert all(c.n_tokens <= 64 for c in chunks)
    assert len(chunks) <= 2 * (len(text) // 64 + 1)  # once hundreds of 1-4 byte scraps
    words = set(text.split())
    assert all(w in words for c in chunks for w in c.text.split())  # no word cut in two
    assert [w for c in chunks for w in c.text.split()] == text.split()


class _CountingCounter:
    """The estimate, counting how many characters it was asked to count."""

    def __init__(self) -> None:
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return -(-len(text) // 4)


@pytest.mark.parametrize("size", [20_000, 80_000])
def test_a_long_run_without_spaces_is_counted_in_linear_work(size: int) -> None:
    # Minified code, base64, CJK without line breaks: once each window start counted the
    # whole rest of the run (80k characters: 4M counted; 50 s for 400 KB with SmolLM2).
    counter = _CountingCounter()
    chunks = chunk_text("x" * size, "d", counter, max_tokens=200, overlap_tokens=30)
    assert chunks[-1].end == size and all(c.n_tokens <= 200 for c in chunks)
    assert counter.chars < 12 * size


def test_text_without_spaces_still_overlaps_and_splits_at_its_sentence_ends(smollm2: Any) -> None:
    sentence = "東京の発電機は春に夜勤の作業員によって点検された。"
    text = "\n\n".join(sentence * 12 for _ in range(3))
    chunks = chunk_text(text, "d", smollm2, max_tokens=64, overlap_tokens=16)
    assert all(c.n_tokens <= 64 for c in chunks)
    pairs = list(zip(chunks, chunks[1:], strict=False))
    same_paragraph = [(a, b) for a, b in pairs if text.count("\n\n", a.start, b.end) == 0]
    assert same_paragraph and all(b.start < a.end for a, b in same_paragraph)
    ends = sum(c.text.endswith("。") for c in chunks)
    assert ends >= len(chunks) // 2  # cut after a sentence, not mid-sentence, mostly
