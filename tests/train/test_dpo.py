"""DPO: training raises held-out preference accuracy; pair mining picks chosen and rejected."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
import torch

from posttrain.config import DPOConfig
from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.engines import Completion, GenerationRequest, HFEngine, ReplayEngine, SamplingParams
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import replay_references, run_episodes
from posttrain.train.batches import sequence_logprob_sums
from posttrain.train.dpo import (
    PreferencePair,
    mine_pairs,
    pair_micro_batches,
    preference_accuracy,
    train_dpo,
)
from posttrain.types import Message, Rollout, Task
from tests.train.distributed_worker import SayYes

# Which of `corrupt()`'s wrong answers is rejected: the first, except for sorting, where
# the descending list (as long as the answer) replaces the unsorted input.
CORRUPTION_INDEX = {"list/sort-v1": 2}


def starter_tasks(seeds: range) -> list[Task]:
    return [get_domain(d).generate(s, 1 + s % 6) for d in STARTER_DOMAINS for s in seeds]


def replay_corrupted(tasks: list[Task], tokenizer: Any) -> list[Rollout]:
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        domain = get_domain(task.domain)
        wrong = domain.corrupt(task, domain.reference(task))  # type: ignore[attr-defined]
        engine.add(task.id, wrong[CORRUPTION_INDEX.get(task.domain, 0)])
    params = SamplingParams(max_tokens=256, temperature=0.0)
    return [g[0] for g in run_episodes(tasks, engine, tokenizer, params, get_domain)]


def synthetic_pairs(tasks: list[Task], tokenizer: Any) -> list[PreferencePair]:
    """Replayed reference (chosen) against a replayed corruption of it (rejected)."""
    chosen = replay_references(tasks, tokenizer, get_domain)
    rejected = replay_corrupted(tasks, tokenizer)
    assert all(r.verdict.passed for r in chosen)
    assert not any(r.verdict.passed for r in rejected)
    return [PreferencePair(c, r) for c, r in zip(chosen, rejected, strict=True)]


class ScriptedSampler:
    """An engine whose i-th sample of every request is `texts[i % len(texts)]`."""

    def __init__(self, tokenizer: Any, texts: list[str]) -> None:
        self.tokenizer, self.texts = tokenizer, texts

    def update_weights(self, state_dict: Any) -> None:
        pass

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        return [[self.sample(i) for i in range(r.params.n)] for r in requests]

    def sample(self, index: int) -> Completion:
        text = self.texts[index % len(self.texts)]
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        return Completion(ids, [-1.0] * len(ids), text, "stop")


def test_dpo_raises_held_out_preference_accuracy(tiny_model: Any, tokenizer: Any) -> None:
    pairs = synthetic_pairs(starter_tasks(range(32)), tokenizer)
    val_pairs = synthetic_pairs(starter_tasks(range(1000, 1016)), tokenizer)
    cfg = DPOConfig(lr=1e-3, beta=0.5, batch_size=16, epochs=3, sft_weight=0.0)
    result = train_dpo(tiny_model, pairs, val_pairs, cfg, tokenizer.pad_token_id)
    assert result.pairs == 128
    assert result.steps == 3 * 128 // 16
    assert result.preference_accuracy_after > result.preference_accuracy_before + 0.1
    after = preference_accuracy(tiny_model, val_pairs, tokenizer.pad_token_id)
    assert after == result.preference_accuracy_after  # ~0.48 → ~0.75 with seed 0


def test_dpo_logs_loss_margin_and_reward_accuracy_every_step(
    tiny_model: Any, tokenizer: Any
) -> None:
    logged = _logged_dpo_steps(tiny_model, tokenizer, sft_weight=0.0)
    assert [step for step, _ in logged] == [1, 2]
    keys = {"loss", "margin", "reward_accuracy", "grad_norm", "skipped_updates"}
    assert all(set(v) == keys for _, v in logged)
    assert all(v["grad_norm"] > 0 and v["skipped_updates"] == 0 for _, v in logged)
    assert logged[0][1]["loss"] == pytest.approx(0.693147, abs=1e-4)  # log 2: policy == reference


def test_dpo_without_pairs_takes_no_step(tiny_model: Any, tokenizer: Any) -> None:
    val_pairs = synthetic_pairs(starter_tasks(range(2)), tokenizer)
    result = train_dpo(tiny_model, [], val_pairs, DPOConfig(), tokenizer.pad_token_id)
    assert result.steps == 0
    assert result.preference_accuracy_after == result.preference_accuracy_before


def test_mined_pairs_fall_back_to_the_reference_when_no_sample_passed(
    tiny_model: Any, tokenizer: Any
) -> None:
    tasks = starter_tasks(range(1))
    engine = HFEngine(tiny_model, tokenizer, seed=0)
    pairs = mine_pairs(
        tasks, engine, tokenizer, get_domain, samples=2, temperature=1.0, max_tokens=8
    )
    assert len(pairs) == len(tasks)  # an untrained model never passes
    for task, pair in zip(tasks, pairs, strict=True):
        reference = get_domain(task.domain).reference(task)
        assert pair.chosen.task_id == pair.rejected.task_id == task.id
        assert pair.chosen.verdict.passed
        assert [t.text for t in pair.chosen.turns] == [m.content for m in reference.turns]
        assert not pair.rejected.verdict.passed


def test_mined_pairs_prefer_a_passing_sample_to_the_reference(tokenizer: Any) -> None:
    task = get_domain("arith/addition-v1").generate(0, 3)
    wrong = str(int(task.answer) + 1)
    engine = ScriptedSampler(tokenizer, [wrong, f"{task.answer}", wrong])
    [pair] = mine_pairs(
        [task], engine, tokenizer, get_domain, samples=3, temperature=1.0, max_tokens=8
    )
    assert pair.chosen.final_text == task.answer
    assert pair.chosen.logprobs[0] == -1.0  # the engine's sample, not the replayed reference
    assert pair.rejected.final_text == wrong


class VerifierRaisesOn:
    """A domain whose verifier raises on one answer text (the episode loop records
    reward 0 with `Verdict.error` set: no verdict, not a wrong answer)."""

    def __init__(self, inner: Any, text: str) -> None:
        self.inner, self.text = inner, text

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Any:
        if rollout.final_text == self.text:
            raise RuntimeError("verifier crashed")
        return self.inner.verify(task, rollout, session)


def test_a_sample_whose_verifier_raised_is_never_the_rejected_answer(tokenizer: Any) -> None:
    task = get_domain("arith/addition-v1").generate(0, 3)
    wrong = str(int(task.answer) + 1)
    domain = VerifierRaisesOn(get_domain(task.domain), "crash")
    for texts, rejected in (([task.answer, "crash", wrong], [wrong]), ([task.answer, "crash"], [])):
        engine = ScriptedSampler(tokenizer, texts)
        pairs = mine_pairs([task], engine, tokenizer, lambda _: domain, samples=len(texts),
                           temperature=1.0, max_tokens=8)  # fmt: skip
        assert [p.rejected.final_text for p in pairs] == rejected


class OpenFailsOn:
    """A domain whose sessions fail to open on every other episode (infrastructure: the
    episode is a recorded failure with reward 0 that judges nothing)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.opened = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def open(self, task: Task, sandbox: Any) -> None:
        self.opened += 1
        if self.opened % 2 == 0:
            raise RuntimeError("sandbox failed to start")


