"""GRPO end to end on a tiny model: with scripted samples and a domain whose reward we
control, and once with real sampling on the starter domains."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from posttrain.config import GRPOConfig
from posttrain.domains import STARTER_DOMAINS, Axes, Domain, get_domain
from posttrain.engines import Completion, GenerationRequest, HFEngine
from posttrain.train import grpo as grpo_module
from posttrain.train.grpo import train_grpo
from posttrain.train.mixture import TaskSampler
from posttrain.types import Message, Reference, Rollout, Task, Verdict
from tests.train.distributed_worker import SayYes

LOGGED_KEYS = {
    "reward",
    "pass_rate",
    "truncated_frac",
    "groups_sampled",
    "groups_with_signal",
    "completion_tokens",
    "difficulty_mean",
    "errors",
    "rollout_s",
    "update_s",
    "clip_frac",
    "kl",
    "loss",
    "verifier_error_rate",
    "sandbox_error_rate",
    "tokens_per_s",
    "entropy",
    "logprob_mismatch",
    "grad_norm",
    "skipped_updates",
    "lr",
}


def _overall(values: dict[str, float]) -> set[str]:
    """The logged keys apart from the per-family, per-cell and per-component ones."""
    return {k for k in values if not k.startswith(("by_family/", "by_cell/", "component/"))}


class EvenFirstToken:
    """A one-turn domain rewarding an even first sampled token id: about half of an
    untrained model's samples pass, so real sampling gives groups with reward spread."""

    id = "test/even-first-token-v1"
    axes = Axes("text", "none", "single", "exact")
    max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        prompt = [Message("user", f"pick #{seed}")]
        return Task(f"{self.id}@{seed}.d{difficulty}", self.id, prompt, "", difficulty, seed)

    def reference(self, task: Task) -> Reference:
        return Reference.single("")

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        passed = rollout.completion_ids[0] % 2 == 0
        return Verdict(float(passed), passed, "even" if passed else "odd")


class ScriptedSampler:
    """An engine whose i-th sample of every request is `texts[i % len(texts)]`; its
    logprobs are a fixed -1 per token (the "old" policy of the ratio)."""

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


