"""Our loss math against TRL 1.16's own loss code, on a tiny Llama and identical tensors.

TRL's `DPOTrainer._compute_loss` and `GRPOTrainer._compute_loss` are called unbound on a
minimal stand-in `self` (a namespace with the attributes they read) and on a copy of the
model patched with TRL's `add_fused_lm_head`, which is what the trainers themselves do
at start-up. So TRL computes its logprobs its own way (fused head, completion-only,
left-aligned) and we compute ours ours (full sequence, right-padded, masked); both the
loss values and the gradients must agree.

Conventions mapped (ours ↔ TRL): aggregation "sequence" ↔ loss_type "grpo", "token" ↔
"bnpo"/"dapo", "constant" with max_tokens ↔ "dr_grpo" with max_completion_length;
ratio_level "sequence" ↔ importance_sampling_level "sequence" (GSPO);
kl_ratio_correction ↔ use_bias_correction_kl (TRL's default True, ours False); a TIS
weight ↔ "importance_sampling_ratio" (token_truncate); cDPO label smoothing ↔ TRL's
"aot" loss on pairs already in sorted order (TRL's "sigmoid" has no smoothing); rDPO ↔
"robust"; IPO with token counts ↔ "ipo" (TRL normalizes by length).
"""

from __future__ import annotations

import contextlib
import copy
import types
from collections import defaultdict
from typing import Any

import pytest
import torch

# TRL is a dev dependency (pyproject): a missing TRL is a failed install, never a skip.
from trl.trainer.dpo_trainer import DPOTrainer
from trl.trainer.grpo_trainer import GRPOTrainer
from trl.trainer.utils import add_fused_lm_head, nanstd

from posttrain.train.batches import TokenBatch, batch_logprobs
from posttrain.train.losses import (
    dpo_loss,
    grpo_advantages,
    grpo_loss,
    truncated_is_weights,
)

TEMPERATURE = 0.7
PROMPT, COMPLETION = 5, 6  # tokens; prompts all of one length, so no left padding
COMPLETION_LENGTHS = [6, 4, 5, 2]
MAX_COMPLETION = 8  # Dr. GRPO's constant, above the longest completion


@pytest.fixture(scope="module")
def policy() -> Any:
    from posttrain.models.loading import load_policy

    torch.set_num_threads(1)
    policy = load_policy("tiny", seed=0)
    policy.model.train()
    return policy


def accelerator() -> Any:
    return types.SimpleNamespace(
        num_processes=1,
        is_main_process=True,
        device=torch.device("cpu"),
        autocast=contextlib.nullcontext,
        gather=lambda x: x,
        gather_for_metrics=lambda x: x,
        reduce=lambda x, reduction="sum": x,
    )


def gradients(model: Any, loss: torch.Tensor) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad(set_to_none=True)
    return grads