def test_a_sample_whose_session_failed_is_never_the_rejected_answer(tokenizer: Any) -> None:
    task = get_domain("arith/addition-v1").generate(0, 3)
    domain = OpenFailsOn(get_domain(task.domain))
    engine = ScriptedSampler(tokenizer, [task.answer] * 4)
    pairs = mine_pairs([task], engine, tokenizer, lambda _: domain, samples=4,
                       temperature=1.0, max_tokens=8)  # fmt: skip
    assert domain.opened == 4 and pairs == []  # two passed, two crashed: nothing to prefer


class LongSayYes(SayYes):
    """SayYes with a 570-token prompt."""

    id = "test/long-say-yes-v1"

    def generate(self, seed: int, difficulty: int) -> Task:
        prompt = [Message("user", "filler " * 80 + "say yes")]
        return Task(f"{self.id}@{seed}", self.id, prompt, "yes", difficulty, seed)


@pytest.mark.parametrize("strategy", ["truncate_middle", "error"])
def test_a_reference_chosen_answer_is_replayed_under_the_samples_window(
    tokenizer: Any, strategy: str
) -> None:
    domain = LongSayYes()
    pairs = mine_pairs(
        [domain.generate(0, 1)], ScriptedSampler(tokenizer, ["no"]), tokenizer,
        lambda _: domain, samples=2, temperature=1.0, max_tokens=8, max_context=256,
        over_long=OverLongPolicy(strategy),  # type: ignore[arg-type]
    )  # fmt: skip
    if strategy == "error":  # the prompt never reached the model: no pair, not a 570-token one
        assert pairs == []
        return
    [pair] = pairs
    assert pair.chosen.final_text == "yes" and pair.rejected.final_text == "no"
    assert pair.chosen.prompt_ids == pair.rejected.prompt_ids  # the fitted prompt, both sides
    assert len(pair.chosen.prompt_ids) + len(pair.chosen.completion_ids) <= 256


