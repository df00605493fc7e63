"""HFEngine: batched KV-cache decoding on a tiny model, checked against plain forward passes.

Two models are used: a "scrambled" tiny model whose weights are redrawn large, so its
greedy continuation depends on the whole prompt (a fresh tiny model only repeats the
last token), and a "chained" one whose logits are pushed by a forward hook to follow
a fixed chain of tokens, b → c → d → e → <|end|>, so token budgets and stops are exact.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from posttrain.engines import Completion, GenerationRequest, HFEngine, SamplingParams
from tests.engines.scramble import scramble

GREEDY = SamplingParams(max_tokens=10, temperature=0.0)
PROMPTS = ["a", "hello world, how are you", "12+345"]


def encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def greedy_ids(engine: HFEngine, prompts: list[list[int]]) -> list[list[int]]:
    results = engine.generate([GenerationRequest(p, GREEDY) for p in prompts])
    return [completions[0].token_ids for completions in results]


@pytest.fixture
def scrambled_model(tiny_model: Any) -> Any:
    scramble(tiny_model)
    return tiny_model


@pytest.fixture
def chained_model(tiny_model: Any, tokenizer: Any) -> Any:
    chain = {ord(a): ord(b) for a, b in zip("abcd", "bcde", strict=True)}
    chain[ord("e")] = tokenizer.eos_token_id
    successor = torch.full((len(tokenizer),), -1, dtype=torch.long)
    for token, nxt in chain.items():
        successor[token] = nxt

    def push_along_chain(module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> Any:
        logits = output.logits  # [B, K, V]: the last K positions
        nxt = successor[kwargs["input_ids"][:, -logits.shape[1] :]]  # [B, K]
        bonus = torch.zeros_like(logits).scatter(-1, nxt.clamp(min=0)[..., None], 100.0)
        output.logits = logits + bonus * (nxt >= 0)[..., None]
        return output

    tiny_model.register_forward_hook(push_along_chain, with_kwargs=True)
    return tiny_model


def test_greedy_decoding_is_deterministic(scrambled_model: Any, tokenizer: Any) -> None:
    prompts = [encode(tokenizer, p) for p in PROMPTS]
    first = greedy_ids(HFEngine(scrambled_model, tokenizer, seed=0), prompts)
    again = greedy_ids(HFEngine(scrambled_model, tokenizer, seed=0), prompts)
    other_seed = greedy_ids(HFEngine(scrambled_model, tokenizer, seed=123), prompts)
    assert first == again == other_seed


def test_each_request_gets_n_completions(tiny_model: Any, tokenizer: Any) -> None:
    engine = HFEngine(tiny_model, tokenizer)
    requests = [
        GenerationRequest(encode(tokenizer, "abc"), SamplingParams(max_tokens=6, n=3)),
        GenerationRequest(encode(tokenizer, "xy"), SamplingParams(max_tokens=6, n=2)),
    ]
    results = engine.generate(requests)
    assert [len(r) for r in results] == [3, 2]
    samples = [tuple(c.token_ids) for c in results[0]]
    assert len(set(samples)) == 3  # independent samples, not one sample copied


def test_each_request_keeps_its_own_token_budget(chained_model: Any, tokenizer: Any) -> None:
    engine = HFEngine(chained_model, tokenizer)
    prompt = encode(tokenizer, "a")
    results = engine.generate(
        [GenerationRequest(prompt, SamplingParams(max_tokens=m, temperature=0.0)) for m in (1, 3)]
    )
    one, three = results[0][0], results[1][0]
    assert (one.text, one.finish_reason, len(one.token_ids)) == ("b", "length", 1)
    assert (three.text, three.finish_reason, len(three.token_ids)) == ("bcd", "length", 3)


def test_eos_ends_with_stop_and_is_left_out_of_the_text(chained_model: Any, tokenizer: Any) -> None:
    engine = HFEngine(chained_model, tokenizer)
    [[completion]] = engine.generate([GenerationRequest(encode(tokenizer, "a"), GREEDY)])
    assert completion.finish_reason == "stop"
    assert completion.token_ids == [*encode(tokenizer, "bcde"), tokenizer.eos_token_id]
    assert completion.text == "bcde"
    assert len(completion.logprobs) == len(completion.token_ids)


def test_stop_string_ends_generation_where_it_appears(chained_model: Any, tokenizer: Any) -> None:
    engine = HFEngine(chained_model, tokenizer)
    params = SamplingParams(max_tokens=10, temperature=0.0, stop=("cd",))
    [[completion]] = engine.generate([GenerationRequest(encode(tokenizer, "a"), params)])
    assert (completion.text, completion.finish_reason) == ("bcd", "stop")


def test_greedy_logprobs_equal_a_plain_forward_pass(scrambled_model: Any, tokenizer: Any) -> None:
    engine = HFEngine(scrambled_model, tokenizer)
    prompts = [encode(tokenizer, p) for p in PROMPTS]
    results = engine.generate([GenerationRequest(p, GREEDY) for p in prompts])
    for prompt, [completion] in zip(prompts, results, strict=True):
        expected = forward_logprobs(scrambled_model, prompt, completion)
        assert torch.allclose(torch.tensor(completion.logprobs), expected, atol=1e-4)


def test_greedy_tokens_equal_a_plain_argmax_loop(scrambled_model: Any, tokenizer: Any) -> None:
    prompts = [encode(tokenizer, p) for p in PROMPTS]  # batched: different lengths, padded
    params = SamplingParams(max_tokens=10, temperature=0.0, n=2)  # two rows per prompt
    results = HFEngine(scrambled_model, tokenizer).generate(
        [GenerationRequest(p, params) for p in prompts]
    )
    for prompt, completions in zip(prompts, results, strict=True):
        ids = list(prompt)
        with torch.no_grad():
            while len(ids) - len(prompt) < 10 and ids[-1] != tokenizer.eos_token_id:
                logits = scrambled_model(input_ids=torch.tensor([ids])).logits  # [1, T, V]
                ids.append(int(logits[0, -1].argmax()))
        assert all(c.token_ids == ids[len(prompt) :] for c in completions)


def test_sampled_logprobs_are_under_the_tempered_distribution(
    scrambled_model: Any, tokenizer: Any
) -> None:
    engine = HFEngine(scrambled_model, tokenizer)
    prompt = encode(tokenizer, "hello")
    params = SamplingParams(max_tokens=8, temperature=0.5)
    [[completion]] = engine.generate([GenerationRequest(prompt, params)])
    expected = forward_logprobs(scrambled_model, prompt, completion, temperature=0.5)
    assert torch.allclose(torch.tensor(completion.logprobs), expected, atol=1e-4)


def test_top_p_does_not_renormalize_the_reported_logprobs(
    scrambled_model: Any, tokenizer: Any
) -> None:
    engine = HFEngine(scrambled_model, tokenizer)
    prompt = encode(tokenizer, "hello")
    params = SamplingParams(max_tokens=8, temperature=0.7, top_p=0.5)
    [[completion]] = engine.generate([GenerationRequest(prompt, params)])
    expected = forward_logprobs(scrambled_model, prompt, completion, temperature=0.7)
    assert torch.allclose(torch.tensor(completion.logprobs), expected, atol=1e-4)


def test_a_tiny_positive_temperature_decodes_greedily(scrambled_model: Any, tokenizer: Any) -> None:
    # logits / 1e-40 overflow float32 to inf (NaN after the softmax): such a row is greedy.
    engine = HFEngine(scrambled_model, tokenizer)
    prompt = encode(tokenizer, "hello")
    [[greedy]] = engine.generate([GenerationRequest(prompt, GREEDY)])
    for temperature in (1e-40, 1e-6):
        params = SamplingParams(max_tokens=10, temperature=temperature)
        [[tiny]] = engine.generate([GenerationRequest(prompt, params)])
        assert tiny.token_ids == greedy.token_ids
        assert torch.allclose(torch.tensor(tiny.logprobs), torch.tensor(greedy.logprobs))


def test_mixed_prompt_lengths_batch_like_one_at_a_time(
    scrambled_model: Any, tokenizer: Any
) -> None:
    engine = HFEngine(scrambled_model, tokenizer)
    prompts = [encode(tokenizer, p) for p in PROMPTS]
    batched = greedy_ids(engine, prompts)
    alone = [greedy_ids(engine, [p])[0] for p in prompts]
    assert batched == alone


def test_requests_split_over_row_limited_chunks_match_one_batch(
    scrambled_model: Any, tokenizer: Any
) -> None:
    prompts = [encode(tokenizer, p) for p in PROMPTS]
    whole = greedy_ids(HFEngine(scrambled_model, tokenizer), prompts)
    chunked = greedy_ids(HFEngine(scrambled_model, tokenizer, max_batch_rows=1), prompts)
    assert chunked == whole


def test_a_tiny_top_p_samples_the_greedy_token(scrambled_model: Any, tokenizer: Any) -> None:
    engine = HFEngine(scrambled_model, tokenizer)
    prompt = encode(tokenizer, "hello")
    params = SamplingParams(max_tokens=10, temperature=1.0, top_p=1e-6, n=4)
    [samples] = engine.generate([GenerationRequest(prompt, params)])
    greedy = greedy_ids(engine, [prompt])[0]
    assert all(s.token_ids == greedy for s in samples)


def test_a_stop_string_of_multibyte_characters_is_found(tiny_model: Any, tokenizer: Any) -> None:
    # The byte-level tokenizer spends 3 tokens on each of these characters.
    engine = HFEngine(tiny_model, tokenizer)
    tokens = encode(tokenizer, "ok: 日本語")
    assert engine._hit_stop_string(tokens, ("日本語",))
    assert not engine._hit_stop_string(tokens, ("日本人",))


def test_an_empty_prompt_is_refused(tiny_model: Any, tokenizer: Any) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        HFEngine(tiny_model, tokenizer).generate([GenerationRequest([], GREEDY)])


@pytest.mark.parametrize("bad", [-1, "vocab"])
def test_a_token_id_outside_the_vocabulary_is_refused_naming_the_request_and_the_id(
    tiny_model: Any, tokenizer: Any, bad: int | str
) -> None:
    vocab = tiny_model.get_input_embeddings().num_embeddings
    bad_id = vocab if bad == "vocab" else int(bad)
    requests = [GenerationRequest([1, 2], GREEDY), GenerationRequest([1, bad_id, 2], GREEDY)]
    with pytest.raises(ValueError, match=rf"request 1 holds token id {bad_id}, outside"):
        HFEngine(tiny_model, tokenizer).generate(requests)


def test_generation_leaves_the_model_in_training_mode(tiny_model: Any, tokenizer: Any) -> None:
    tiny_model.train()
    HFEngine(tiny_model, tokenizer).generate([GenerationRequest(encode(tokenizer, "a"), GREEDY)])
    assert tiny_model.training


def test_on_token_hears_each_completions_tokens_in_order(
    scrambled_model: Any, tokenizer: Any
) -> None:
    engine = HFEngine(scrambled_model, tokenizer, max_batch_rows=3)  # two chunks: 2 + 2 rows
    params = SamplingParams(max_tokens=6, temperature=1.0, n=2)
    requests = [GenerationRequest(encode(tokenizer, p), params) for p in ("hello", "12+345")]
    heard: dict[tuple[int, int], list[tuple[int, float]]] = {}

    def on_token(request: int, sample: int, token: int, logprob: float) -> None:
        heard.setdefault((request, sample), []).append((token, logprob))

    results = engine.generate(requests, on_token=on_token)
    expected = {
        (r, s): list(zip(c.token_ids, c.logprobs, strict=True))
        for r, completions in enumerate(results)
        for s, c in enumerate(completions)
    }
    assert heard == expected
    assert sorted(heard) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def forward_logprobs(
    model: Any, prompt: list[int], completion: Completion, temperature: float = 1.0
) -> torch.Tensor:
    """log p(completion token | everything before it) from one unpadded forward pass."""
    ids = torch.tensor([prompt + completion.token_ids])  # [1, P + C]
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1]  # [C, V]
    logprobs = torch.log_softmax(logits / temperature, dim=-1)
    return logprobs.gather(-1, torch.tensor(completion.token_ids)[:, None]).squeeze(-1)