def assert_same_gradients(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert torch.allclose(x, y, atol=1e-5, rtol=1e-4)


# ---- GRPO ---------------------------------------------------------------------------------


class GRPOBatch:
    """One batch in both layouts: TRL's prompt/completion split and our packed one."""

    def __init__(self, model: Any, vocab: int) -> None:
        gen = torch.Generator().manual_seed(1)
        b = len(COMPLETION_LENGTHS)
        self.prompt_ids = torch.randint(3, vocab, (b, PROMPT), generator=gen)
        self.completion_ids = torch.randint(3, vocab, (b, COMPLETION), generator=gen)
        lengths = torch.tensor(COMPLETION_LENGTHS)
        self.completion_mask = (torch.arange(COMPLETION)[None] < lengths[:, None]).long()
        self.completion_ids = self.completion_ids * self.completion_mask  # pad id 0 after
        ids = torch.cat([self.prompt_ids, self.completion_ids], 1)  # [B, P+C]
        attn = torch.cat([torch.ones_like(self.prompt_ids), self.completion_mask], 1)
        mask = self.full(self.completion_mask.float())
        self.ours = TokenBatch(ids, attn, ids[:, 1:], mask, torch.zeros_like(mask))
        with torch.no_grad():
            now = batch_logprobs(model, self.ours, TEMPERATURE)[:, PROMPT - 1 :]  # [B, C]
        noise = torch.randn(b, COMPLETION, generator=gen)
        self.old = (now + 0.3 * noise) * self.completion_mask  # ratios on both clip sides
        self.ref = (now - 0.2 * torch.randn(b, COMPLETION, generator=gen)) * self.completion_mask
        self.rollout = (self.old + 0.8 * torch.randn(b, COMPLETION, generator=gen)) * (
            self.completion_mask
        )
        self.advantages = torch.tensor([1.2, -0.7, 0.4, -1.5])

    def full(self, x: torch.Tensor) -> torch.Tensor:
        """[B, C] completion values placed at their positions of the packed [B, P+C-1]."""
        out = torch.zeros(x.shape[0], PROMPT + COMPLETION - 1, dtype=x.dtype)
        out[:, PROMPT - 1 :] = x
        return out

    def trl_inputs(self, tis_cap: float | None) -> dict[str, Any]:
        inputs = {
            "prompt_ids": self.prompt_ids,
            "prompt_mask": torch.ones_like(self.prompt_ids),
            "completion_ids": self.completion_ids,
            "completion_mask": self.completion_mask,
            "advantages": self.advantages,
            "old_per_token_logps": self.old,
            "ref_per_token_logps": self.ref,
            "num_items_in_batch": self.completion_mask.sum().float(),
        }
        if tis_cap is not None:
            inputs["importance_sampling_ratio"] = truncated_is_weights(
                self.old, self.rollout, tis_cap
            )
        return inputs


@pytest.fixture(scope="module")
def grpo_setup(policy: Any) -> tuple[Any, GRPOBatch]:
    model = copy.deepcopy(policy.model)
    # what GRPOTrainer.__init__ does to its model
    add_fused_lm_head(model, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    return model, GRPOBatch(model, policy.model.config.vocab_size)


def trl_grpo_self(model: Any, loss_type: str, level: str, beta: float, **kw: Any) -> Any:
    self = types.SimpleNamespace(
        model=model,
        accelerator=accelerator(),
        args=types.SimpleNamespace(
            delta=None,
            use_bias_correction_kl=kw.get("bias_kl", False),
            steps_per_generation=1,
        ),
        loss_type=loss_type,
        importance_sampling_level=level,
        beta=beta,
        epsilon_low=0.2,
        epsilon_high=0.28,
        max_completion_length=MAX_COMPLETION,
        current_gradient_accumulation_steps=1,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=kw.get("tis", False),
        vllm_importance_sampling_correction=kw.get("tis", False),
        aux_loss_enabled=False,
        _entropy_bonus_enabled=False,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
    )
    self._get_per_token_logps_and_entropies = types.MethodType(
        GRPOTrainer._get_per_token_logps_and_entropies, self
    )
    return self


GRPO_CASES = {
    # id: (TRL loss_type, TRL importance_sampling_level, our aggregation, our ratio_level)
    "grpo": ("grpo", "token", "sequence", "token"),
    "bnpo": ("bnpo", "token", "token", "token"),
    "dapo": ("dapo", "token", "token", "token"),
    "dr_grpo": ("dr_grpo", "token", "constant", "token"),
    "gspo": ("grpo", "sequence", "sequence", "sequence"),
}


def grpo_pair(
    setup: tuple[Any, GRPOBatch],
    case: str,
    beta: float,
    bias_kl: bool = False,
    tis_cap: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(TRL's loss, our loss) on the same model and batch, both with grad."""
    model, batch = setup
    trl_type, level, aggregation, ratio_level = GRPO_CASES[case]
    trl_self = trl_grpo_self(model, trl_type, level, beta, bias_kl=bias_kl, tis=tis_cap is not None)
    theirs = GRPOTrainer._compute_loss(trl_self, model, batch.trl_inputs(tis_cap))
    tis: dict[str, Any] = {}
    if tis_cap is not None:
        tis = {"rollout_logprobs": batch.full(batch.rollout), "tis_cap": tis_cap}
    ours, _ = grpo_loss(
        batch_logprobs(model, batch.ours, TEMPERATURE),
        batch.full(batch.old),
        batch.advantages,
        batch.ours.loss_mask,
        clip_eps=0.2,
        clip_eps_high=0.28,
        ref_logprobs=batch.full(batch.ref),
        kl_coef=beta,
        aggregation=aggregation,
        ratio_level=ratio_level,
        max_tokens=MAX_COMPLETION,
        kl_ratio_correction=bias_kl,
        **tis,
    )
    return theirs, ours


@pytest.mark.parametrize("beta", [0.0, 0.05], ids=["no-kl", "kl"])
@pytest.mark.parametrize("case", list(GRPO_CASES))
def test_grpo_loss_and_gradient_match_trl(grpo_setup: Any, case: str, beta: float) -> None:
    theirs, ours = grpo_pair(grpo_setup, case, beta)
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)
    model = grpo_setup[0]
    assert_same_gradients(gradients(model, theirs), gradients(model, ours))


@pytest.mark.parametrize("case", ["grpo", "gspo"])
def test_grpo_ratio_corrected_kl_matches_trls_bias_correction(grpo_setup: Any, case: str) -> None:
    theirs, ours = grpo_pair(grpo_setup, case, beta=0.05, bias_kl=True)
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)
    plain, _ = grpo_pair(grpo_setup, case, beta=0.05, bias_kl=False)
    assert plain.item() != pytest.approx(ours.item(), abs=1e-6)  # the option does something


@pytest.mark.parametrize("case", ["dapo", "grpo"])
def test_truncated_importance_sampling_matches_trls_token_truncate(
    grpo_setup: Any, case: str
) -> None:
    theirs, ours = grpo_pair(grpo_setup, case, beta=0.05, tis_cap=1.5)
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)
    model = grpo_setup[0]
    assert_same_gradients(gradients(model, theirs), gradients(model, ours))


def test_group_advantages_use_trls_unbiased_std() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.5, 0.0, 0.2, 0.9, 0.9, 0.1])
    grouped = rewards.view(-1, 4)
    std = nanstd(grouped, dim=1).repeat_interleave(4)
    trl_style = (rewards - grouped.mean(1).repeat_interleave(4)) / (std + 1e-4)
    assert torch.allclose(grpo_advantages(rewards, 4, eps=1e-4), trl_style, atol=1e-6)