def test_tasks_whose_samples_all_passed_give_no_pair(tokenizer: Any) -> None:
    task = get_domain("arith/addition-v1").generate(0, 3)
    engine = ScriptedSampler(tokenizer, [task.answer])
    pairs = mine_pairs(
        [task], engine, tokenizer, get_domain, samples=2, temperature=1.0, max_tokens=8
    )
    assert pairs == []


def _logged_dpo_steps(
    model: Any, tokenizer: Any, sft_weight: float
) -> list[tuple[int, dict[str, float]]]:
    """Two DPO steps (8 pairs each) on synthetic starter-domain pairs; what they logged."""
    pairs = synthetic_pairs(starter_tasks(range(4)), tokenizer)
    logged: list[tuple[int, dict[str, float]]] = []
    cfg = DPOConfig(lr=1e-3, batch_size=8, epochs=1, sft_weight=sft_weight)
    train_dpo(
        model, pairs, pairs, cfg, tokenizer.pad_token_id, log=lambda s, v: logged.append((s, v))
    )
    return logged


def test_sft_weight_adds_the_chosen_nll_to_the_loss(tiny_model: Any, tokenizer: Any) -> None:
    state = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    plain = _logged_dpo_steps(tiny_model, tokenizer, sft_weight=0.0)
    tiny_model.load_state_dict(state)
    mixed = _logged_dpo_steps(tiny_model, tokenizer, sft_weight=1.0)
    assert mixed[0][1]["loss"] > plain[0][1]["loss"] + 1.0  # the NLL of an untrained model is large


def test_dpo_positive_reaches_the_trainer(tiny_model: Any, tokenizer: Any) -> None:
    """DPOP's penalty is 0 while the policy is the reference (step 1) and never negative."""
    pairs = synthetic_pairs(starter_tasks(range(4)), tokenizer)
    state = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    losses = []
    for lam in (0.0, 50.0):
        tiny_model.load_state_dict(state)
        logged: list[float] = []
        cfg = DPOConfig(lr=3e-2, batch_size=16, epochs=2, sft_weight=0.0, positive_lambda=lam)
        train_dpo(tiny_model, pairs, [], cfg, tokenizer.pad_token_id,
                  log=lambda _s, v, out=logged: out.append(v["loss"]))  # fmt: skip
        losses.append(logged)
    plain, positive = losses
    assert positive[0] == pytest.approx(plain[0], rel=1e-6)
    assert positive[1] > plain[1] + 1.0  # lr 3e-2: step 1 takes chosen answers below the reference


@pytest.mark.parametrize(
    ("overrides", "first_loss"),
    [
        ({"loss": "ipo", "beta": 0.5}, 1.0),  # (Δ − 1/(2β))² with Δ = 0 at the start
        ({"loss": "sigmoid", "label_smoothing": 0.1}, 0.693147),  # cDPO: log 2 at Δ = 0
        ({"loss": "robust", "label_smoothing": 0.1}, 0.693147),  # rDPO: (0.9 − 0.1)·log 2 / 0.8
    ],
)
def test_each_dpo_loss_starts_where_its_formula_puts_policy_equals_reference(
    tiny_model: Any, tokenizer: Any, overrides: dict, first_loss: float
) -> None:
    pairs = synthetic_pairs(starter_tasks(range(8)), tokenizer)
    logged: list[tuple[int, dict[str, float]]] = []
    cfg = DPOConfig(lr=1e-3, batch_size=8, epochs=1, sft_weight=0.0, **overrides)
    train_dpo(tiny_model, pairs, pairs[:4], cfg, tokenizer.pad_token_id,
              log=lambda step, values: logged.append((step, values)))  # fmt: skip
    assert logged[0][1]["loss"] == pytest.approx(first_loss, abs=1e-4)
    assert all(math.isfinite(v["loss"]) for _, v in logged)


