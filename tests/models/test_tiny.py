"""The built-in tokenizer and tiny model; model-name checks."""

from __future__ import annotations

from typing import Any

import pytest


def test_tokenizer_round_trips_any_utf8_text(tokenizer: Any) -> None:
    text = "héllo wörld ✓ 12+35 \n\t"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert len(ids) == len(text.encode())  # one token per byte
    assert tokenizer.decode(ids) == text


def test_chat_tokens_are_single_ids(tokenizer: Any) -> None:
    for token in ("<|user|>", "<|assistant|>", "<|end|>", "<tool_call>", "</tool_call>"):
        assert len(tokenizer.encode(token, add_special_tokens=False)) == 1


def test_chat_template_renders_roles_and_generation_prompt(tokenizer: Any) -> None:
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "1+2"}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|user|>1+2<|end|><|assistant|>"
    assert tokenizer.eos_token == "<|end|>"


def test_same_seed_gives_the_same_weights(tokenizer: Any) -> None:
    from posttrain.models.tiny import TinyModelSpec, build_tiny_model

    spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    a = build_tiny_model(tokenizer, seed=3, spec=spec).state_dict()
    b = build_tiny_model(tokenizer, seed=3, spec=spec).state_dict()
    c = build_tiny_model(tokenizer, seed=4, spec=spec).state_dict()
    assert all((a[k] == b[k]).all() for k in a)
    assert any((a[k] != c[k]).any() for k in a)


def test_default_tiny_model_has_about_a_million_parameters(tokenizer: Any) -> None:
    from posttrain.models.tiny import build_tiny_model

    model = build_tiny_model(tokenizer)
    count = sum(p.numel() for p in model.parameters())
    assert 0.5e6 < count < 1.5e6


def test_unknown_model_name_is_refused_with_the_known_names() -> None:
    from posttrain.models import ModelNotFoundError, check_model_name

    with pytest.raises(ModelNotFoundError, match="tiny"):
        check_model_name("no-such-model")
    with pytest.raises(ModelNotFoundError, match="'runs/nope': it does not exist"):
        check_model_name("runs/nope")


def test_directory_without_config_is_refused(tmp_path: Any) -> None:
    from posttrain.models import ModelNotFoundError, check_model_name

    with pytest.raises(ModelNotFoundError, match="config.json"):
        check_model_name(str(tmp_path))


@pytest.mark.slow
def test_smollm2_loads_from_its_package_and_answers() -> None:
    """Converts the GGUF once (about a minute), then greedy-samples a short answer."""
    import torch

    from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
    from posttrain.models import load_policy
    from posttrain.rollout.episode import prompt_ids
    from posttrain.types import Message, Task

    torch.set_num_threads(2)
    policy = load_policy("smollm2-135m")
    assert sum(p.numel() for p in policy.model.parameters()) > 100e6
    task = Task("t", "x/y-v1", [Message("user", "What is the capital of France?")], "", 1, 0)
    engine = HFEngine(policy.model, policy.tokenizer)
    params = SamplingParams(max_tokens=12, temperature=0.0)
    out = engine.generate([GenerationRequest(prompt_ids(policy.tokenizer, task), params)])
    assert "Paris" in out[0][0].text


@pytest.mark.slow
def test_smollm2_tokenizer_loads_from_the_package_without_a_converted_model(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from posttrain.models import smollm2_tokenizer

    monkeypatch.setenv("POSTTRAIN_CACHE", str(tmp_path))  # no converted model there
    tokenizer = smollm2_tokenizer.__wrapped__()
    ids = tokenizer.encode("The access code is 4821.", add_special_tokens=False)
    assert 5 <= len(ids) <= 12
    assert tokenizer.decode(ids) == "The access code is 4821."
    assert not (tmp_path / "models").exists()


def test_a_saved_tokenizer_reloads_with_plain_autotokenizer_unchanged(
    tokenizer: Any, tmp_path: Any
) -> None:
    from transformers import AutoTokenizer

    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(str(tmp_path))
    text = "a\x00😀 <|end|>"
    assert loaded.encode(text) == tokenizer.encode(text)
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert loaded.apply_chat_template(chat, tokenize=False) == tokenizer.apply_chat_template(
        chat, tokenize=False
    )
    pad = tokenizer.pad_token_id
    assert loaded.pad_token_id == pad and loaded.eos_token_id == tokenizer.eos_token_id
    assert loaded("ab", padding="max_length", max_length=4).input_ids == [pad, pad, 97, 98]
