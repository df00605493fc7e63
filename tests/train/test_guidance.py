"""Off-policy guidance (`grpo.guidance`): a verified reference stands in for one sample
of a group whose samples all failed, so that the group has a gradient."""

from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import Any

import pytest
import torch

from posttrain.config import GRPOConfig, load_config
from posttrain.domains import get_domain
from posttrain.engines import SamplingParams
from posttrain.rollout.episode import run_episodes
from posttrain.train.batches import batch_logprobs, pack
from posttrain.train.grpo import train_grpo, trained_reward
from posttrain.train.guidance import Guidance, all_failed, is_reference
from posttrain.train.mixture import TaskSampler
from posttrain.train.rollout_metrics import policy_probe, probe_means
from posttrain.train.shared_prefix import SharePlan
from posttrain.types import Reference, Rollout, Task, Verdict
from tests.train.distributed_worker import SayYes
from tests.train.test_grpo import ScriptedSampler, run_grpo, weights


class RaisingReference(SayYes):
    id = "test/raising-reference-v1"

    def reference(self, task: Task) -> Reference:
        raise RuntimeError("no reference for this task")


class WrongReference(SayYes):
    id = "test/wrong-reference-v1"

    def reference(self, task: Task) -> Reference:
        return Reference.single("no")


class Digits(SayYes):
    """Reward 1 for "yes"; a `digits` component of 0.5 for any answer, "yes" included."""

    id = "test/digits-v1"

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        passed = rollout.final_text == "yes"
        return Verdict(float(passed), passed, "", {"digits": 0.5})


def groups_of(
    tokenizer: Any, domain: Any, texts: list[list[str]]
) -> list[tuple[Task, list[Rollout]]]:
    """One group per entry of `texts`, sampled (scripted) and verified by `domain`."""
    out = []
    for seed, samples in enumerate(texts):
        task = domain.generate(seed, 1)
        params = SamplingParams(max_tokens=8, n=len(samples))
        (group,) = run_episodes(
            [task], ScriptedSampler(tokenizer, samples), tokenizer, params, lambda _: domain
        )
        out.append((task, group))
    return out


def reward(r: Rollout) -> float:
    return trained_reward(r)


def guide(
    groups: list[tuple[Task, list[Rollout]]], model: Any, tokenizer: Any, domain: Any,
    reward_of: Any = reward, temperature: float = 1.0, **limits: Any,
) -> tuple[list[tuple[Task, list[Rollout]]], dict[str, float]]:  # fmt: skip
    get = domain if callable(domain) else (lambda _: domain)
    limits.setdefault("max_tokens", 1024)
    counts: dict[str, float] = {}
    out = Guidance(model, tokenizer, get, reward_of, 0, temperature, **limits).apply(groups, counts)
    return out, counts


def test_an_all_failed_group_gets_its_verified_reference_with_the_policys_logprobs(
    tiny_model: Any, tokenizer: Any
) -> None:
    domain = SayYes()
    groups = groups_of(tokenizer, domain, [["no", "nope"], ["yes", "no"], ["yes", "yes"]])
    out, stats = guide(groups, tiny_model, tokenizer, domain, temperature=0.7)
    assert stats == {"guided_groups": 1.0, "guidance_skipped": 0.0}
    assert out[1] is groups[1] and out[2] is groups[2]  # spread, all passed: as they were
    task, group = out[0]
    assert task is groups[0][0] and group[0] is groups[0][1][0]
    guided = group[1]
    assert guided.final_text == "yes" and guided.reward == 1.0 and guided.scored
    assert guided.prompt_ids == groups[0][1][1].prompt_ids
    assert guided.id.endswith("~reference")
    with torch.no_grad():
        expected = batch_logprobs(tiny_model, pack([guided], 0), 0.7)[0]  # [T-1]
    p = len(guided.prompt_ids)
    sampled = [k for k, m in enumerate(guided.loss_mask) if m]
    assert sampled and all(guided.logprobs[k] < 0 for k in sampled)
    for k in sampled:  # position p - 1 + k scores completion token k
        assert guided.logprobs[k] == pytest.approx(float(expected[p - 1 + k]), abs=1e-6)
    assert [r.reward for r in group] == [0.0, 1.0]