def test_reference_free_dpo_never_scores_a_reference(
    tiny_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import posttrain.train.dpo as dpo

    calls: list[int] = []
    real = dpo.sequence_logprob_sums
    monkeypatch.setattr(
        dpo, "sequence_logprob_sums", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    pairs = synthetic_pairs(starter_tasks(range(8)), tokenizer)
    cfg = DPOConfig(lr=1e-3, batch_size=8, epochs=1, sft_weight=0.0, reference_free=True)
    result = train_dpo(tiny_model, pairs, [], cfg, tokenizer.pad_token_id)
    assert result.steps == 4 and calls == []


def test_pair_micro_batches_hold_both_rows_within_the_budget(tokenizer: Any) -> None:
    pairs = synthetic_pairs(starter_tasks(range(6)), tokenizer)
    idx = list(range(0, len(pairs), 2))
    width = {j: max(len(s.prompt_ids) + len(s.completion_ids) for s in (p.chosen, p.rejected))
             for j, p in enumerate(pairs)}  # fmt: skip
    budget = 4 * max(width.values())  # room for two pairs of the longest
    micros = pair_micro_batches(pairs, idx, budget)
    assert sorted(j for m in micros for j in m) == idx
    assert any(len(m) > 1 for m in micros)
    for micro in micros:  # 2 rows per pair, padded to the micro-batch's widest pair
        assert 2 * len(micro) * max(width[j] for j in micro) <= budget
    assert pair_micro_batches(pairs, idx, None) == [idx]
    assert all(len(m) == 1 for m in pair_micro_batches(pairs, idx, 2))  # too long: alone


def test_budgeted_sequence_logprob_sums_keep_the_input_order(
    tiny_model: Any, tokenizer: Any
) -> None:
    rollouts = [r for p in synthetic_pairs(starter_tasks(range(4)), tokenizer) for r in (p.chosen, p.rejected)]  # fmt: skip
    whole = sequence_logprob_sums(tiny_model, rollouts, tokenizer.pad_token_id, None)
    split = sequence_logprob_sums(tiny_model, rollouts, tokenizer.pad_token_id, 64)
    assert whole.shape == (len(rollouts),) and bool((whole < 0).all())
    torch.testing.assert_close(split, whole, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("loss", ["sigmoid", "ipo"])
def test_micro_batched_dpo_steps_match_the_whole_batch(
    tiny_model: Any, tokenizer: Any, loss: str
) -> None:
    pairs = synthetic_pairs(starter_tasks(range(4)), tokenizer)
    results = []
    for budget in (None, 2, 400):  # whole batch; one pair per pass; a few per pass
        model = copy.deepcopy(tiny_model)
        logged: list[dict[str, float]] = []
        cfg = DPOConfig(lr=1e-3, batch_size=8, epochs=1, loss=loss, micro_batch_tokens=budget)
        train_dpo(model, pairs, [], cfg, tokenizer.pad_token_id,
                  log=lambda step, values, out=logged: out.append(values))  # fmt: skip
        results.append((dict(model.named_parameters()), logged))
    (whole, whole_logged), *splits = results
    assert len(whole_logged) == 2
    for params, logged in splits:
        for key in ("loss", "margin"):  # (reward_accuracy: the sign of ~0 margins at step 1)
            assert [v[key] for v in logged] == pytest.approx(
                [v[key] for v in whole_logged], rel=1e-3, abs=1e-5
            )
        # AdamW scales each element's step by its own gradient's size, so an element whose
        # gradient is ~0 (the tied embedding row of a byte no pair uses) moves by an amount
        # the summation order decides: 5.7e-6 apart on one machine. 5e-5 is 5% of one
        # step's largest move (lr 1e-3). Micro-batches weighted wrongly against each other
        # turn the step's direction (elements up to ~1e-3 apart); a uniform scale, which
        # AdamW would absorb, shows in the logged losses compared above.
        for name, value in whole.items():
            torch.testing.assert_close(params[name], value, rtol=1e-4, atol=5e-5)
