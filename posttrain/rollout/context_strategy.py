"""What happens to a prompt longer than the model's window: the recipe's declared
strategy, applied before the prompt reaches an engine — never a silent cut.

    policy = OverLongPolicy(strategy="retrieve")
    fitted = fit_prompt(task, tokenizer, window=2048, reserve=80, policy=policy)

- `error` (the default): `PromptTooLongError` whose message gives the prompt's length,
  the window and the tokens reserved for the answer. The episode loop records it as
  the episode's failure; the batch goes on.
- `retrieve`: the last user message is split into the document and the question
  (`task.meta["question"]` when the domain gives it, else its last paragraph); the
  document is chunked with the model's own tokenizer and the chunks most relevant
  to the question are assembled under the budget the rest of the prompt leaves
  (`posttrain.context.assemble`, most relevant at the start and end). The question
  stays whole, after the context.
- `truncate_middle`: the longest message (in tokens) keeps its head and tail and loses the
  middle, replaced by a marker saying how many tokens were cut.

A fitted task carries `meta["context_fit"]` (strategy, tokens before and after) so
traces show what the model saw.

Not guaranteed: `retrieve` keeps what the retriever ranks high — an answer whose
evidence shares no words (BM25) or meaning (dense) with the question can be lost;
`truncate_middle` loses whatever was in the middle. Token counts use the chat
template of `tokenizer`; the template's own tokens are measured, not estimated.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from posttrain.rollout.rendering import encode, render
from posttrain.types import Message, Task

Strategy = Literal["error", "retrieve", "truncate_middle"]
STRATEGIES: tuple[str, ...] = ("error", "retrieve", "truncate_middle")


class PromptTooLongError(ValueError):
    """A prompt that does not fit the model's window under the `error` strategy (or
    that no strategy could bring under it)."""


@dataclass(frozen=True)
class OverLongPolicy:
    """The declared strategy, and for `retrieve` how chunks are found and ordered."""

    strategy: Strategy = "error"
    retriever: Literal["bm25", "dense", "hybrid"] = "bm25"
    order: Literal["edges", "relevance", "document"] = "edges"
    chunk_tokens: int = 128

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"unknown over-long strategy {self.strategy!r}; expected one of {STRATEGIES}"
            )


def prompt_length(tokenizer: Any, messages: list[Message]) -> int:
    """Tokens of `messages` rendered by the chat template, generation prompt included,
    as the episode loop renders them (`rendering.render`: tool output defused)."""
    return len(encode(tokenizer, render(tokenizer, messages, add_generation_prompt=True)))


def fit_prompt(
    task: Task, tokenizer: Any, window: int, reserve: int, policy: OverLongPolicy
) -> Task:
    """`task` itself when its prompt leaves `reserve` tokens of `window` free; else the
    task with its prompt fitted by `policy`, or PromptTooLongError saying why not."""
    limit = window - reserve
    used = prompt_length(tokenizer, task.prompt)
    if used <= limit:
        return task
    if policy.strategy == "error":
        raise PromptTooLongError(
            f"prompt of task {task.id} is {used} tokens; the model's window is {window} "
            f"with {reserve} reserved for the answer, so at most {limit} fit. Declare "
            "context.over_long=retrieve or truncate_middle in the recipe to fit it"
        )
    if limit <= 0:
        raise PromptTooLongError(
            f"the model's window ({window}) leaves no room for a prompt after the "
            f"{reserve} tokens reserved for the answer"
        )
    fit = _retrieve if policy.strategy == "retrieve" else _truncate_middle
    # The template's tokens around the messages are measured, so one pass nearly always
    # fits; shrink by the overshoot and retry in the rare case it does not.
    budget_cut = 0
    for _ in range(4):
        try:
            messages = fit(task, tokenizer, used - limit + budget_cut, policy)
        except PromptTooLongError:
            raise
        except ValueError as exc:  # e.g. a budget smaller than any chunk: still this task's
            raise PromptTooLongError(
                f"prompt of task {task.id} is {used} tokens; {policy.strategy} could not "
                f"fit it under {limit}: {exc}"
            ) from exc
        after = prompt_length(tokenizer, messages)
        if after <= limit:
            meta = dict(task.meta)
            meta["context_fit"] = {"strategy": policy.strategy, "before": used, "after": after}
            return dataclasses.replace(task, prompt=messages, meta=meta)
        budget_cut += after - limit
    raise PromptTooLongError(
        f"prompt of task {task.id} is {used} tokens and {policy.strategy} could not bring "
        f"it under {limit} (window {window}, {reserve} reserved for the answer)"
    )


def _longest(tokenizer: Any, messages: list[Message]) -> int:
    """The index of the message with the most tokens (not characters: one CJK
    character may take three tokens of a byte-level tokenizer)."""
    return max(range(len(messages)), key=lambda i: _token_len(tokenizer, messages[i].content))


def _token_len(tokenizer: Any, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def _truncate_middle(
    task: Task, tokenizer: Any, excess: int, policy: OverLongPolicy
) -> list[Message]:
    messages = list(task.prompt)
    i = _longest(tokenizer, messages)
    ids = tokenizer.encode(messages[i].content, add_special_tokens=False)
    # The marker costs tokens too; its count is an upper bound on its own digits.
    marker = f"\n[... {len(ids)} tokens cut from the middle ...]\n"
    cut = excess + _token_len(tokenizer, marker)
    if cut >= len(ids):
        raise PromptTooLongError(
            f"prompt of task {task.id}: truncate_middle would have to cut all "
            f"{len(ids)} tokens of its longest message and more ({cut})"
        )
    keep = len(ids) - cut
    head, head_end = _decode_to_char_boundary(tokenizer, ids, keep - keep // 2, step=-1)
    tail, tail_start = _decode_to_char_boundary(tokenizer, ids, len(ids) - keep // 2, step=1)
    marker = f"\n[... {tail_start - head_end} tokens cut from the middle ...]\n"
    messages[i] = dataclasses.replace(messages[i], content=head + marker + tail)
    return messages


_MAX_BOUNDARY_MOVES = 8  # a UTF-8 character is at most 4 bytes, so 3 byte tokens


def _decode_to_char_boundary(
    tokenizer: Any, ids: list[int], cut: int, step: int
) -> tuple[str, int]:
    """The head `ids[:cut]` (step -1) or the tail `ids[cut:]` (step 1) decoded, with the
    cut moved away from the kept side until it no longer splits a character: byte-level
    tokens can hold part of one, which decodes to U+FFFD. Moving only shrinks what is
    kept, so the prompt still fits. The moves are bounded so that U+FFFD the text
    itself holds at the cut costs a few tokens, not the whole side."""

    def decode(at: int) -> str:
        return str(tokenizer.decode(ids[:at] if step < 0 else ids[at:]))

    text = decode(cut)
    for _ in range(_MAX_BOUNDARY_MOVES):
        split = text.endswith("\ufffd") if step < 0 else text.startswith("\ufffd")
        if not split or not 0 < cut < len(ids):
            break
        cut += step
        text = decode(cut)
    return text, cut


def split_question(task: Task) -> tuple[int, str, str]:
    """(index of the last user message, its document part, its question part)."""
    users = [i for i, m in enumerate(task.prompt) if m.role == "user"]
    if not users:
        raise PromptTooLongError(f"prompt of task {task.id} has no user message to retrieve from")
    i = users[-1]
    content = task.prompt[i].content
    question = str(task.meta.get("question") or "").strip()
    if question and question in content:
        at = content.rfind(question)
        document = content[:at] + content[at + len(question) :]
    else:
        document, _, question = content.rstrip().rpartition("\n\n")
    if not document.strip():
        raise PromptTooLongError(
            f"prompt of task {task.id}: no document before the question to retrieve from"
        )
    return i, document.strip(), question.strip()


def _retrieve(task: Task, tokenizer: Any, excess: int, policy: OverLongPolicy) -> list[Message]:
    from posttrain.context import assemble  # the toolkit imports its retrievers lazily

    messages = list(task.prompt)
    i, document, question = split_question(task)
    separator = "\n\n"
    # The document's tokens give way to the context; everything else stays as it was.
    budget = _token_len(tokenizer, document) - excess - _token_len(tokenizer, separator)
    if budget <= 0:
        raise PromptTooLongError(
            f"prompt of task {task.id}: the question and the rest of the prompt alone "
            f"exceed the window; no room for any of the document"
        )
    chunk_tokens = min(policy.chunk_tokens, budget)  # a chunk never exceeds the room
    context = assemble(
        question,
        document,
        token_budget=budget,
        tokenizer=tokenizer,
        retriever=policy.retriever,
        order=policy.order,
        max_chunk_tokens=chunk_tokens,
        overlap_tokens=min(16, chunk_tokens // 8),  # always below the chunk size
    )
    messages[i] = dataclasses.replace(messages[i], content=context.text + separator + question)
    return messages
