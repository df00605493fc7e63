"""The built-in tiny policy: a byte-level tokenizer and a small Llama made from a seed.

The tokenizer maps every byte to one token and adds a handful of chat tokens; it is
a standard `PreTrainedTokenizerFast` with a chat template, so a saved model
directory loads with plain `AutoTokenizer` / `AutoModelForCausalLM` and no posttrain
import. Tiny models run in float32 with one intra-op thread on CPU (see MACHINE.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

PAD, BOS = "<|pad|>", "<|bos|>"
SYSTEM, USER, ASSISTANT, TOOL, END = (
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|tool|>",
    "<|end|>",
)
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
SPECIAL_TOKENS = [PAD, BOS, SYSTEM, USER, ASSISTANT, TOOL, END, TOOL_CALL_OPEN, TOOL_CALL_CLOSE]

# One line per role; an assistant turn ends with <|end|>, the end-of-sequence token.
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}" + SYSTEM + "{% elif m['role'] == 'user' %}" + USER + ""
    "{% elif m['role'] == 'assistant' %}" + ASSISTANT + "{% else %}" + TOOL + "{% endif %}"
    "{{ m['content'] }}" + END + "{% endfor %}"
    "{% if add_generation_prompt %}" + ASSISTANT + "{% endif %}"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of the built-in model; the defaults give about 0.9M parameters."""

    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 384
    max_positions: int = 512


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer: ids 0..255 are bytes, then the special chat tokens."""
    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    # ByteLevel's alphabet is ordered by unicode point; order it by byte value instead.
    table = pre_tokenizers_byte_table()
    vocab = {table[b]: b for b in range(256)}
    assert set(vocab) == set(byte_chars)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=END,
        pad_token=PAD,
        additional_special_tokens=SPECIAL_TOKENS[2:],
        clean_up_tokenization_spaces=False,
        padding_side="left",  # an init argument, so that a saved tokenizer keeps it
        model_max_length=1
        << 20,  # the window is the model's (spec.max_positions), not the tokenizer's
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def pre_tokenizers_byte_table() -> dict[int, str]:
    """GPT-2's byte → printable-unicode table, the one ByteLevel uses."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table: dict[int, str] = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def build_tiny_model(
    tokenizer: PreTrainedTokenizerFast, seed: int = 0, spec: TinyModelSpec | None = None
) -> LlamaForCausalLM:
    """A freshly initialised small Llama for `tokenizer`, deterministic in `seed`."""
    spec = spec or TinyModelSpec()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.float()