# ---- DPO ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dpo_model(policy: Any) -> Any:
    model = copy.deepcopy(policy.model)
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "mean_logits", "is_top1"))
    return model


def dpo_batch(vocab: int) -> dict[str, torch.Tensor]:
    """Three pairs as TRL's DPO collator lays them out: chosen rows, then rejected rows."""
    gen = torch.Generator().manual_seed(2)
    ids = torch.randint(3, vocab, (6, 12), generator=gen)
    prompt, lengths = 4, [7, 5, 3, 2, 6, 4]
    mask = torch.zeros(6, 12, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, prompt : prompt + n] = 1
    attention = ((torch.arange(12)[None] < prompt) | mask.bool()).long()  # right-padded
    return {"input_ids": ids * attention, "attention_mask": attention, "completion_mask": mask}


def trl_dpo_self(model: Any, loss_type: str, beta: float, label_smoothing: float) -> Any:
    return types.SimpleNamespace(
        model=model,
        accelerator=accelerator(),
        args=types.SimpleNamespace(gradient_checkpointing_kwargs=None),
        aux_loss_enabled=False,
        ld_alpha=None,
        precompute_ref_logps=True,
        f_divergence_type="reverse_kl",
        loss_types=[loss_type],
        loss_weights=[1.0],
        beta=beta,
        label_smoothing=label_smoothing,
        use_weighting=False,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _total_train_tokens=0,
        _tp_size=1,
    )


def our_sums(model: Any, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = inputs["input_ids"]
    mask = inputs["completion_mask"][:, 1:].float()
    batch = TokenBatch(ids, inputs["attention_mask"], ids[:, 1:], mask, torch.zeros_like(mask))
    sums = (batch_logprobs(model, batch) * mask).sum(-1)  # [2B]
    return sums[:3], sums[3:]


DPO_CASES = {
    # id: (TRL loss_type, our loss_type, label_smoothing, pass token counts)
    "sigmoid": ("sigmoid", "sigmoid", 0.0, False),
    "ipo": ("ipo", "ipo", 0.0, True),
    "robust": ("robust", "robust", 0.2, False),
    "cdpo": ("aot", "sigmoid", 0.2, False),
}


@pytest.mark.parametrize("reference_free", [False, True], ids=["ref", "ref-free"])
@pytest.mark.parametrize("case", list(DPO_CASES))
def test_dpo_loss_and_gradient_match_trl(
    policy: Any, dpo_model: Any, case: str, reference_free: bool
) -> None:
    trl_type, our_type, smoothing, counts = DPO_CASES[case]
    inputs = dpo_batch(policy.model.config.vocab_size)
    chosen, rejected = our_sums(dpo_model, inputs)
    if reference_free:  # TRL has no such switch: zero reference logprobs are the same thing
        ref_c, ref_r = torch.zeros(3), torch.zeros(3)
    else:
        # a reference whose log-ratios sort like the policy's, so TRL's "aot" sort is the
        # identity and "aot" is exactly cDPO
        logratios = (chosen - rejected).detach()
        ref_c, ref_r = 0.5 * logratios - 1.0, torch.full((3,), -2.0)
        assert torch.equal(logratios.argsort(), (ref_c - ref_r).argsort())
    trl_self = trl_dpo_self(dpo_model, trl_type, beta=0.5, label_smoothing=smoothing)
    trl_inputs = {**inputs, "ref_chosen_logps": ref_c, "ref_rejected_logps": ref_r}
    theirs = DPOTrainer._compute_loss(trl_self, dpo_model, trl_inputs, return_outputs=False)
    tokens = inputs["completion_mask"].sum(1).float()
    ours, _ = dpo_loss(
        chosen,
        rejected,
        None if reference_free else ref_c,
        None if reference_free else ref_r,
        beta=0.5,
        loss_type=our_type,
        label_smoothing=smoothing,
        chosen_tokens=tokens[:3] if counts else None,
        rejected_tokens=tokens[3:] if counts else None,
    )
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)
    assert_same_gradients(gradients(dpo_model, theirs), gradients(dpo_model, ours))
