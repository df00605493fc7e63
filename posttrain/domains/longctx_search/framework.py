"""The shared body of the retrieval-tool domains: the search session, the corpus cache, the base class.

A retrieval domain hands the model a question about a document too long to show and
two tools, `search_document(query, k)` and `read_chunk(id)`, served by
`posttrain.tools.document.DocumentSearch` over the task's document. A subclass of
`RetrievalDomain` writes:

- `make(rng, difficulty) -> Setup` — the question, the answer format, the document's
  title and estimated size, and `doc` (a small JSON spec the document is rebuilt
  from, kept in `task.meta["doc"]`) — cheap: no document is built here;
- `build(task) -> Built` — the document text and the named spans (character ranges)
  an answer must cite;
- `targets(task) -> list[Target]` — what the reference searches for, in order;
- `final_answer(task, chunk_ids) -> str` — the reference's final text, given the chunk
  found for each target;
- `judge(task, final, evidence) -> Verdict` and `wrong(task, evidence) -> list[Reference]`.

The document is never stored in the task: `corpus(task)` rebuilds it from the spec and
indexes it (`tokenizer=None`, the approximate counter), and keeps the last few corpora
in a process-wide cache, so a session, the reference and the verifier of one task share
one index. The reference searches with each target's query (k = 5, then 10, 20; then its fallback queries)
until a hit's chunk covers the target's span, reads that chunk, and answers with the
chunk ids it found — they come from the session's own index.

`verify` reads the tool calls recorded in the rollout (not the live session): which
chunks were read (`read_chunk` of an existing id) and whether any search was made.
A citation counts only when the cited chunk covers the target's span and was read
in this episode; an answer given without reading any chunk scores 0.

Not guaranteed: a cold verify (a process that has not built the corpus) rebuilds the
document and its index, about a second at a million tokens; the cache holds
`CACHE_SIZE` corpora per process.
"""

from __future__ import annotations

import copy
import json
import random
import re
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.tools.document import SCHEMAS, DocumentSearch
from posttrain.tools.parse import format_tool_call
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

SEARCH, READ = "search_document", "read_chunk"
CACHE_SIZE = 4
MAX_CHUNK_TOKENS = 200
SEARCH_WIDTHS = (5, 10, 20)  # DocumentSearch serves at most 20 hits
_HIT_LINE = re.compile(r"^(\S+) \(score ", re.MULTILINE)


@dataclass(frozen=True)
class Setup:
    """What `make` returns: one task before it becomes a `Task`."""

    question: str
    answer_format: str
    title: str
    tokens: int
    doc: dict[str, Any]
    answer: Any
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Built:
    """A built document: its text and each named span (start, end) an answer rests on."""

    text: str
    spans: dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Target:
    """One thing the reference looks up: the query it searches with and the span it needs."""

    query: str
    span: str
    fallbacks: tuple[str, ...] = ()  # further queries, tried when `query` finds nothing


class Corpus:
    """One task's document, its named spans and the `DocumentSearch` index over it."""

    def __init__(self, built: Built) -> None:
        self.text = built.text
        self.spans = built.spans
        self.search = DocumentSearch(built.text, tokenizer=None, max_chunk_tokens=MAX_CHUNK_TOKENS)
        self.chunks = {c.id: c for c in self.search.chunks}

    def covers(self, chunk_id: Any, span: str) -> bool:
        """True when `chunk_id` names a chunk whose text holds the whole named span."""
        chunk = self.chunks.get(chunk_id) if isinstance(chunk_id, str) else None
        if chunk is None or span not in self.spans:
            return False
        start, end = self.spans[span]
        return chunk.start <= start and end <= chunk.end

    def hits(self, query: str, k: int) -> list[str]:
        """The chunk ids a `search_document` call returns, read off its observation (what
        the model sees), best first."""
        observation = self.search.call(ToolCall(SEARCH, {"query": query, "k": k}))
        if observation.error:
            return []
        return [m.group(1) for m in _HIT_LINE.finditer(observation.content)]

    def find(self, target: Target) -> tuple[str, int, str]:
        """The first query and smallest search width whose hits include a chunk covering
        the target, and that chunk's id; RuntimeError when none does (a generator bug)."""
        for query in (target.query, *target.fallbacks):
            for k in SEARCH_WIDTHS:
                for chunk_id in self.hits(query, k):
                    if self.covers(chunk_id, target.span):
                        return query, k, chunk_id
        raise RuntimeError(f"no search for {target.query!r} finds span {target.span!r}")


_CACHE: OrderedDict[str, Corpus] = OrderedDict()


@dataclass(frozen=True)
class Evidence:
    """What the rollout did with the tools, read from its recorded calls."""

    searches: int
    read: frozenset[str]


def evidence_of(rollout: Rollout, corpus: Corpus) -> Evidence:
    """The well-formed searches and the existing chunks read, over every turn of `rollout`."""
    searches, read = 0, set()
    for turn in rollout.turns:
        for call in turn.tool_calls:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            if call.name == SEARCH and isinstance(arguments.get("query"), str):
                searches += 1
            elif call.name == READ and arguments.get("id") in corpus.chunks:
                read.add(str(arguments["id"]))
    return Evidence(searches, frozenset(read))


class SearchSession:
    """One episode's tools: every call goes to the task's shared `DocumentSearch`
    (read-only, so episodes may share it) and is recorded."""

    def __init__(self, search: DocumentSearch) -> None:
        self.search = search
        self.tools: list[dict[str, Any]] = copy.deepcopy(list(SCHEMAS))
        self.calls: list[ToolCall] = []
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed SearchSession")
        arguments = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        self.calls.append(ToolCall(tool_call.name, dict(arguments), tool_call.id))
        return self.search.call(tool_call)

    def user_turn(self, assistant_message: Message) -> Message | None:
        """No scripted user: the first message without tool calls is the answer."""
        return None

    def snapshot(self) -> list[ToolCall]:
        return list(self.calls)

    def restore(self, snapshot: Any) -> None:
        self.calls = list(snapshot)

    def close(self) -> None:
        self.closed = True


