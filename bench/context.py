"""Long-context retrieval bench: chunk+BM25 throughput, dense throughput, and recall of
paraphrased questions' gold evidence inside a 4k-token assembled context.

    OMP_NUM_THREADS=2 nice .venv/bin/python bench/context.py            # ~10-15 min on 2 cores
    .venv/bin/python bench/context.py --sizes 10000 --queries 20        # a quick look

For each size (SmolLM2 tokens; default 10k, 100k, 1M) it writes a document of
English-like prose in chapters, hiding 50 facts, each with 3 look-alike distractors
(another site with the same equipment and event; the same site with other equipment;
the same site and equipment with another event), and asks one paraphrased question
per fact (synonyms, reordered: "When did the emergency power unit at the Marlow
storage facility most recently get maintenance?" for "The Marlow warehouse's backup
generator was last serviced on 14 March 2019."). A question counts as recalled when
a chunk holding the whole fact sentence is among the chunks `fit_to_budget` packs into
4,000 tokens from the retriever's ranking — the same packing `assemble` does.

Dense encoding of every chunk is done up to `--dense-max-tokens` document tokens;
above that, dense-only recall is reported as null (not measured) and hybrid is
BM25's top `--candidates` re-ranked by fusing in MiniLM's ranking of those candidates
(`HybridIndex(candidates=N)`), which the JSON states. Progress goes to stderr; the
last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ADJ = [
    "quiet",
    "old",
    "narrow",
    "bright",
    "northern",
    "busy",
    "wooden",
    "distant",
    "green",
    "heavy",
    "pale",
    "sudden",
    "careful",
]
NOUNS = [
    "river",
    "market",
    "harbor",
    "lantern",
    "bridge",
    "meadow",
    "canal",
    "tower",
    "orchard",
    "village",
    "road",
    "hill",
    "window",
    "kitchen",
    "letter",
    "story",
    "morning",
    "evening",
    "garden",
    "council",
    "ledger",
    "street",
]
VERBS = [
    "watched",
    "carried",
    "followed",
    "crossed",
    "opened",
    "described",
    "remembered",
    "painted",
    "visited",
]
PEOPLE = [
    "Anna",
    "Tomas",
    "Elise",
    "Marek",
    "Jonah",
    "Ruth",
    "Ilse",
    "Pavel",
    "Nora",
    "Hugo",
    "Vera",
    "Simon",
]
TEMPLATES = [
    "{P} {v} the {a} {n} before the {n2} grew {a2}.",
    "Nobody in the {n} spoke of the {a} {n2} that year.",
    "By the time the {n} was {a}, {P} had already {v} the {n2}.",
    "The {a} {n} stood near the {n2}, and {P} {v} it twice.",
    "It was said that the {n} of the {a2} {n2} had never been {v}.",
    "{P} wrote about the {a} {n} in a letter to the {n2} council.",
    "Along the {a} {n}, the children {v} every {n2} they found.",
    "In winter the {n} turned {a}, and the {n2} was {v} by lamplight.",
]

# (facility, its paraphrase), (equipment, paraphrase), (event, question form)
FACILITIES = [
    ("warehouse", "storage facility"),
    ("depot", "vehicle yard"),
    ("clinic", "medical practice"),
    ("library", "public reading rooms"),
    ("bakery", "bread shop"),
    ("brewery", "beer works"),
    ("school", "teaching building"),
    ("harbour office", "port authority building"),
]
EQUIPMENT = [
    ("backup generator", "emergency power unit"),
    ("fire alarm", "smoke warning system"),
    ("water pump", "pumping equipment for water"),
    ("freight elevator", "goods lift"),
    ("roof", "top covering of the building"),
    ("boiler", "heating furnace"),
    ("security camera", "surveillance device"),
]
EVENTS = [
    ("last serviced", "most recently get maintenance"),
    ("first installed", "originally get put in"),
    ("last inspected", "most recently get checked by an inspector"),
    ("replaced", "get swapped for a new one"),
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
SYL_A = [
    "Mar",
    "Dun",
    "Har",
    "Kel",
    "Brom",
    "Ash",
    "Wex",
    "Cal",
    "Tor",
    "Pen",
    "Fal",
    "Gris",
    "Lun",
    "Hol",
    "Stan",
    "Bre",
    "Cor",
    "Elm",
    "Dar",
    "Ves",
]
SYL_B = [
    "low",
    "more",
    "ford",
    "wick",
    "ton",
    "bury",
    "field",
    "stead",
    "mouth",
    "gate",
    "holm",
    "ridge",
    "ley",
    "wood",
]


@dataclass
class Fact:
    name: str
    facility: int
    equipment: int
    event: int
    date: str

    def sentence(self) -> str:
        fac, eq, ev = (
            FACILITIES[self.facility][0],
            EQUIPMENT[self.equipment][0],
            EVENTS[self.event][0],
        )
        return f"The {self.name} {fac}'s {eq} was {ev} on {self.date}."

    def question(self) -> str:
        fac, eq, ev = (
            FACILITIES[self.facility][1],
            EQUIPMENT[self.equipment][1],
            EVENTS[self.event][1],
        )
        return f"When did the {eq} at the {self.name} {fac} {ev}?"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(1995, 2023)}"


def make_facts(rng: random.Random, n: int) -> tuple[list[Fact], list[Fact]]:
    names = [a + b for a in SYL_A for b in SYL_B]
    rng.shuffle(names)
    facts, distractors = [], []
    for i in range(n):
        f = Fact(
            names[i],
            rng.randrange(len(FACILITIES)),
            rng.randrange(len(EQUIPMENT)),
            rng.randrange(len(EVENTS)),
            _date(rng),
        )
        facts.append(f)
        other_eq = (f.equipment + 1 + rng.randrange(len(EQUIPMENT) - 1)) % len(EQUIPMENT)
        other_ev = (f.event + 1 + rng.randrange(len(EVENTS) - 1)) % len(EVENTS)
        distractors += [
            Fact(names[n + i], f.facility, f.equipment, f.event, _date(rng)),  # another site
            Fact(f.name, f.facility, other_eq, f.event, _date(rng)),  # other equipment
            Fact(f.name, f.facility, f.equipment, other_ev, _date(rng)),  # other event
        ]
    return facts, distractors


def _prose_sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        P=rng.choice(PEOPLE),
        v=rng.choice(VERBS),
        a=rng.choice(ADJ),
        a2=rng.choice(ADJ),
        n=rng.choice(NOUNS),
        n2=rng.choice(NOUNS),
    )


def make_document(
    n_tokens: int, seed: int, counter: object, n_facts: int
) -> tuple[str, list[Fact]]:
    """Chapters of prose with the facts and distractors in random paragraphs."""
    from posttrain.context.tokens import count_batch

    rng = random.Random(seed)
    facts, distractors = make_facts(rng, n_facts)
    paragraphs: list[str] = []
    total = sum(count_batch(counter, [f.sentence() for f in facts + distractors]))  # type: ignore[arg-type]
    while total < n_tokens:
        batch = [
            " ".join(_prose_sentence(rng) for _ in range(rng.randint(2, 8))) for _ in range(200)
        ]
        for p, c in zip(batch, count_batch(counter, batch), strict=True):  # type: ignore[arg-type]
            if total >= n_tokens:
                break
            paragraphs.append(p)
            total += c + 1
    for f in facts + distractors:  # each hidden sentence goes into a random paragraph
        i = rng.randrange(len(paragraphs))
        sentences = paragraphs[i].split(". ")
        sentences.insert(rng.randint(0, len(sentences)), f.sentence().rstrip("."))
        paragraphs[i] = ". ".join(sentences)
    parts: list[str] = []
    per_chapter = max(5, len(paragraphs) // max(1, n_tokens // 5000))
    for j, p in enumerate(paragraphs):
        if j % per_chapter == 0:
            parts.append(f"Chapter {j // per_chapter + 1}")
        parts.append(p)
    return "\n\n".join(parts), facts


class PeakRss:
    """Max over time of the RSS summed over this process and its children (/proc)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    @staticmethod
    def _tree_rss() -> int:
        total, stack = 0, [os.getpid()]
        while stack:
            pid = stack.pop()
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                for task in Path(f"/proc/{pid}/task").iterdir():
                    stack += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
        return total

    def _run(self, interval: float) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss())
            time.sleep(interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, self._tree_rss())


