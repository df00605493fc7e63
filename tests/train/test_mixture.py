"""Task streams and the held-out set."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from posttrain.config import ConfigError, load_config
from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.domains.base import prompt_key as messages_key
from posttrain.train.mixture import TaskSampler, heldout_tasks, prompt_key
from posttrain.train.recipe_inputs import dpo_tasks, grpo_sampler, sft_demonstrations
from posttrain.types import Message, Rollout, Task

DOMAINS = [get_domain(i) for i in STARTER_DOMAINS]


def test_heldout_tasks_cycle_every_difficulty_per_domain() -> None:
    tasks = heldout_tasks(DOMAINS, 20, seed_offset=10**9)
    assert len(tasks) == 80
    for d in DOMAINS:
        mine = [t.difficulty for t in tasks if t.domain == d.id]
        assert sorted(set(mine)) == list(range(1, 11))


def test_heldout_prompts_are_distinct_within_a_domain() -> None:
    # 400 additions over difficulties 1..10: difficulty 1 has only 100 distinct prompts
    tasks = heldout_tasks(DOMAINS[:1], 400, seed_offset=10**9)
    assert len({prompt_key(t) for t in tasks}) == 400
    assert [t.difficulty for t in tasks[:10]] == list(range(1, 11))  # the cycle is kept
    again = heldout_tasks(DOMAINS[:1], 400, seed_offset=10**9)
    assert [t.id for t in again] == [t.id for t in tasks]  # deterministic


def test_heldout_tasks_name_a_difficulty_without_enough_prompts() -> None:
    # difficulty 1 of addition has 100 distinct prompts
    with pytest.raises(ValueError, match=r"arith/addition-v1 .* difficulty 1"):
        heldout_tasks(DOMAINS[:1], 101, seed_offset=10**9, difficulties=[1])


def test_a_dataset_short_of_heldout_prompts_is_told_to_raise_its_fraction(tmp_path: Path) -> None:
    from posttrain.domains.dataset import DatasetDomain

    rows = "".join(json.dumps({"prompt": f"say w{i % 10}", "answer": f"w{i % 10}"}) + "\n"
                   for i in range(30))  # fmt: skip
    (tmp_path / "d.jsonl").write_text(rows)
    domain = DatasetDomain("mine/d-v1", tmp_path / "d.jsonl", verifier="exact",
                           heldout_fraction=0.2, heldout_seed_offset=10**9)  # fmt: skip
    with pytest.raises(ValueError, match="raise its heldout_fraction"):
        heldout_tasks([domain], len(domain.heldout_rows) + 1, seed_offset=10**9)


def test_training_stream_never_yields_a_heldout_prompt() -> None:
    held = heldout_tasks(DOMAINS, 100, seed_offset=10**9)
    exclude = {prompt_key(t) for t in held}
    drawn = TaskSampler(DOMAINS, "sft", difficulties=[1, 2], exclude=exclude).sample(500)
    assert not {prompt_key(t) for t in drawn} & exclude


def test_same_stream_and_seed_give_the_same_tasks() -> None:
    a = TaskSampler(DOMAINS, "grpo", seed=1).sample(20)
    b = TaskSampler(DOMAINS, "grpo", seed=1).sample(20)
    c = TaskSampler(DOMAINS, "grpo", seed=2).sample(20)
    assert [t.id for t in a] == [t.id for t in b]
    assert [t.id for t in a] != [t.id for t in c]


def test_streams_use_disjoint_seeds() -> None:
    sft = {t.seed for t in TaskSampler(DOMAINS, "sft").sample(50)}
    grpo = {t.seed for t in TaskSampler(DOMAINS, "grpo").sample(50)}
    assert not sft & grpo


def test_weights_steer_the_domain_mix() -> None:
    tasks = TaskSampler(DOMAINS, "dpo", weights=[1, 0, 0, 0]).sample(30)
    assert {t.domain for t in tasks} == {DOMAINS[0].id}


def test_unknown_stream_is_refused() -> None:
    with pytest.raises(ValueError, match="stream"):
        TaskSampler(DOMAINS, "nope")


def test_adaptive_sampler_favours_cells_with_reward_spread() -> None:
    sampler = TaskSampler(DOMAINS[:1], "grpo", difficulties=[1, 2, 3], adaptive=True)
    for _ in range(20):
        sampler.observe(DOMAINS[0].generate(0, 1), [1.0] * 8)  # always solved
        sampler.observe(DOMAINS[0].generate(0, 2), [1.0, 0.0] * 4)  # half solved
        sampler.observe(DOMAINS[0].generate(0, 3), [0.0] * 8)  # never solved
    counts = {k: 0 for k in (1, 2, 3)}
    for task in sampler.sample(400):
        counts[task.difficulty] += 1
    assert counts[2] > 5 * counts[1] and counts[2] > 5 * counts[3]
    assert counts[1] > 0 and counts[3] > 0  # the floor keeps every cell alive


def test_adaptive_floor_sets_the_weight_of_solved_cells() -> None:
    sampler = TaskSampler(DOMAINS[:1], "grpo", difficulties=[1, 2], adaptive=True, floor=0.01)
    for _ in range(40):
        sampler.observe(DOMAINS[0].generate(0, 1), [1.0] * 8)
    assert sampler.cell_weight(DOMAINS[0].id, 1) == pytest.approx(0.01)
    assert sampler.cell_weight(DOMAINS[0].id, 2) == 1.0  # unseen: assumed half solved
    with pytest.raises(ValueError, match="floor"):
        TaskSampler(DOMAINS[:1], "grpo", adaptive=True, floor=0.0)


def test_cost_aware_weights_are_signal_per_token() -> None:
    sampler = TaskSampler(DOMAINS[:1], "grpo", difficulties=[1, 2, 3], adaptive=True,
                          floor=0.01, cost_aware=True)  # fmt: skip
    short, long_ = DOMAINS[0].generate(0, 1), DOMAINS[0].generate(0, 2)
    for _ in range(40):
        sampler.observe(short, [1.0, 0.0] * 4, [5] * 8)  # half solved, 5 tokens
        sampler.observe(long_, [1.0] * 8, [45] * 8)  # solved, 45 tokens
    mean = (5.0 + 45.0) / 2
    assert sampler.cell_weight(DOMAINS[0].id, 1) == pytest.approx(1.0 * mean / 5)
    assert sampler.cell_weight(DOMAINS[0].id, 2) == pytest.approx(0.01 * mean / 45)  # the floor too
    assert sampler.cell_weight(DOMAINS[0].id, 3) == 1.0  # unseen: half solved, mean length
    sampler.cost_aware = False
    assert sampler.cell_weight(DOMAINS[0].id, 2) == pytest.approx(0.01)


def test_episode_lengths_are_an_ema_per_cell() -> None:
    sampler = TaskSampler(DOMAINS[:1], "grpo", adaptive=True, cost_aware=True)
    task = DOMAINS[0].generate(0, 4)
    sampler.observe(task, [1.0, 0.0], [10, 30])  # first: the group's mean
    sampler.observe(task, [1.0, 0.0], [40, 40])
    assert sampler.tokens[(task.domain, 4)] == pytest.approx(0.7 * 20 + 0.3 * 40)
    sampler.observe(task, [1.0, 0.0])  # no lengths given: unchanged
    assert sampler.tokens[(task.domain, 4)] == pytest.approx(26.0)


def test_cost_aware_sampling_draws_long_solved_cells_rarely() -> None:
    counts = []
    for cost_aware in (False, True):
        sampler = TaskSampler(DOMAINS[:2], "grpo", difficulties=[1], adaptive=True,
                              floor=0.01, cost_aware=cost_aware)  # fmt: skip
        for _ in range(40):
            sampler.observe(DOMAINS[0].generate(0, 1), [1.0, 0.0] * 4, [5] * 8)
            sampler.observe(DOMAINS[1].generate(0, 1), [1.0] * 8, [60] * 8)
        counts.append(sum(t.domain == DOMAINS[1].id for t in sampler.sample(3000)))
    plain, aware = counts
    assert 10 < plain < 60  # 1% of 3000 draws, give or take
    assert aware < plain / 4  # 12 times rarer: 0.01 · (32.5 / 60) against 1 · (32.5 / 5)


def test_plain_sampler_ignores_observations() -> None:
    sampler = TaskSampler(DOMAINS[:1], "grpo", difficulties=[1, 2])
    sampler.observe(DOMAINS[0].generate(0, 1), [1.0] * 8)
    assert sampler.cell_weight(DOMAINS[0].id, 1) == sampler.cell_weight(DOMAINS[0].id, 2) == 1.0


def test_a_stream_that_meets_only_heldout_prompts_gives_up_with_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from posttrain.train import mixture

    domain = get_domain("arith/addition-v1")
    excluded = {prompt_key(domain.generate(s, 1)) for s in range(10_000)}  # every d=1 prompt
    monkeypatch.setattr(mixture, "MAX_CONSECUTIVE_SKIPS", 50)
    sampler = TaskSampler([domain], "sft", difficulties=[1], exclude=excluded)
    with pytest.raises(ValueError, match="too few distinct tasks outside the held-out set"):
        sampler.sample(1)


def test_heldout_tasks_can_be_limited_to_chosen_difficulties() -> None:
    tasks = heldout_tasks(DOMAINS, 6, seed_offset=10**9, difficulties=[10])
    assert {t.difficulty for t in tasks} == {10}
    assert len({t.id for t in tasks}) == len(tasks)


def test_a_window_limits_draws_to_its_difficulties() -> None:
    sampler = TaskSampler(DOMAINS, "grpo", seed=0, adaptive=True)
    sampler.window = (6, 8)
    assert {t.difficulty for t in sampler.sample(60)} == {6, 7, 8}


def test_a_window_holding_no_allowed_difficulty_never_draws_above_its_top() -> None:
    sampler = TaskSampler(DOMAINS[:1], "grpo", difficulties=[1, 2, 9, 10], seed=0)
    sampler.window = (5, 7)  # the highest allowed level at or below 7
    assert {t.difficulty for t in sampler.sample(30)} == {2}
    high = TaskSampler(DOMAINS[:1], "grpo", difficulties=[8, 9, 10], seed=0)
    high.window = (1, 3)  # none at or below 3: the lowest allowed level
    assert {t.difficulty for t in high.sample(30)} == {8}


def test_mixture_weights_prefer_the_most_specific_key() -> None:
    from posttrain.train.mixture import mixture_weights

    mix = [get_domain(d) for d in ("arith/addition-v1", "text/reverse-v1", "tools/calculator-v1")]
    spec = {"rounds=single": 0.5, "text": 2.0, "tools/calculator-v1": 4.0}
    assert mixture_weights(mix, spec) == [0.5, 2.0, 4.0]
    assert mixture_weights(mix, {}) == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"arith/nope-v1": 1.0}, "matches no domain of the mix"),
        ({"nofamily": 1.0}, "matches no domain of the mix"),
        ({"modality=smell": 1.0}, "unknown axis or value"),
        ({"arith": -1.0}, "must be a finite number >= 0, got -1.0"),
        ({"arith": float("inf")}, "must be a finite number >= 0, got inf"),
        ({"arith": float("nan")}, "must be a finite number >= 0, got nan"),
        ({"arith": 0.0, "text": 0.0, "tools": 0.0}, "every domain of the mix has weight 0"),
        ({"rounds=single": 1e200, "modality=text": 1e200}, "overflows for arith/addition-v1"),
        (
            {"rounds=single": 1e200, "modality=text": 1e200, "tools=none": 0.0},
            "overflows for arith/addition-v1",  # inf × 0: NaN
        ),
    ],
)
def test_an_invalid_mixture_is_named(spec: dict, needle: str) -> None:
    from posttrain.train.mixture import MixtureError, mixture_weights

    mix = [get_domain(d) for d in ("arith/addition-v1", "text/reverse-v1", "tools/calculator-v1")]
    with pytest.raises(MixtureError, match=needle):
        mixture_weights(mix, spec)


def test_a_sampler_resumed_from_its_state_draws_the_same_tasks() -> None:
    from posttrain.train.mixture import TaskSampler

    mix = [get_domain(d) for d in ("arith/addition-v1", "text/reverse-v1")]
    a = TaskSampler(mix, "grpo", seed=1, adaptive=True)
    a.sample(5)
    a.observe(a.sample(1)[0], [1.0, 0.0])
    a.window = (2, 4)
    b = TaskSampler(mix, "grpo", seed=1, adaptive=True)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert [t.id for t in a.sample(8)] == [t.id for t in b.sample(8)]
    assert a.pass_rates == b.pass_rates and b.window == (2, 4)


def test_a_cost_aware_sampler_resumes_with_its_episode_lengths() -> None:
    mix = [get_domain(d) for d in ("arith/addition-v1", "text/reverse-v1")]
    a = TaskSampler(mix, "grpo", seed=1, adaptive=True, cost_aware=True)
    for task in a.sample(6):
        a.observe(task, [1.0, 0.0], [3 + task.difficulty, 9])
    b = TaskSampler(mix, "grpo", seed=1, adaptive=True, cost_aware=True)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.tokens == a.tokens
    assert [t.id for t in a.sample(8)] == [t.id for t in b.sample(8)]
    old = a.state_dict()
    del old["tokens"]  # a state saved before lengths were kept
    b.load_state_dict(old)
    assert b.tokens == {}


@pytest.mark.parametrize("cost", [True, False])
def test_the_recipe_gives_grpo_its_curriculum_settings(cost: bool) -> None:
    overrides = ["grpo.adaptive_floor=0.02", f"grpo.adaptive_cost={str(cost).lower()}", "seed=3"]
    sampler = grpo_sampler(load_config(None, overrides), DOMAINS, None, set())
    assert (sampler.adaptive, sampler.floor, sampler.cost_aware) == (True, 0.02, cost)
    assert sampler.stream == "grpo"
    assert sampler.next_seed == TaskSampler(DOMAINS, "grpo", seed=3).next_seed


class Spaced:
    """Two prompts, each written with 0 to 2 extra spaces: six spellings of two prompts."""

    id = "test/spaced-v1"

    def generate(self, seed: int, difficulty: int) -> Task:
        text = "say " + " " * (seed // 2 % 3) + f"w{seed % 2}"
        return Task(f"{self.id}@{seed}.d{difficulty}", self.id, [Message("user", text)], "",
                    difficulty, seed)  # fmt: skip


def test_prompts_that_differ_only_in_whitespace_are_one_prompt() -> None:
    domain: Any = Spaced()
    assert len(heldout_tasks([domain], 2, seed_offset=0)) == 2
    with pytest.raises(ValueError, match="too few distinct prompts"):
        heldout_tasks([domain], 3, seed_offset=0)  # six spellings, two prompts
    held = heldout_tasks([domain], 1, seed_offset=0)  # "say w0"
    drawn = TaskSampler([domain], "sft", exclude={prompt_key(t) for t in held}).sample(20)
    assert {t.prompt[0].content.split()[-1] for t in drawn} == {"w1"}


@pytest.mark.parametrize(
    ("weights", "match"),
    [([-1, 1, 1, 1], "weight of arith"), ([float("nan"), 1, 1, 1], "weight of arith"),
     ([0, 0, 0, 0], "weight 0")],
)  # fmt: skip
def test_a_sampler_refuses_bad_weights_naming_the_domain(weights: list[float], match: str) -> None:
    # A negative weight had silently skewed the mix; zero and NaN failed in random.choices
    # without naming a domain.
    with pytest.raises(ValueError, match=match):
        TaskSampler(DOMAINS, "dpo", weights=weights)


def prompt_key_of(rollout: Rollout) -> str:
    prompt = list(itertools.takewhile(lambda m: m.role != "assistant", rollout.messages))
    return rollout.domain + "\x00" + messages_key(prompt)


def test_sft_validation_prompts_are_none_of_its_training_prompts(tokenizer: Any) -> None:
    config = load_config(None, ["sft.num_examples=2000", "sft.val_examples=256"])
    domains = [get_domain(d) for d in config.domains]
    train, val = sft_demonstrations(config, domains, set(), tokenizer)
    seen = {prompt_key_of(r) for r in train}
    assert len(val) == 256 and not seen & {prompt_key_of(r) for r in val}


def test_dpo_validation_prompts_are_none_of_its_mining_prompts() -> None:
    config = load_config(None, ["dpo.num_tasks=1000", "dpo.val_tasks=256"])
    domains = [get_domain(d) for d in config.domains]
    tasks, val = dpo_tasks(config, domains, None, set())
    assert len(val) == 256 and not {prompt_key(t) for t in tasks} & {prompt_key(t) for t in val}


def test_demonstrations_longer_than_the_window_are_left_out_with_a_warning(
    tokenizer: Any,
) -> None:
    # A long-context domain's reference ran to millions of tokens and SFT took the
    # machine's memory; none fitting at all is an error.
    config = load_config(None, ["sft.num_examples=64", "sft.val_examples=16"])
    domains = [get_domain(d) for d in config.domains]
    whole, _ = sft_demonstrations(config, domains, set(), tokenizer)
    lengths = sorted(len(r.prompt_ids) + len(r.completion_ids) for r in whole)
    window = lengths[len(lengths) // 2]
    warnings: list[str] = []
    train, _ = sft_demonstrations(config, domains, set(), tokenizer, window, warnings.append)
    assert 0 < len(train) < len(whole)
    assert all(len(r.prompt_ids) + len(r.completion_ids) <= window for r in train)
    assert warnings and f"window of {window} tokens" in warnings[0]
    with pytest.raises(ConfigError, match="longer than the model's window"):
        sft_demonstrations(config, domains, set(), tokenizer, lengths[0] - 1)