def run_grpo(
    model: Any,
    tokenizer: Any,
    texts: list[str],
    cfg: GRPOConfig,
    domain: Any = None,
    engine: Any = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Train on `domain` (SayYes) with scripted samples of `texts` (or `engine`'s);
    returns what was logged per step."""
    domain = domain or SayYes()
    logged: list[dict[str, float]] = []
    train_grpo(
        model,
        tokenizer,
        engine or ScriptedSampler(tokenizer, texts),
        TaskSampler([domain], "grpo"),
        lambda _: domain,
        cfg,
        max_tokens=8,
        log=lambda step, values: logged.append(values),
        **kwargs,
    )
    return logged


def weights(model: Any) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


SMALL = GRPOConfig(steps=2, batch_size=4, group_size=2, minibatch_size=4, lr=1e-3)


def test_grpo_updates_the_weights_when_a_group_has_reward_spread(
    tiny_model: Any, tokenizer: Any
) -> None:
    before = weights(tiny_model)
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], SMALL)
    assert not same_weights(before, weights(tiny_model))
    assert [v["groups_with_signal"] for v in logged] == [1.0, 1.0]
    assert [v["reward"] for v in logged] == [0.5, 0.5]
    assert all(v["loss"] != 0.0 for v in logged)


@pytest.mark.parametrize("texts", [["no"], ["yes"]], ids=["all-fail", "all-pass"])
def test_grpo_leaves_the_weights_alone_when_no_group_has_reward_spread(
    tiny_model: Any, tokenizer: Any, texts: list[str]
) -> None:
    before = weights(tiny_model)
    logged = run_grpo(tiny_model, tokenizer, texts, SMALL)
    assert same_weights(before, weights(tiny_model))
    assert [v["groups_with_signal"] for v in logged] == [0.0, 0.0]
    assert all(v["loss"] == 0.0 for v in logged)


class YesOrVerifierRaises(SayYes):
    """SayYes whose verifier raises on any answer but "yes" (the episode loop records
    that as reward 0 with `Verdict.error` set: no verdict, not a wrong answer)."""

    id = "test/yes-or-raise-v1"

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        if rollout.final_text != "yes":
            raise RuntimeError("verifier crashed")
        return super().verify(task, rollout, session)


def test_a_verifier_that_raised_is_not_taken_for_a_wrong_answer(
    tiny_model: Any, tokenizer: Any
) -> None:
    before = weights(tiny_model)
    cfg = SMALL.model_copy(update={"refill_rounds": 0})
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg, domain=YesOrVerifierRaises())
    assert [v["verifier_error_rate"] for v in logged] == [0.5, 0.5]
    assert same_weights(before, weights(tiny_model))  # every scored answer passed
    assert all(v["groups_with_signal"] == 0.0 for v in logged)  # an unscored 0 is no spread
    assert all(v["loss"] == 0.0 for v in logged)


class YesWhoseSessionsFail(SayYes):
    """SayYes whose every other session fails to open (a sandbox that did not start):
    recorded failures with reward 0 that judge nothing."""

    id = "test/yes-flaky-v1"

    def __init__(self) -> None:
        self.opened = 0

    def open(self, task: Task, sandbox: Any) -> None:
        self.opened += 1
        if self.opened % 2 == 0:
            raise RuntimeError("sandbox failed to start")


def test_an_episode_that_crashed_is_not_taken_for_a_wrong_answer(
    tiny_model: Any, tokenizer: Any
) -> None:
    before = weights(tiny_model)
    cfg = SMALL.model_copy(update={"refill_rounds": 0})
    domain = YesWhoseSessionsFail()
    logged = run_grpo(tiny_model, tokenizer, ["yes"], cfg, domain=domain)
    assert domain.opened > 0 and all(v["errors"] > 0 for v in logged)
    assert same_weights(before, weights(tiny_model))  # every answer that ran passed
    assert all(v["groups_with_signal"] == 0.0 for v in logged)
    assert all(v["loss"] == 0.0 for v in logged)


class YesWithPartialCredit(SayYes):
    """SayYes whose every answer fails but whose `close` component tells "yes yes yes"
    (0.5) from "no" (0.0): a signal only dense shaping sees."""

    id = "test/yes-partial-v1"

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        close = 0.5 if "yes" in rollout.final_text else 0.0
        return Verdict(0.0, False, "never exactly right", {"close": close})


class YesWithANaNComponent(SayYes):
    """SayYes whose verifier puts NaN in the component trained on."""

    id = "test/yes-nan-v1"

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        right = rollout.final_text == "yes"
        return Verdict(float(right), right, "", {"close": float("nan")})


def test_a_nan_component_leaves_its_rollout_out_instead_of_poisoning_the_update(
    tiny_model: Any, tokenizer: Any
) -> None:
    # Its group's advantages had all been NaN, so every update was skipped as a
    # non-finite gradient until the stage stopped.
    before = weights(tiny_model)
    cfg = SMALL.model_copy(update={"refill_rounds": 0, "reward_component": "close"})
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg, domain=YesWithANaNComponent())
    assert all(v["skipped_updates"] == 0.0 and v["groups_with_signal"] == 0.0 for v in logged)
    assert same_weights(before, weights(tiny_model))


@pytest.mark.parametrize(("component", "moves"), [(None, False), ("close", True), ("x", False)])
def test_reward_component_trains_on_a_verdict_component_where_verdicts_have_it(
    tiny_model: Any, tokenizer: Any, component: str | None, moves: bool
) -> None:
    before = weights(tiny_model)
    cfg = SMALL.model_copy(update={"refill_rounds": 0, "reward_component": component})
    logged = run_grpo(tiny_model, tokenizer, ["yes yes yes", "no"], cfg,
                      domain=YesWithPartialCredit())  # fmt: skip
    assert same_weights(before, weights(tiny_model)) == (not moves)
    assert all(v["reward"] == 0.0 for v in logged)  # the logs keep the reward


def test_grpo_logs_the_expected_keys_each_step(tiny_model: Any, tokenizer: Any) -> None:
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], SMALL)
    assert len(logged) == SMALL.steps
    for values in logged:
        assert _overall(values) == LOGGED_KEYS
        assert values["by_family/test/pass_rate"] == values["pass_rate"] == 0.5
        assert values["by_family/test/tokens"] == values["completion_tokens"]
        assert values["verifier_error_rate"] == values["sandbox_error_rate"] == 0.0
        assert values["entropy"] > 0 and values["logprob_mismatch"] > 0  # scripted: -1 each
        assert values["errors"] == 0.0
        assert values["completion_tokens"] == pytest.approx((4 + 3) / 2)  # "yes"/"no" + eos


def test_a_warm_up_raises_the_learning_rate_linearly_then_holds_it(
    tiny_model: Any, tokenizer: Any
) -> None:
    cfg = SMALL.model_copy(update={"steps": 4, "warmup_steps": 3})
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg)
    assert [v["lr"] for v in logged] == pytest.approx([1e-3 / 3, 2e-3 / 3, 1e-3, 1e-3])
    assert [v["lr"] for v in run_grpo(tiny_model, tokenizer, ["yes"], SMALL)] == [1e-3, 1e-3]


def test_grpo_records_every_rollout_with_its_policy_version(
    tiny_model: Any, tokenizer: Any
) -> None:
    recorded: list[list[Rollout]] = []
    run_grpo(tiny_model, tokenizer, ["yes", "no"], SMALL, record=recorded.append)
    assert [len(batch) for batch in recorded] == [SMALL.batch_size] * SMALL.steps
    assert [{r.policy_version for r in batch} for batch in recorded] == [{1}, {2}]


def test_grpo_kl_is_measured_against_the_policy_the_stage_started_from(
    tiny_model: Any, tokenizer: Any
) -> None:
    cfg = SMALL.model_copy(update={"kl_coef": 0.1})
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg)
    assert logged[0]["kl"] == pytest.approx(0.0, abs=1e-7)  # first update: policy == reference
    assert logged[1]["kl"] > 0.0


def test_grpo_runs_end_to_end_on_the_starter_domains(tiny_model: Any, tokenizer: Any) -> None:
    domains: list[Domain] = [get_domain(d) for d in STARTER_DOMAINS]
    logged: list[dict[str, float]] = []
    cfg = GRPOConfig(steps=1, batch_size=8, group_size=2, minibatch_size=8)
    result = train_grpo(
        tiny_model,
        tokenizer,
        HFEngine(tiny_model, tokenizer, seed=0),
        TaskSampler(domains, "grpo"),
        get_domain,
        cfg,
        max_tokens=8,
        max_context=512,
        log=lambda step, values: logged.append(values),
    )
    assert result.steps == 1
    assert len(logged) == 1 and _overall(logged[0]) == LOGGED_KEYS
    assert logged[0]["logprob_mismatch"] < 1e-3  # the real engine samples what training scores
    cells = [k for k in logged[0] if k.startswith("by_cell/")]
    assert cells and all(k.count("/") == 5 for k in cells)
    assert {k.rsplit("/", 1)[1] for k in cells} == {"reward", "pass_rate", "tokens"}
    assert all(0 <= logged[0][k] <= 1 for k in cells if not k.endswith("/tokens"))
    assert any(k.startswith("component/") for k in logged[0])
    assert result.mean_reward_first == result.mean_reward_last == logged[0]["reward"]


@pytest.mark.parametrize(
    "temperature",
    [
        1.0,
        0.7,
    ],
)
def test_the_first_update_is_on_policy_so_every_token_ratio_is_one(
    tiny_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch, temperature: float
) -> None:
    log_ratios: list[float] = []

    def spy(
        logprobs: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, **kw: Any
    ) -> Any:
        log_ratios.append(float(((logprobs.detach() - old).abs() * mask).max()))
        return grpo_loss(logprobs, old, adv, mask, **kw)

    grpo_loss = grpo_module.grpo_loss
    monkeypatch.setattr(grpo_module, "grpo_loss", spy)
    domain = EvenFirstToken()
    cfg = GRPOConfig(
        steps=1, batch_size=16, group_size=4, minibatch_size=16, temperature=temperature
    )
    train_grpo(
        tiny_model,
        tokenizer,
        HFEngine(tiny_model, tokenizer, seed=0),
        TaskSampler([domain], "grpo"),
        lambda _: domain,
        cfg,
        max_tokens=6,
    )
    assert len(log_ratios) == 1  # one update: some group had reward spread
    assert log_ratios[0] < 1e-4


def test_the_length_ramp_rises_to_10_by_80_percent_of_the_stage() -> None:
    from posttrain.config import GRPOConfig
    from posttrain.train.grpo import ramp_ceiling

    cfg = GRPOConfig(steps=100, max_minutes=10.0, ramp_from=4)
    assert ramp_ceiling(GRPOConfig(), 50, 0.0) is None
    assert ramp_ceiling(cfg, 1, 0.0) == 4
    assert ramp_ceiling(cfg, 41, 0.0) == 7  # half way up the ramp by steps
    assert ramp_ceiling(cfg, 2, 240.0) == 7  # or by minutes, whichever is further
    assert ramp_ceiling(cfg, 81, 0.0) == 10
    assert ramp_ceiling(cfg, 100, 599.0) == 10


# The first five losses of a fixed-seed tiny GRPO run on scripted samples (yes/no/no/yes
# per group, so every group has reward spread). Scripted rollouts keep sampling out of
# it: only the model's forward and AdamW decide these numbers. A change to them is a
# change to the loss, the advantages, the aggregation or the optimizer: say why.
GOLDEN_LOSSES = [0.29123253, 0.28902762, 0.28651384, 0.28330575, 0.27902742]


def test_a_fixed_seed_run_reproduces_its_first_five_losses(tiny_model: Any, tokenizer: Any) -> None:
    cfg = GRPOConfig(
        steps=5, batch_size=8, group_size=4, minibatch_size=4, epochs=2, lr=1e-3, temperature=1.0
    )
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no", "no", "yes"], cfg)
    losses = [v["loss"] for v in logged]
    assert losses == pytest.approx(GOLDEN_LOSSES, rel=1e-4, abs=1e-6)


def test_grpo_feeds_each_groups_episode_lengths_to_a_cost_aware_curriculum(
    tiny_model: Any, tokenizer: Any
) -> None:
    domain = SayYes()
    sampler = TaskSampler([domain], "grpo", difficulties=[1], adaptive=True, cost_aware=True)
    texts = ["yes", "no thanks"]  # every group: one of each (group_size 2)
    train_grpo(tiny_model, tokenizer, ScriptedSampler(tokenizer, texts), sampler,
               lambda _: domain, GRPOConfig(steps=1, batch_size=4, group_size=2,
               minibatch_size=4), max_tokens=8)  # fmt: skip
    lengths = [len(tokenizer.encode(t, add_special_tokens=False)) + 1 for t in texts]  # + EOS
    assert sampler.tokens == {(domain.id, 1): pytest.approx(sum(lengths) / 2)}


def test_starting_and_stopping_the_rollout_source_is_not_training_time(
    tiny_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray workers take seconds to start and stop: the stage's clock (its time cap, and
    the seconds the control arm gets) leaves them out."""
    import time

    real = grpo_module.make_source

    class SlowToStop:
        def __init__(self, source: Any) -> None:
            self.source = source

        def __getattr__(self, name: str) -> Any:
            return getattr(self.source, name)

        def close(self) -> None:
            time.sleep(1.0)
            self.source.close()

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        return SlowToStop(real(*args, **kwargs))

    monkeypatch.setattr(grpo_module, "make_source", slow)
    domain = SayYes()
    began = time.perf_counter()
    result = train_grpo(
        tiny_model, tokenizer, ScriptedSampler(tokenizer, ["yes", "no"]),
        TaskSampler([domain], "grpo"), lambda _: domain, SMALL, max_tokens=8,
    )  # fmt: skip
    wall = time.perf_counter() - began
    assert result.steps == 2 and wall - result.seconds >= 1.9  # both seconds left out


def scored_rollout(reward: float, i: int) -> Rollout:
    verdict = Verdict(reward, reward == 1.0, "")
    return Rollout(f"r{i}", "t", "d", 1, [], [], [], [], [], [], verdict)


@pytest.mark.parametrize(
    ("rewards", "spread"), [([0.3, 0.1 + 0.2, 0.3], False), ([0.3, 0.2], True), ([0.5], False)]
)
def test_dynamic_sampling_and_the_update_agree_on_which_groups_have_spread(
    rewards: list[float], spread: bool
) -> None:
    # 0.3 and 0.1 + 0.2 differ in float64 but not in the float32 advantages: dynamic
    # sampling counted such a group as signal, and the update then dropped it.
    group = [scored_rollout(r, i) for i, r in enumerate(rewards)]
    assert grpo_module.has_spread(group) is spread
    _, keep = grpo_module.step_advantages(torch.tensor(rewards), SMALL.model_copy(
        update={"group_size": len(rewards), "batch_size": len(rewards)}))  # fmt: skip
    assert bool(keep) is spread
