"""SFT conversations and DPO pairs from files: token layout, loss masks, bad rows, and a
recipe that trains from both files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posttrain.rollout.episode import encode, render
from posttrain.train.data_files import DataFileError, preference_pairs, sft_examples
from posttrain.types import Message

CHAT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "and 3+3?"},
    {"role": "assistant", "content": "6"},
]


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_every_assistant_message_is_trained_on_and_nothing_else(
    tmp_path: Path, tokenizer: Any
) -> None:
    [ex] = sft_examples(_write_jsonl(tmp_path / "chat.jsonl", [{"messages": CHAT}]), tokenizer)
    messages = [Message(m["role"], m["content"]) for m in CHAT]
    full = encode(tokenizer, render(tokenizer, messages, add_generation_prompt=False))
    assert ex.prompt_ids + ex.completion_ids == full
    trained = tokenizer.decode(
        [t for t, m in zip(ex.completion_ids, ex.loss_mask, strict=True) if m]
    )
    assert "4" in trained and "6" in trained
    assert "3+3" not in trained and "brief" not in trained
    context = tokenizer.decode(
        [t for t, m in zip(ex.completion_ids, ex.loss_mask, strict=True) if not m]
    )
    assert "and 3+3?" in context


def test_parquet_and_jsonl_give_the_same_examples(tmp_path: Path, tokenizer: Any) -> None:
    rows = [{"messages": CHAT}, {"messages": CHAT[1:3]}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "chat.parquet")
    a = sft_examples(tmp_path / "chat.parquet", tokenizer)
    b = sft_examples(_write_jsonl(tmp_path / "chat.jsonl", rows), tokenizer)
    assert [(x.prompt_ids, x.completion_ids, x.loss_mask) for x in a] == [
        (x.prompt_ids, x.completion_ids, x.loss_mask) for x in b
    ]


def test_pairs_share_the_prompt_and_train_only_their_answers(
    tmp_path: Path, tokenizer: Any
) -> None:
    rows = [
        {"prompt": "2+2?", "chosen": "4", "rejected": "5"},
        {
            "prompt": [{"role": "user", "content": "hi"}],
            "chosen": [{"role": "assistant", "content": "hello"}],
            "rejected": [{"role": "assistant", "content": "go away"}],
        },  # fmt: skip
    ]
    pairs = preference_pairs(_write_jsonl(tmp_path / "p.jsonl", rows), tokenizer)
    assert len(pairs) == 2
    for pair in pairs:
        assert pair.chosen.prompt_ids == pair.rejected.prompt_ids
        assert all(pair.chosen.loss_mask) and all(pair.rejected.loss_mask)
    assert tokenizer.decode(pairs[1].rejected.completion_ids).startswith("go away")


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([{"messages": CHAT[:2]}], "no assistant message"),
        ([{"messages": [{"role": "robot", "content": "x"}]}], "needs a role"),
        ([{"messages": [{"role": "user", "content": 3}]}], "string 'content'"),
        ([{"messages": CHAT[2:3]}], "starts with the assistant"),
        (["just text"], "a row must be an object"),
    ],
)
def test_a_bad_sft_row_is_named_with_its_line(
    tmp_path: Path, tokenizer: Any, rows: list[Any], needle: str
) -> None:
    path = _write_jsonl(tmp_path / "bad.jsonl", [{"messages": CHAT}, *rows])
    with pytest.raises(DataFileError, match=needle) as info:
        sft_examples(path, tokenizer)
    assert f"{path}:2" in str(info.value)


def test_a_pair_without_rejected_is_named(tmp_path: Path, tokenizer: Any) -> None:
    path = _write_jsonl(tmp_path / "p.jsonl", [{"prompt": "x", "chosen": "y"}])
    with pytest.raises(DataFileError, match="'rejected' must be"):
        preference_pairs(path, tokenizer)


def test_a_recipe_trains_sft_and_dpo_from_files(tmp_path: Path) -> None:
    from posttrain.config import load_config
    from posttrain.store.metrics import read_metrics
    from posttrain.train.recipe import run_recipe

    chats = [{"messages": [{"role": "user", "content": f"echo {w}"},
                           {"role": "assistant", "content": w}]}
             for w in ["cat", "dog", "sun", "map", "pen", "cup", "hat", "box", "jam", "owl"] * 2]  # fmt: skip
    prefs = [{"prompt": f"echo {w}", "chosen": w, "rejected": w[::-1]} for w in ["cat", "dog"] * 5]
    sft_file = _write_jsonl(tmp_path / "sft.jsonl", chats)
    dpo_file = _write_jsonl(tmp_path / "dpo.jsonl", prefs)
    config = load_config(None, [
        f"out_dir={tmp_path}", "name=files", "domains=[text/reverse-v1]",
        f"sft.data_file={sft_file}", "sft.max_steps=4", "sft.eval_every=2", "sft.batch_size=4",
        "sft.val_examples=2", f"dpo.data_file={dpo_file}", "dpo.val_tasks=2", "dpo.batch_size=4",
        "grpo.enabled=false", "control.enabled=false", "eval.tasks_per_domain=2",
    ])  # fmt: skip
    result = run_recipe(config)
    stages = {r["stage"] for r in read_metrics(result.run_dir / "metrics.jsonl")}
    assert {"sft", "dpo"} <= stages
    assert result.stages["dpo"]["pairs"] == 8 and result.stages["dpo"]["val_pairs"] == 2


def test_a_missing_data_file_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    from posttrain.config import ConfigError, load_config
    from posttrain.train.recipe import run_recipe

    config = load_config(None, [f"out_dir={tmp_path / 'runs'}", "sft.data_file=/nope.jsonl"])
    with pytest.raises(ConfigError, match="sft.data_file: '/nope.jsonl' does not exist"):
        run_recipe(config)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("stage", ["sft", "dpo"])
def test_a_malformed_data_file_fails_the_run_before_any_evaluation(
    tmp_path: Path, stage: str
) -> None:
    from posttrain.config import ConfigError, load_config
    from posttrain.train.recipe import run_recipe

    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"messages": "not a list", "prompt": 3}])
    config = load_config(None, [f"out_dir={tmp_path / 'runs'}", "name=bad",
                                f"{stage}.data_file={bad}"])  # fmt: skip
    with pytest.raises(ConfigError, match="bad.jsonl:1: "):
        run_recipe(config)
    assert not list((tmp_path / "runs").glob("bad/evals/*.json"))  # nothing evaluated first


def chatml(tokenizer: Any, template: str | None = None) -> Any:
    """The tiny tokenizer with a ChatML-style template: '<|end|>\\n' closes every turn."""
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = template or (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    return tok


def test_training_stops_at_the_end_of_turn_token_as_sampling_does(
    tmp_path: Path, tokenizer: Any
) -> None:
    tok = chatml(tokenizer)
    [ex] = sft_examples(_write_jsonl(tmp_path / "chat.jsonl", [{"messages": CHAT}]), tok)
    trained = [t for t, m in zip(ex.completion_ids, ex.loss_mask, strict=True) if m]
    assert tok.decode(trained, skip_special_tokens=False) == "4<|end|>6<|end|>"
    # the newline after each end-of-turn is context, as the episode loop lays it out
    assert ex.prompt_ids + ex.completion_ids == encode(
        tok, render(tok, [Message(m["role"], m["content"]) for m in CHAT], False)
    )


def test_the_header_of_a_second_assistant_turn_in_a_row_is_context(
    tmp_path: Path, tokenizer: Any
) -> None:
    chat = [*CHAT[:3], {"role": "assistant", "content": "and 8"}]
    [ex] = sft_examples(_write_jsonl(tmp_path / "chat.jsonl", [{"messages": chat}]), tokenizer)
    trained = [t for t, m in zip(ex.completion_ids, ex.loss_mask, strict=True) if m]
    assert tokenizer.decode(trained, skip_special_tokens=False) == "4<|end|>and 8<|end|>"


def test_a_conversation_the_chat_template_refuses_is_named_with_its_line(
    tmp_path: Path, tokenizer: Any
) -> None:
    tok = chatml(
        tokenizer,
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('no system role') }}{% endif %}{{ m['content'] }}<|end|>"
        "{% endfor %}",
    )
    rows = [{"messages": CHAT[1:3]}, {"messages": CHAT}]
    with pytest.raises(
        DataFileError, match=r"chat\.jsonl:2: the chat template refused .*no system role"
    ):
        sft_examples(_write_jsonl(tmp_path / "chat.jsonl", rows), tok)


def test_a_row_longer_than_the_context_is_named(tmp_path: Path, tokenizer: Any) -> None:
    rows = [{"messages": CHAT[1:3]}, {"messages": [CHAT[1], {"role": "assistant", "content": "9" * 300}]}]  # fmt: skip
    path = _write_jsonl(tmp_path / "chat.jsonl", rows)
    assert len(sft_examples(path, tokenizer)) == 2  # no limit given
    with pytest.raises(
        DataFileError, match=r"chat\.jsonl:2: \d+ tokens, more than the model's context of 256"
    ):
        sft_examples(path, tokenizer, max_context=256)
    pairs = [{"prompt": "2+2?", "chosen": "4", "rejected": "5" * 300}]
    with pytest.raises(DataFileError, match=r"prefs\.jsonl:1: .*context of 256"):
        preference_pairs(_write_jsonl(tmp_path / "prefs.jsonl", pairs), tokenizer, max_context=256)