def log(msg: str) -> None:
    print(f"[context-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--queries", type=int, default=50, help="facts (and questions) per document"
    )
    parser.add_argument("--chunk-tokens", type=int, default=200)
    parser.add_argument("--overlap", type=int, default=30)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--dense-max-tokens",
        type=int,
        default=150_000,
        help="largest document encoded densely in full",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=20,
        help="BM25 candidates re-ranked densely above --dense-max-tokens",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    peak = PeakRss()
    import torch

    torch.set_num_threads(args.threads)
    from posttrain.context.assemble import fit_to_budget
    from posttrain.context.bm25 import BM25Index
    from posttrain.context.chunking import chunk_text
    from posttrain.context.dense import DenseIndex, load_model
    from posttrain.context.hybrid import HybridIndex
    from posttrain.context.tokens import token_counter
    from posttrain.models import smollm2_tokenizer

    tok = smollm2_tokenizer()
    counter = token_counter(tok)
    t0 = time.perf_counter()
    load_model()
    log(f"MiniLM loaded in {time.perf_counter() - t0:.1f}s")

    bm25_tok = bm25_s = dense_tok = dense_s = 0.0
    recall: dict[str, dict[str, float | None]] = {"bm25": {}, "dense": {}, "hybrid": {}}
    per_size: dict[str, dict[str, object]] = {}
    for size in args.sizes:
        name = label(size)
        text, facts = make_document(size, args.seed + size, counter, args.queries)
        n_doc = counter.count(text)
        log(f"{name}: document of {n_doc} tokens, {len(text)} chars")
        t0 = time.perf_counter()
        chunks = chunk_text(text, name, tok, args.chunk_tokens, args.overlap)
        bm25 = BM25Index(chunks)
        dt = time.perf_counter() - t0
        bm25_tok, bm25_s = bm25_tok + n_doc, bm25_s + dt
        log(
            f"{name}: {len(chunks)} chunks + BM25 index in {dt:.2f}s ({n_doc / dt * 60:,.0f} tok/min)"
        )
        gold = {}
        for f in facts:
            s = f.sentence().rstrip(".")
            gold[f.name] = {c.id for c in chunks if s in c.text}
        missing = sum(1 for g in gold.values() if not g)
        indexes: dict[str, object] = {"bm25": bm25}
        mode = "full"
        if n_doc <= args.dense_max_tokens:
            t0 = time.perf_counter()
            dense = DenseIndex(chunks)
            dt = time.perf_counter() - t0
            n_enc = sum(c.n_tokens for c in chunks)
            dense_tok, dense_s = dense_tok + n_enc, dense_s + dt
            log(
                f"{name}: dense-encoded {n_enc} tokens in {dt:.1f}s ({n_enc / dt * 60:,.0f} tok/min)"
            )
            hybrid = HybridIndex(chunks, dense_index=dense)
            indexes.update(dense=dense, hybrid=hybrid)
        else:
            mode = f"bm25 top-{args.candidates} re-ranked by dense (RRF)"
            indexes["hybrid"] = HybridIndex(chunks, candidates=args.candidates)
            recall["dense"][name] = None
        t_q = time.perf_counter()
        for kind, index in indexes.items():
            hits_n = 0
            for f in facts:
                hits = index.search(f.question(), k=200)  # type: ignore[attr-defined]
                ctx = fit_to_budget(hits, args.budget, counter, order="relevance")
                hits_n += bool(gold[f.name] & set(ctx.chunk_ids))
            recall[kind][name] = round(hits_n / len(facts), 3)
            log(f"{name}: recall@{args.budget} {kind} = {recall[kind][name]}")
        if mode != "full":
            enc = len(indexes["hybrid"]._cache)  # type: ignore[attr-defined]
            log(f"{name}: re-rank mode embedded {enc} chunks")
        per_size[name] = {
            "doc_tokens": n_doc,
            "chunks": len(chunks),
            "facts_split_across_chunks": missing,
            "hybrid_mode": mode,
            "query_seconds": round(time.perf_counter() - t_q, 1),
        }
    peak_mb = peak.stop() / 2**20
    result = {
        "bm25_index_tok_per_min": round(bm25_tok / bm25_s * 60),
        "dense_tok_per_min": round(dense_tok / dense_s * 60) if dense_s else None,
        "recall_budget4k_bm25": recall["bm25"],
        "recall_budget4k_dense": recall["dense"],
        "recall_budget4k_hybrid": recall["hybrid"],
        "peak_mb": round(peak_mb),
        "per_size": per_size,
        "settings": {
            "chunk_tokens": args.chunk_tokens,
            "overlap_tokens": args.overlap,
            "budget": args.budget,
            "threads": args.threads,
            "rrf_k": 60,
            "retrieval_k": 200,
            "queries": args.queries,
            "dense_max_tokens": args.dense_max_tokens,
            "candidates": args.candidates,
            "tokenizer": "SmolLM2-135M",
            "dense_model": "all-MiniLM-L6-v2",
        },
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
