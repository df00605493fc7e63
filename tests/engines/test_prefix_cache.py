"""Prefix KV-cache reuse between turns: same tokens and logprobs as re-encoding the history.

Multi-turn conversations are simulated without the episode loop: each turn's prompt is
the previous prompt + the sampled ids + a few "environment" ids, exactly as the episode
loop forms it. A "scrambled" tiny model (weights redrawn large, two layers) makes every
continuation depend on the whole history, so a wrong reused K/V shows in the tokens.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from posttrain.engines import Completion, GenerationRequest, HFEngine, SamplingParams
from posttrain.engines.prefix_cache import PrefixCache, build_prefill, sample_episode
from tests.engines.scramble import scramble

GREEDY = SamplingParams(max_tokens=8, temperature=0.0)


@pytest.fixture
def model(tokenizer: Any) -> Any:
    from posttrain.models.tiny import TinyModelSpec, build_tiny_model

    spec = TinyModelSpec(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64)
    model = build_tiny_model(tokenizer, seed=0, spec=spec)
    scramble(model)
    return model


def env_ids(episode: int, turn: int) -> list[int]:
    """Environment tokens of different lengths per episode and turn (lowercase bytes)."""
    return [97 + (episode * 7 + turn * 3 + k) % 26 for k in range(3 + episode + 2 * turn)]


def converse(
    engine: HFEngine,
    prompts: list[list[int]],
    budgets: list[int],
    turns: int = 4,
    first: SamplingParams | None = None,
) -> list[list[Completion]]:
    """Run episodes `turns` turns; returns, per turn, each episode's completion. With
    `first` (n samples), the first turn is one request branching into n episodes."""
    keys = [f"ep{i}" for i in range(len(prompts))]
    out: list[list[Completion]] = []
    if first is not None:
        [samples] = engine.generate([GenerationRequest(prompts[0], first, episode="group")])
        keys = [sample_episode("group", s, first.n) for s in range(first.n)]
        prompts = [prompts[0]] * first.n
        out.append(samples)
    for _ in range(turns - len(out)):
        if out:  # the previous turn's prompt + its sampled ids + the environment's reply
            prompts = [
                p + c.token_ids + env_ids(i, len(out))
                for i, (p, c) in enumerate(zip(prompts, out[-1], strict=True))
            ]
        temperature = first.temperature if first is not None else 0.0
        requests = [
            GenerationRequest(p, SamplingParams(budgets[i % len(budgets)], temperature), episode=k)
            for i, (p, k) in enumerate(zip(prompts, keys, strict=True))
        ]
        out.append([c[0] for c in engine.generate(requests)])
    return out


def assert_same(reused: list[list[Completion]], encoded: list[list[Completion]]) -> None:
    for turn_a, turn_b in zip(reused, encoded, strict=True):
        for a, b in zip(turn_a, turn_b, strict=True):
            assert a.token_ids == b.token_ids
            assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)


def stats(engine: HFEngine) -> Any:
    assert engine.prefix_cache is not None
    return engine.prefix_cache.stats


def test_one_four_turn_conversation_matches_re_encoding(model: Any, tokenizer: Any) -> None:
    prompt = [list(tokenizer.encode("what is 12+345? think step by step"))]
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    reused = converse(engine, prompt, [8])
    assert_same(reused, converse(HFEngine(model, tokenizer, prefix_cache=False), prompt, [8]))
    assert (stats(engine).hits, stats(engine).misses) == (3, 1)
    assert stats(engine).reused_tokens > stats(engine).prefilled_tokens


def test_a_batch_with_different_prefix_lengths_matches_re_encoding(
    model: Any, tokenizer: Any
) -> None:
    # Budgets differ so rows finish at different steps and leave the batch mid-decode.
    prompts = [list(range(65, 65 + length)) for length in (3, 17, 40, 9)]
    budgets = [1, 2, 12, 5]
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    reused = converse(engine, prompts, budgets)
    assert_same(reused, converse(HFEngine(model, tokenizer, prefix_cache=False), prompts, budgets))
    assert (stats(engine).hits, stats(engine).misses) == (12, 4)


def test_n_samples_on_the_first_turn_continue_as_separate_episodes(
    model: Any, tokenizer: Any
) -> None:
    prompt = [list(tokenizer.encode("tell me a story"))]
    first = SamplingParams(max_tokens=6, temperature=1.0, n=3)
    engine = HFEngine(model, tokenizer, seed=0, prefix_cache=True)
    reused = converse(engine, prompt, [6], first=first)
    plain = HFEngine(model, tokenizer, seed=0, prefix_cache=False)
    assert_same(reused, converse(plain, prompt, [6], first=first))
    assert len({tuple(c.token_ids) for c in reused[0]}) > 1  # the samples really branch
    assert (stats(engine).hits, stats(engine).misses) == (9, 1)


def test_a_prompt_that_does_not_extend_the_kept_ids_is_prefilled_in_full(
    model: Any, tokenizer: Any
) -> None:
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    plain = HFEngine(model, tokenizer, prefix_cache=False)
    engine.generate([GenerationRequest(list(tokenizer.encode("first story")), GREEDY, episode="e")])
    other = list(tokenizer.encode("another history, same episode key"))
    [[got]] = engine.generate([GenerationRequest(other, GREEDY, episode="e")])
    [[want]] = plain.generate([GenerationRequest(other, GREEDY)])
    assert_same([[got]], [[want]])
    assert (stats(engine).hits, stats(engine).misses, stats(engine).reused_tokens) == (0, 2, 0)


def test_a_prompt_diverging_from_the_kept_ids_reuses_their_common_start(
    model: Any, tokenizer: Any
) -> None:
    # As when the last turn's text is re-tokenized into other ids than those sampled.
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    plain = HFEngine(model, tokenizer, prefix_cache=False)
    first = list(tokenizer.encode("what is 12+345?"))
    [[sampled]] = engine.generate([GenerationRequest(first, GREEDY, episode="e")])
    other = [t for t in range(97, 103) if t != sampled.token_ids[0]]  # differs at once
    follow_up = first + other
    [[got]] = engine.generate([GenerationRequest(follow_up, GREEDY, episode="e")])
    [[want]] = plain.generate([GenerationRequest(follow_up, GREEDY)])
    assert_same([[got]], [[want]])
    s = stats(engine)
    assert (s.hits, s.partial_hits, s.misses, s.reused_tokens) == (1, 1, 1, len(first))


def test_common_prefix_counts_the_agreeing_start() -> None:
    from posttrain.engines.prefix_cache import common_prefix

    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3, 4], [1, 2]) == 2
    assert common_prefix([1, 2, 3], [1, 9, 3]) == 1
    assert common_prefix([5], [6]) == 0
    assert common_prefix([], [1]) == 0


def test_eviction_keeps_the_held_tokens_under_the_bound(model: Any, tokenizer: Any) -> None:
    prompts = [list(range(65, 65 + length)) for length in (20, 30, 25)]
    engine = HFEngine(model, tokenizer, prefix_cache=True, prefix_cache_tokens=60)
    reused = converse(engine, prompts, [8], turns=3)
    assert_same(
        reused, converse(HFEngine(model, tokenizer, prefix_cache=False), prompts, [8], turns=3)
    )
    assert stats(engine).evictions > 0
    assert stats(engine).misses > len(prompts)  # evicted episodes fell back to full prefill
    assert stats(engine).held_tokens <= 60
    assert engine.prefix_cache is not None
    assert stats(engine).held_tokens == sum(
        len(e.ids) for e in engine.prefix_cache._entries.values()
    )


def test_release_drops_the_episodes_kept_cache(model: Any, tokenizer: Any) -> None:
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    requests = [GenerationRequest([65, 66, 67], GREEDY, episode=e) for e in ("a", "b")]
    engine.generate(requests)
    assert engine.prefix_cache is not None and len(engine.prefix_cache) == 2
    engine.release(["a"])
    assert "a" not in engine.prefix_cache and "b" in engine.prefix_cache
    assert stats(engine).held_tokens == 3 + GREEDY.max_tokens - 1


def test_requests_without_an_episode_keep_nothing(model: Any, tokenizer: Any) -> None:
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    engine.generate([GenerationRequest([65, 66, 67], GREEDY, key="task")])
    assert engine.prefix_cache is not None and len(engine.prefix_cache) == 0
    assert (stats(engine).hits, stats(engine).misses, stats(engine).prefilled_tokens) == (0, 0, 3)


def test_changed_weights_drop_every_kept_cache(model: Any, tokenizer: Any) -> None:
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    [[done]] = engine.generate([GenerationRequest([65, 66, 67], GREEDY, episode="e")])
    with torch.no_grad():  # what an optimizer step does: an in-place update
        next(model.parameters()).mul_(1.5)
    prompt = [65, 66, 67, *done.token_ids, 100]
    [[got]] = engine.generate([GenerationRequest(prompt, GREEDY, episode="e")])
    [[want]] = HFEngine(model, tokenizer, prefix_cache=False).generate(
        [GenerationRequest(prompt, GREEDY)]
    )
    assert_same([[got]], [[want]])
    assert (stats(engine).invalidations, stats(engine).hits) == (1, 0)


def test_update_weights_clears_the_kept_caches(model: Any, tokenizer: Any) -> None:
    engine = HFEngine(model, tokenizer, prefix_cache=True)
    engine.generate([GenerationRequest([65, 66, 67], GREEDY, episode="e")])
    engine.update_weights(model.state_dict())
    assert engine.prefix_cache is not None and len(engine.prefix_cache) == 0


def test_build_prefill_pads_cached_and_suffix_parts_separately() -> None:
    kv = [(torch.ones(2, 3, 4), torch.ones(2, 3, 4))]  # one layer, 2 heads, 3 tokens, dim 4
    prefill = build_prefill([[1, 2, 3, 4, 5], [7, 8, 9]], [kv, None], 0, torch.device("cpu"))
    assert prefill.ids.tolist() == [[0, 4, 5], [7, 8, 9]]
    assert prefill.mask.tolist() == [[1, 1, 1, 0, 1, 1], [0, 0, 0, 1, 1, 1]]
    assert prefill.positions.tolist() == [[2, 3, 4], [0, 1, 2]]
    assert prefill.cache.layers[0].keys[:, 0, :, 0].tolist() == [[1, 1, 1], [0, 0, 0]]
    assert (prefill.reused_tokens, prefill.prefilled_tokens) == (3, 5)


def test_a_non_positive_token_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        PrefixCache(0)
