"""LoRA through peft: only adapters train, merged copies and checkpoints are plain models
that compute what the wrapped one does, and the recipe runs end to end with adapters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from posttrain.config import SMOKE_OVERRIDES, ConfigError, LoraSettings, ModelConfig, load_config
from posttrain.engines.base import GenerationRequest, SamplingParams
from posttrain.engines.hf import HFEngine
from posttrain.models.loading import Policy
from posttrain.models.lora import (
    apply_lora,
    expected_lora_parameter_count,
    is_lora,
    merged_copy,
    trainable_parameter_count,
)
from posttrain.store import COMPLETE_MARKER
from posttrain.train.checkpoint import (
    ADAPTER_DIR,
    STATE_FILE,
    base_model_record,
    load_checkpoint,
    load_run_policy,
    save_checkpoint,
)

# The conftest's tiny model (seed 0), as a run configuration.
SMALL = ModelConfig(name="tiny", hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
LORA4 = LoraSettings(r=4)

# A fresh interpreter that loads the checkpoint with plain transformers: neither posttrain
# nor peft may be imported. It saves the logits of fixed ids for the parent to compare.
PLAIN_LOGITS = textwrap.dedent(
    """
    import sys
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(sys.argv[1]).eval()
    ids = torch.load(sys.argv[2])
    with torch.no_grad():
        torch.save(model(input_ids=ids).logits, sys.argv[3])
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("posttrain", "peft"))
    assert not leaked, leaked
    print("OK")
    """
)


def nudge_adapters(model: Any, scale: float = 0.5) -> None:
    """Give every lora_B a seeded non-zero value, so the adapters change the outputs."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * scale)


@pytest.fixture
def lora_policy() -> Policy:
    policy = load_run_policy(SMALL.model_copy(update={"lora": LORA4}), seed=0)
    nudge_adapters(policy.model)
    return policy


def sample_ids() -> torch.Tensor:
    return torch.randint(0, 250, (2, 12), generator=torch.Generator().manual_seed(3))  # [2, 12]


def logits_of(model: Any, ids: torch.Tensor) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return model(input_ids=ids).logits  # [B, T, V]


def test_only_the_adapters_are_trainable_and_their_count_is_r_times_in_plus_out(
    tiny_model: Any,
) -> None:
    # 1 layer, hidden 32, MLP 64, 2 heads of 16 (as many kv heads): q,k,v,o are 32→32.
    expected = 4 * (4 * (32 + 32) + 2 * (32 + 64) + (64 + 32))
    assert expected_lora_parameter_count(tiny_model, LORA4) == expected
    model = apply_lora(tiny_model, LORA4, seed=0)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert trainable_parameter_count(model) == expected


def test_apply_lora_is_deterministic_in_its_seed_and_leaves_the_global_rng(
    tokenizer: Any,
) -> None:
    from posttrain.models.tiny import TinyModelSpec, build_tiny_model

    spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    torch.manual_seed(5)
    expected_draw = torch.rand(3)
    adapters = []
    for _ in range(2):
        model = build_tiny_model(tokenizer, seed=0, spec=spec)
        torch.manual_seed(5)
        wrapped = apply_lora(model, LORA4, seed=7)
        assert torch.equal(torch.rand(3), expected_draw)
        adapters.append({n: p.clone() for n, p in wrapped.named_parameters() if p.requires_grad})
    assert adapters[0].keys() == adapters[1].keys()
    assert all(torch.equal(adapters[0][n], adapters[1][n]) for n in adapters[0])


def test_sft_steps_change_the_adapters_and_leave_the_base_weights_bit_identical(
    lora_policy: Policy,
) -> None:
    from posttrain.config import SFTConfig
    from posttrain.domains import get_domain
    from posttrain.rollout.episode import replay_references
    from posttrain.train.sft import train_sft

    tasks = [get_domain("arith/addition-v1").generate(s, 1) for s in range(8)]
    examples = replay_references(tasks, lora_policy.tokenizer, get_domain)
    model = lora_policy.model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = SFTConfig(batch_size=4, lr=1e-2, weight_decay=0.1, warmup_steps=0, max_steps=3)
    train_sft(model, examples, [], cfg, lora_policy.tokenizer.pad_token_id)  # type: ignore[attr-defined]
    after = dict(model.named_parameters())
    for name, old in before.items():
        if after[name].requires_grad:
            assert not torch.equal(after[name], old), f"adapter {name} did not move"
        else:
            assert torch.equal(after[name], old), f"base weight {name} changed"


def test_the_merged_copy_computes_the_wrapped_models_logits_and_leaves_it_wrapped(
    lora_policy: Policy,
) -> None:
    model: Any = lora_policy.model
    plain = merged_copy(model)
    assert not is_lora(plain) and is_lora(model)
    assert not any("lora" in n for n in plain.state_dict())
    ids = sample_ids()
    wrapped_logits = logits_of(model, ids)
    with model.disable_adapter():
        base_logits = logits_of(model, ids)
    assert not torch.allclose(wrapped_logits, base_logits, atol=1e-3)  # the adapters matter
    torch.testing.assert_close(logits_of(plain, ids), wrapped_logits, atol=1e-5, rtol=0)


