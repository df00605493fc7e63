"""Messages to text and tokens with the tokenizer's chat template, for the episode loop
and for measuring prompts (`context_strategy.prompt_length`): both go through `render`,
so a prompt is measured as the episode will encode it.

    text = render(tokenizer, messages, add_generation_prompt=True)
    ids = encode(tokenizer, text)

Not guaranteed: `defuse` breaks only the tokenizer's special-token strings, not
template markup that is plain text (a template that marks turns with `### User:`).
"""

from __future__ import annotations

from typing import Any

from posttrain.types import Message


def render(tokenizer: Any, messages: list[Message], add_generation_prompt: bool) -> str:
    """The chat template applied to `messages`, as text. A tool's output is data, never
    markup: special-token strings in it (`<|end|>`, `<|im_start|>`, `<tool_call>`) get a
    zero-width space after their first character, so that encoding the text cannot turn
    them into the tokens that fake a turn boundary."""
    plain = [
        {"role": m.role, "content": defuse(tokenizer, m.content) if m.role == "tool" else m.content}
        for m in messages
    ]
    return str(
        tokenizer.apply_chat_template(
            plain, tokenize=False, add_generation_prompt=add_generation_prompt
        )
    )


def defuse(tokenizer: Any, text: str) -> str:
    """`text` with each of the tokenizer's special-token strings broken by U+200B."""
    for special in getattr(tokenizer, "all_special_tokens", ()):
        if len(special) > 1 and special in text:
            text = text.replace(special, special[0] + "\u200b" + special[1:])
    return text


def encode(tokenizer: Any, text: str) -> list[int]:
    """`text`'s token ids, without the special tokens a tokenizer may add around it."""
    return list(tokenizer.encode(text, add_special_tokens=False))