def tool_help() -> str:
    """The tools as text, with the call syntax the episode loop parses."""
    lines = []
    for schema in SCHEMAS:
        function = schema["function"]
        params = function["parameters"]
        required = params.get("required", [])
        args = ", ".join(
            f"{name}: {spec.get('type', 'any')}" + ("" if name in required else " (optional)")
            for name, spec in params.get("properties", {}).items()
        )
        lines.append(f"- {function['name']}({args}): {function.get('description', '')}")
    return (
        "Tools (call one by writing "
        '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>; several calls may '
        "share one message; each result comes back as a tool message):\n" + "\n".join(lines)
    )


def calls_turn(calls: list[ToolCall]) -> Message:
    """One assistant message making `calls`, ids numbered as the parser will number them."""
    numbered = [ToolCall(c.name, dict(c.arguments), id=f"call_{i}") for i, c in enumerate(calls)]
    return Message("assistant", "".join(format_tool_call(c) for c in numbered), tool_calls=numbered)


def failed(reason: str, **components: float) -> Verdict:
    return Verdict(0.0, False, reason, {"format": 0.0, **components})


class RetrievalDomain(ABC):
    """Base of the retrieval-tool domains; see the module docstring."""

    id: str
    axes: Axes
    max_turns = 12
    batched = True  # the reference searches every target in one turn, then reads them all

    # -- what a subclass writes ------------------------------------------------------

    @abstractmethod
    def make(self, rng: random.Random, difficulty: int) -> Setup:
        """Written by each subclass."""

    @abstractmethod
    def build(self, task: Task) -> Built:
        """Written by each subclass."""

    @abstractmethod
    def targets(self, task: Task) -> list[Target]:
        """Written by each subclass."""

    @abstractmethod
    def final_answer(self, task: Task, chunk_ids: list[str]) -> str:
        """Written by each subclass."""

    @abstractmethod
    def judge(self, task: Task, final: str, evidence: Evidence, corpus: Corpus) -> Verdict:
        """The verdict on a non-empty final text, given what the rollout read."""

    @abstractmethod
    def wrong(self, task: Task, reference: Reference) -> list[Reference]:
        """At least three known-wrong trajectories, one scoring at most 0.2."""

    # -- the Domain protocol -----------------------------------------------------------

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        s = self.make(task_rng(self.id, seed, difficulty), difficulty)
        prompt = (
            f"You are given search tools over one document, {s.title!r}, of about "
            f"{s.tokens:,} tokens: far too long to read whole. It is split into chunks of "
            f"about {MAX_CHUNK_TOKENS} tokens with ids doc#0, doc#1, ... in document order "
            f"(neighbouring chunks overlap a little). Find what you need with "
            f"search_document, then read the chunks you rely on with read_chunk; a chunk "
            f"you cite counts only if you read it and it holds the cited information.\n\n"
            f"{s.question}\n\n{s.answer_format}\n\n{tool_help()}"
        )
        meta = {**s.meta, "doc": s.doc, "tokens": s.tokens, "title": s.title}
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", prompt)],
            answer=s.answer,
            difficulty=difficulty,
            seed=seed,
            meta=meta,
        )

    def corpus(self, task: Task) -> Corpus:
        """The task's document and index, from the process-wide cache."""
        key = json.dumps([task.domain, task.seed, task.difficulty, task.meta["doc"]], sort_keys=True)  # fmt: skip
        corpus = _CACHE.get(key)
        if corpus is None:
            corpus = Corpus(self.build(task))
            _CACHE[key] = corpus
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
        return corpus

    def open(self, task: Task, sandbox: object | None = None) -> SearchSession:
        """A fresh session over the task's (cached) index; `sandbox` is not used."""
        return SearchSession(self.corpus(task).search)

    def trajectory(self, found: list[tuple[str, int, str]], final: str) -> Reference:
        """Search, read, answer: batched (all searches, all reads) or target by target."""
        searches = [ToolCall(SEARCH, {"query": q, "k": k}) for q, k, _ in found]
        reads = [ToolCall(READ, {"id": c}) for _, _, c in found]
        if self.batched:
            unique = [ToolCall(READ, {"id": c}) for c in dict.fromkeys(c for _, _, c in found)]
            turns = [calls_turn(searches), calls_turn(unique)]
        else:
            turns = [calls_turn([x]) for pair in zip(searches, reads, strict=True) for x in pair]
        return Reference([*turns, Message("assistant", final)])

    def reference(self, task: Task) -> Reference:
        corpus = self.corpus(task)
        found = [corpus.find(target) for target in self.targets(task)]
        return self.trajectory(found, self.final_answer(task, [c for _, _, c in found]))

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        return self.wrong(task, reference)

    def difficulty_measure(self, task: Task) -> float:
        """The document's estimated tokens."""
        return float(task.meta["tokens"])

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        try:
            final = rollout.final_text
            if not isinstance(final, str) or not final.strip():
                return failed("The final text is empty.")
            corpus = self.corpus(task)
            evidence = evidence_of(rollout, corpus)
            if not evidence.read:
                return failed("No chunk was read with read_chunk, so the answer is not grounded.", read=0.0)  # fmt: skip
            return self.judge(task, final, evidence, corpus)
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(0.0, False, "The verifier failed on this answer.", {"format": 0.0},
                           error=f"{type(exc).__name__}: {exc}")  # fmt: skip