def test_a_lora_checkpoint_loads_in_plain_transformers_without_peft_with_the_same_logits(
    lora_policy: Policy, tmp_path: Path
) -> None:
    path = save_checkpoint(tmp_path / "sft", lora_policy, "sft", step=3)
    ids = sample_ids()
    torch.save(ids, tmp_path / "ids.pt")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-c", PLAIN_LOGITS, str(path), str(tmp_path / "ids.pt"),
         str(tmp_path / "logits.pt")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = torch.load(tmp_path / "logits.pt")
    torch.testing.assert_close(loaded, logits_of(lora_policy.model, ids), atol=1e-5, rtol=0)


def test_a_lora_checkpoint_records_its_settings_and_resumes_as_the_same_base_and_adapter(
    lora_policy: Policy, tmp_path: Path
) -> None:
    record = base_model_record(SMALL.model_copy(update={"lora": LORA4}), seed=0)
    path = save_checkpoint(tmp_path / "sft", lora_policy, "sft", 3, {"base_model": record})
    assert (path / ADAPTER_DIR / "adapter_config.json").is_file()
    state = json.loads((path / STATE_FILE).read_text())
    assert state["lora"] == {"r": 4, "alpha": 8.0, "dropout": 0.0,
                             "target_modules": sorted(LORA4.target_modules)}  # fmt: skip

    resumed, _ = load_checkpoint(path, restore_rng=False)
    assert is_lora(resumed.model)
    saved = lora_policy.model.state_dict()
    for name, tensor in resumed.model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name
    assert trainable_parameter_count(resumed.model) == trainable_parameter_count(lora_policy.model)
    plain, _ = load_checkpoint(path, restore_rng=False, merged=True)
    assert not is_lora(plain.model)


def test_hf_engine_greedy_on_a_lora_model_equals_the_merged_models_greedy(
    lora_policy: Policy,
) -> None:
    tok: Any = lora_policy.tokenizer
    prompts = [
        tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
        for text in ("12+34", "sort 3 1 2")
    ]
    prompts = [list(getattr(p, "input_ids", p)) for p in prompts]
    greedy = SamplingParams(max_tokens=12, temperature=0.0)

    def run(model: Any) -> list[list[int]]:
        engine = HFEngine(model, tok, seed=0)
        out = engine.generate([GenerationRequest(p, greedy) for p in prompts])
        return [c[0].token_ids for c in out]

    model: Any = lora_policy.model
    wrapped = run(model)
    assert wrapped == run(merged_copy(model))
    with model.disable_adapter():
        assert wrapped != run(model)  # the adapters steer the samples


def test_a_lora_rank_of_zero_is_refused_by_the_config() -> None:
    with pytest.raises(ConfigError, match=r"model\.lora\.r: .*greater than or equal to 1"):
        load_config(None, ["model.lora.r=0"])


def test_an_unknown_target_module_is_refused_naming_it_and_the_models_linear_layers() -> None:
    lora = LoraSettings(r=4, target_modules=["q_proj", "qkv_proj"])
    with pytest.raises(ConfigError) as info:
        load_run_policy(SMALL.model_copy(update={"lora": lora}), seed=0)
    message = str(info.value)
    assert message.startswith("model.lora.target_modules: no linear layer named 'qkv_proj'")
    assert "down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj" in message


@pytest.mark.slow  # a whole recipe run, about 16 s
def test_a_smoke_recipe_with_lora_ends_in_a_plain_grpo_checkpoint(tmp_path: Path) -> None:
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM

    from posttrain.train.recipe import run_recipe

    overrides = [
        *SMOKE_OVERRIDES,
        "eval.every_steps=0",
        "eval.tasks_per_domain=4",
        "model.lora.r=4",
        "model.hidden_size=32",
        "model.num_layers=1",
        "model.num_heads=2",
        "model.intermediate_size=64",
        "logging.tensorboard=false",
        f"out_dir={tmp_path}",
        "name=lora",
    ]
    result = run_recipe(load_config(None, overrides))
    assert {"sft", "dpo", "grpo", "control"} <= set(result.stages)
    grpo = tmp_path / "lora" / "checkpoints" / "grpo"
    assert (grpo / COMPLETE_MARKER).is_file()
    with safe_open(str(grpo / "model.safetensors"), "pt") as weights:
        assert not any("lora" in k or k.startswith("base_model.") for k in weights.keys())  # noqa: SIM118
    assert json.loads((grpo / STATE_FILE).read_text())["lora"]["r"] == 4
    model = AutoModelForCausalLM.from_pretrained(str(grpo))
    assert type(model).__name__ == "LlamaForCausalLM"


def test_an_lm_head_tied_to_the_embeddings_is_refused_as_a_target() -> None:
    # Merging an lm_head adapter edits the tensor it shares with embed_tokens, so the
    # merged checkpoint would compute something else than base + adapter.
    lora = LoraSettings(r=4, target_modules=["q_proj", "lm_head"])
    with pytest.raises(ConfigError, match=r"'lm_head' shares its weight with the input embed"):
        load_run_policy(SMALL.model_copy(update={"lora": lora}), seed=0)


def test_an_untied_lm_head_adapter_merges_into_the_same_logits(tokenizer: Any) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         tie_word_embeddings=False)  # fmt: skip
    torch.manual_seed(0)
    model: Any = apply_lora(
        LlamaForCausalLM(config), LoraSettings(r=4, target_modules=["lm_head", "k_proj"])
    )
    nudge_adapters(model)
    ids = sample_ids()
    expected = logits_of(model, ids)
    torch.testing.assert_close(logits_of(merged_copy(model), ids), expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(logits_of(model, ids), expected, atol=0, rtol=0)  # untouched