@pytest.mark.parametrize("domain", [RaisingReference(), WrongReference()], ids=lambda d: d.id)
def test_a_reference_that_cannot_help_leaves_the_group_as_it_was(
    tiny_model: Any, tokenizer: Any, domain: Any
) -> None:
    groups = groups_of(tokenizer, domain, [["no", "nope"]])
    out, stats = guide(groups, tiny_model, tokenizer, domain)
    assert out == groups and out[0] is groups[0]
    assert stats == {"guided_groups": 0.0, "guidance_skipped": 1.0}


def test_a_reference_no_better_on_the_trained_component_is_skipped(
    tiny_model: Any, tokenizer: Any
) -> None:
    domain = Digits()
    groups = groups_of(tokenizer, domain, [["no", "nope"]])

    def on_digits(r: Rollout) -> float:
        return trained_reward(r, "digits")

    out, stats = guide(groups, tiny_model, tokenizer, domain, on_digits)
    assert out[0] is groups[0] and stats["guidance_skipped"] == 1.0
    out, stats = guide(groups, tiny_model, tokenizer, domain)
    assert stats["guided_groups"] == 1.0  # on the reward, the reference is better


def test_which_groups_count_as_failed(tokenizer: Any) -> None:
    domain = SayYes()
    failed, mixed, passed = groups_of(tokenizer, domain, [["no", "no"], ["no", "yes"], ["yes"]])
    assert all_failed(failed[1], reward) and not all_failed(mixed[1], reward)
    assert not all_failed(passed[1], reward)
    unscored = [dataclasses.replace(r, judged=False) for r in failed[1]]
    assert not all_failed(unscored, reward)  # nothing judged: nothing known to have failed
    # A reward that is no number is no reward, as in the update: [0, NaN] failed.
    nan_last = {failed[1][-1].id: float("nan")}

    def with_nan(r: Rollout) -> float:
        return nan_last.get(r.id, reward(r))

    assert all_failed(failed[1], with_nan) and not all_failed(failed[1][-1:], with_nan)


def test_guided_grpo_learns_where_every_sample_fails(tiny_model: Any, tokenizer: Any) -> None:
    cfg = GRPOConfig(
        steps=3, batch_size=8, group_size=4, minibatch_size=8, lr=3e-3, refill_rounds=2
    )
    before = weights(tiny_model)
    unguided = copy.deepcopy(tiny_model)
    logged = run_grpo(unguided, tokenizer, ["no"], cfg)
    assert all(v["groups_with_signal"] == 0.0 for v in logged)
    assert all(v["groups_sampled"] == 6 for v in logged)  # two refills found nothing
    assert all(torch.equal(weights(unguided)[k], v) for k, v in before.items())

    guided = copy.deepcopy(tiny_model)
    logged = run_grpo(guided, tokenizer, ["no"], cfg.model_copy(update={"guidance": True}))
    assert [v["guided_groups"] for v in logged] == [2.0, 2.0, 2.0]
    assert all(v["groups_sampled"] == 2 for v in logged)  # failed groups are signal: no refill
    no = len(tokenizer.encode("no", add_special_tokens=False)) + 1  # with the end of turn
    assert all(v["completion_tokens"] == no for v in logged)  # the samples', not "yes"'s

    (yes,) = groups_of(tokenizer, SayYes(), [["yes"]])

    def yes_logprob(model: Any) -> float:
        batch = pack(yes[1], tokenizer.pad_token_id)
        with torch.no_grad():
            return float((batch_logprobs(model, batch) * batch.loss_mask).sum())

    assert yes_logprob(guided) > yes_logprob(tiny_model) + 0.1


def test_guidance_is_a_config_choice() -> None:
    assert load_config(None, []).grpo.guidance is False
    assert load_config(None, ["grpo.guidance=true"]).grpo.guidance is True


