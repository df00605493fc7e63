"""Token-exact multi-turn episodes under real chat templates: the sequence trained on
(prompt + sampled + environment tokens) is a prefix of the whole conversation rendered
and encoded at once, for the built-in tokenizer and SmolLM2's; and malformed model
output never crashes an episode."""

from __future__ import annotations

from typing import Any

import pytest

from posttrain.domains import get_domain
from posttrain.engines import Completion, GenerationRequest, ReplayEngine, SamplingParams
from posttrain.rollout.episode import encode, render, run_episodes

PARAMS = SamplingParams(max_tokens=256, temperature=0.0)


def smollm2() -> Any:
    from posttrain.models import smollm2_tokenizer

    return smollm2_tokenizer()


@pytest.mark.parametrize("which", ["tiny", "smollm2"])
def test_a_multi_turn_episode_is_a_prefix_of_its_whole_conversation(
    tokenizer: Any, which: str
) -> None:
    tok = tokenizer if which == "tiny" else smollm2()
    tasks = [get_domain("tools/calculator-v1").generate(seed, 4) for seed in range(3)]
    engine = ReplayEngine(tok)
    for task in tasks:
        engine.add(task.id, get_domain(task.domain).reference(task))
    for [rollout] in run_episodes(tasks, engine, tok, PARAMS, get_domain):
        assert rollout.verdict.passed and len(rollout.turns) == 2
        whole = encode(tok, render(tok, rollout.messages, add_generation_prompt=False))
        sequence = rollout.prompt_ids + rollout.completion_ids
        assert whole[: len(sequence)] == sequence
        # What follows the last sampled token is only the template's own closing text.
        assert len(whole) - len(sequence) <= 2
        first = rollout.turns[0]
        assert rollout.completion_ids[: len(first.token_ids)] == first.token_ids  # as sampled


class Junk:
    """A model whose every turn is one of the malformed outputs below."""

    OUTPUTS = [
        '<tool_call>{"name": "calculator", "arguments": {"expression": </tool_call>',  # bad JSON
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',  # unknown tool
        '<tool_call>{"name": "calculator", "arguments": {"expr": 3}}</tool_call>',  # bad arguments
        "x" * 1_000_000,  # a megabyte of text
        bytes(range(256)).decode("latin-1") + "\x00\ufffd" * 1000,  # binary junk
    ]

    def __init__(self, tokenizer: Any, which: int) -> None:
        self.tokenizer, self.which = tokenizer, which

    def update_weights(self, state_dict: Any) -> None:
        pass

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        text = self.OUTPUTS[self.which] if requests[0].turn == 0 else "no idea"
        ids = self.tokenizer.encode(text[:2000], add_special_tokens=False)
        done = Completion([*ids, self.tokenizer.eos_token_id], [0.0] * (len(ids) + 1), text, "stop")
        return [[done] * r.params.n for r in requests]


@pytest.mark.parametrize("which", range(len(Junk.OUTPUTS)))
def test_malformed_model_output_is_an_observation_or_a_zero_reward_with_a_reason(
    tokenizer: Any, which: int
) -> None:
    task = get_domain("tools/calculator-v1").generate(0, 3)
    [[rollout]] = run_episodes([task], Junk(tokenizer, which), tokenizer, PARAMS, get_domain)
    assert rollout.reward == 0.0 and rollout.verdict.reason
    assert rollout.error is None  # a failure of the answer, not of the run
    if which < 3:  # tool calls that went wrong: the model saw why, and it was counted
        [observation] = rollout.turns[0].observations
        assert observation.content.startswith("error:")
        counted = ("tools/malformed", "tools/unknown_tool", "tools/bad_arguments")[which]
        assert rollout.tool_stats[counted] == 1.0