def test_the_curriculum_sees_the_policys_own_samples(tiny_model: Any, tokenizer: Any) -> None:
    """The reference is not the policy's: the cell's pass rate stays that of its samples."""
    domain = SayYes()
    cfg = GRPOConfig(
        steps=1, batch_size=4, group_size=4, minibatch_size=4, refill_rounds=0, guidance=True
    )
    sampler = TaskSampler([domain], "grpo")
    logged: list[dict[str, float]] = []
    train_grpo(
        copy.deepcopy(tiny_model), tokenizer, ScriptedSampler(tokenizer, ["no"]), sampler,
        lambda _: domain, cfg, max_tokens=8, log=lambda step, values: logged.append(values),
    )  # fmt: skip
    assert logged[0]["guided_groups"] == 1.0
    (rate,) = sampler.pass_rates.values()
    assert rate == pytest.approx(0.7 * 0.5)  # an EMA from 0.5 towards 0 of 4 passed


def test_a_tool_domains_reference_is_replayed_with_its_observations(
    tiny_model: Any, tokenizer: Any
) -> None:
    """A multi-turn reference: its tool results are environment tokens (mask 0, logprob
    0), its assistant turns are scored by the policy."""
    domain = get_domain("tools/calculator-v1")
    groups = groups_of(tokenizer, domain, [["no", "nope"]])
    assert all_failed(groups[0][1], reward)
    out, stats = guide(groups, tiny_model, tokenizer, get_domain)
    assert stats["guided_groups"] == 1.0
    guided = out[0][1][1]
    assert guided.reward == 1.0 and len(guided.turns) > 1
    runs = [mask for mask, _ in itertools.groupby(guided.loss_mask)]
    assert runs[:3] == [1, 0, 1]  # a call, its observation, the answer
    for logprob, mask in zip(guided.logprobs, guided.loss_mask, strict=True):
        assert (logprob < 0) if mask else logprob == 0.0
    per_turn = [lp for t in guided.turns for lp in [*t.logprobs, *[0.0] * len(t.env_token_ids)]]
    assert per_turn == guided.logprobs  # the turns (traces, viewer) hold the same logprobs


def test_an_unscored_sample_is_the_one_replaced(tiny_model: Any, tokenizer: Any) -> None:
    domain = SayYes()
    ((task, group),) = groups_of(tokenizer, domain, [["no", "nope", "no"]])
    group = [group[0], dataclasses.replace(group[1], judged=False), group[2]]
    ((_, out),), stats = guide([(task, group)], tiny_model, tokenizer, domain)
    assert stats["guided_groups"] == 1.0
    assert out[0] is group[0] and out[2] is group[2] and is_reference(out[1])
    assert out[1].id == group[1].id + "~reference"


@pytest.mark.parametrize(
    "limits", [{"max_tokens": 1}, {"max_context": 3}, {"prompt": [1, 2, 3]}], ids=str
)
def test_a_reference_the_policy_could_not_have_sampled_is_skipped(
    tiny_model: Any, tokenizer: Any, limits: dict[str, Any]
) -> None:
    domain = SayYes()
    ((task, group),) = groups_of(tokenizer, domain, [["no", "nope"]])
    if "prompt" in limits:  # a context strategy rewrote the sampled prompt
        prompt = limits.pop("prompt")
        group = [dataclasses.replace(r, prompt_ids=prompt) for r in group]
    out, stats = guide([(task, group)], tiny_model, tokenizer, domain, **limits)
    assert out[0][1] == group and stats == {"guided_groups": 0.0, "guidance_skipped": 1.0}


def test_the_probe_measures_the_policys_samples_only(tiny_model: Any, tokenizer: Any) -> None:
    domain = SayYes()
    ((task, group),) = groups_of(tokenizer, domain, [["nope, no", "no"]])
    ((_, guided),), _ = guide([(task, group)], tiny_model, tokenizer, domain)
    share = SharePlan(False, 1.0)
    both = probe_means(policy_probe(tiny_model, guided, pack(guided, 0), share))
    alone = probe_means(policy_probe(tiny_model, guided[:1], pack(guided[:1], 0), share))
    assert both["logprob_mismatch"] > 0.1  # the scripted logprobs are -1, not the model's
    for key in ("entropy", "logprob_mismatch"):
        assert both[key] == pytest.approx(alone[key], abs=1e-6)
