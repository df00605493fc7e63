"""Batched sampling with a KV cache on a transformers causal LM (the default engine).

Prompts are left-padded into one batch and prefilled once; each prompt's cache is
then repeated for its `n` samples, so samples share the prefill (from a padded prompt
width of `SHARED_PREFIX_MIN_TOKENS` tokens on, the samples read the prompt's K/V in
place instead: `posttrain.engines.shared_prefix_attention`). Decoding runs token
by token with per-row temperature, top-p, token budget and stop strings; finished
rows are dropped from the batch once they are half of it or more. Returned logprobs
are those of the sampled tokens under the temperature-scaled softmax, before any top-p
cut (the quantity a trainer's forward computes).

With `prefix_cache=True` (the default), a request that names its `episode` keeps
its KV cache after generation, and the episode's next request, whose prompt extends
the kept tokens, prefills only the new suffix (see `posttrain.engines.prefix_cache`);
`release(episodes)` drops kept caches when episodes end.

`generate(requests, on_token=fn)` also reports each token as soon as it is sampled,
for streaming: `fn(request_index, sample_index, token_id, logprob)`, where
`request_index` is the request's position in `requests` and `sample_index` the
sample's among that request's `n`. The callback runs on the generating thread,
inside the decode loop: it should be quick, and an exception it raises ends the
whole `generate` call (the way to abandon a generation nobody reads any more).

Not guaranteed: bitwise equality with a training forward pass (batched, padded
attention rounds differently), or identical samples across batch compositions.
`on_token` hears token ids, not text: every sampled token, end-of-turn token
included, exactly the `Completion.token_ids` to come; decoding them and cutting at
stop strings is the caller's business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from typing import Any

import torch
from transformers import DynamicCache, PreTrainedModel

from posttrain.engines.base import Completion, GenerationRequest, SamplingParams
from posttrain.engines.growing_cache import GrowingCache
from posttrain.engines.prefix_cache import PrefixCache, build_prefill, sample_episode
from posttrain.engines.sampling import nucleus, sample_from
from posttrain.engines.shared_prefix_attention import (
    SHARED_PREFIX_MIN_TOKENS,
    SharedPrefixCache,
    shared_prefix_decoding,
    supports_shared_prefix,
)
from posttrain.types import FinishReason

# on_token(request_index, sample_index, token_id, logprob), called as each token is sampled.
TokenCallback = Callable[[int, int, int, float], None]


class HFEngine:
    """Generation on an in-process transformers model (shared with the trainer)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: object,
        max_batch_rows: int = 128,
        seed: int = 0,
        prefix_cache: bool = True,
        prefix_cache_tokens: int = 65_536,
        growing_cache: bool = True,
        shared_prefix: bool = True,
    ) -> None:
        """`prefix_cache`: keep the KV cache of requests that name an `episode` for that
        episode's next turn; `prefix_cache_tokens`: the most tokens kept, over all episodes;
        `growing_cache`: decode into `GrowingCache` (in-place appends) rather than
        transformers' `DynamicCache` (a `torch.cat` of the whole cache per step);
        `shared_prefix`: when a batch's prompts are padded to at least
        `SHARED_PREFIX_MIN_TOKENS` tokens and some have several samples, the rows read
        their prompt's K/V in place (`shared_prefix_attention`; only with `growing_cache`
        and for the models `supports_shared_prefix` accepts)."""
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows
        self.generator = torch.Generator().manual_seed(seed)
        eos = {getattr(tokenizer, "eos_token_id", None)}
        gen_eos = getattr(model.generation_config, "eos_token_id", None)
        eos |= set(gen_eos) if isinstance(gen_eos, list) else {gen_eos}
        self.stop_ids = sorted(i for i in eos if i is not None)
        self.pad_id = getattr(tokenizer, "pad_token_id", None) or self.stop_ids[0]
        self.prefix_cache = PrefixCache(prefix_cache_tokens) if prefix_cache else None
        self.cache_class = GrowingCache if growing_cache else DynamicCache
        # The shared path appends the rows' own tokens in place (a GrowingCache).
        self.shared_prefix = shared_prefix and growing_cache and supports_shared_prefix(model)

    def update_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        self.model.load_state_dict(state_dict)
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    def release(self, episodes: Iterable[str]) -> None:
        """Drop the kept KV caches of `episodes` (ended episodes; unknown keys are ignored)."""
        if self.prefix_cache is not None:
            self.prefix_cache.release(episodes)

    def generate(
        self, requests: list[GenerationRequest], on_token: TokenCallback | None = None
    ) -> list[list[Completion]]:
        """`n` completions per request; `on_token`, when given, hears each token as it is
        sampled (see the module docstring)."""
        self._check_prompts(requests)
        if self.prefix_cache is not None:
            self.prefix_cache.check_weights(self.model)  # a trainer step makes kept K/V stale
        out: list[list[Completion]] = []
        for chunk in self._chunks(requests):
            out.extend(self._generate_chunk(chunk, on_token, first_index=len(out)))
        return out

    def _check_prompts(self, requests: list[GenerationRequest]) -> None:
        """ValueError naming the request of an empty prompt or of a token id the model's
        embedding has no row for (the model would only say "index out of range")."""
        embeddings: Any = self.model.get_input_embeddings()
        vocab = int(embeddings.num_embeddings)
        for i, r in enumerate(requests):
            if not r.prompt_ids:
                raise ValueError(f"GenerationRequest.prompt_ids of request {i} must not be empty")
            low, high = min(r.prompt_ids), max(r.prompt_ids)
            if low < 0 or high >= vocab:
                bad = low if low < 0 else high
                raise ValueError(
                    f"GenerationRequest.prompt_ids of request {i} holds token id {bad}, "
                    f"outside the model's vocabulary [0, {vocab})"
                )

    def _chunks(self, requests: list[GenerationRequest]) -> Iterator[list[GenerationRequest]]:
        chunk: list[GenerationRequest] = []
        rows = 0
        for r in requests:
            if chunk and rows + r.params.n > self.max_batch_rows:
                yield chunk
                chunk, rows = [], 0
            chunk.append(r)
            rows += r.params.n
        if chunk:
            yield chunk

    @torch.inference_mode()
    def _generate_chunk(
        self, requests: list[GenerationRequest], on_token: TokenCallback | None, first_index: int
    ) -> list[list[Completion]]:
        model = self.model
        was_training = model.training
        model.eval()
        try:
            return self._decode(requests, on_token, first_index)
        finally:
            model.train(was_training)

    def _decode(
        self, requests: list[GenerationRequest], on_token: TokenCallback | None, first_index: int
    ) -> list[list[Completion]]:
        """Generate one chunk; `first_index` is its first request's index in the whole
        call, so that `on_token` hears request indices of the call, not of the chunk."""
        prompts = [r.prompt_ids for r in requests]  # checked by `generate`
        kept = self.prefix_cache
        reused = [
            kept.take(r.episode, r.prompt_ids) if kept is not None else None for r in requests
        ]
        device = next(self.model.parameters()).device
        prefill = build_prefill(prompts, reused, self.pad_id, device, self.cache_class)
        if kept is not None:
            kept.stats.prefilled_tokens += prefill.prefilled_tokens
            kept.stats.reused_tokens += prefill.reused_tokens
        cache, mask = prefill.cache, prefill.mask  # mask: [P, L], reused columns included
        logits = self.model(
            input_ids=prefill.ids,
            attention_mask=mask,
            position_ids=prefill.positions,
            cache=cache,
            logits_to_keep=1,
        ).logits[:, -1, :]  # [P, V]
        del prefill  # its cache is `cache` now: nothing else may keep the buffers alive

        # One row per sample: repeat each prompt's cache n times (shared prefill).
        owner = torch.tensor(
            [i for i, r in enumerate(requests) for _ in range(r.params.n)], device=device
        )
        # Decided per chunk: its padded prompt width and whether any prompt has samples.
        shared = (
            self.shared_prefix
            and len(owner) > len(requests)
            and mask.shape[-1] >= SHARED_PREFIX_MIN_TOKENS
        )
        if shared:  # the rows read their prompt's K/V where the prefill left it
            cache = SharedPrefixCache(cache, owner, mask)
        else:
            cache.batch_select_indices(owner)
        logits, mask = logits[owner], mask[owner]  # [R, V], [R, L]
        next_pos = mask.sum(-1)  # [R]
        params = [requests[i].params for i in owner.tolist()]
        temps = torch.tensor([p.softmax_temperature for p in params], device=device)
        greedy = torch.tensor([p.greedy for p in params], device=device)
        top_p = torch.tensor([p.top_p for p in params], device=device)
        budget = [p.max_tokens for p in params]
        owners = owner.tolist()
        call_index = [first_index + i for i in owners]  # row -> request index in the call
        sample_of = [s for r in requests for s in range(r.params.n)]  # row -> sample index
        episodes = [requests[i].episode for i in owners]
        keep_as = [  # row -> the key its KV cache is kept under, None: not kept
            sample_episode(e, s, requests[i].params.n)
            if kept is not None and e is not None
            else None
            for e, s, i in zip(episodes, sample_of, owners, strict=True)
        ]

        def keep_kv(active: list[int], mask: torch.Tensor, leaving: list[int]) -> None:
            """Keep the K/V of the batch slots `leaving` (their rows are done): prompt +
            sampled tokens but the last, which a row never feeds while it is active."""
            if kept is not None:
                done = [active[s] for s in leaving]
                covered = [prompts[owners[r]] + tokens[r][:-1] for r in done]
                kept.keep_rows(cache, mask, leaving, [keep_as[r] for r in done], covered)

        rows = len(params)
        tokens: list[list[int]] = [[] for _ in range(rows)]
        logps: list[list[float]] = [[] for _ in range(rows)]
        reasons: list[FinishReason | None] = [None] * rows
        active = list(range(rows))  # batch slot -> row
        stop_ids = torch.tensor(self.stop_ids, device=device)
        step = 0
        while active:
            slot_temps, slot_greedy, slot_top_p = temps[active], greedy[active], top_p[active]
            logprobs = torch.log_softmax(logits / slot_temps[:, None], dim=-1)  # [A, V]
            chosen = self._sample(logprobs, slot_greedy, slot_top_p)  # [A]
            chosen_lp = logprobs.gather(-1, chosen[:, None]).squeeze(-1)  # [A]
            is_stop = torch.isin(chosen, stop_ids).tolist()
            step += 1
            # One conversion per step: indexing tensors per row costs more than the model
            # on small batches.
            step_tokens, step_logps = chosen.tolist(), chosen_lp.tolist()
            for slot, row in enumerate(active):
                if reasons[row] is not None:  # finished earlier, still in the batch
                    continue
                token, logprob = step_tokens[slot], step_logps[slot]
                tokens[row].append(token)
                logps[row].append(logprob)
                if on_token is not None:
                    on_token(call_index[row], sample_of[row], token, logprob)
                if is_stop[slot] or self._hit_stop_string(tokens[row], params[row].stop):
                    reasons[row] = "stop"
                elif step >= budget[row]:
                    reasons[row] = "length"
            keep = [s for s, row in enumerate(active) if reasons[row] is None]
            if not keep:
                break
            prune = len(keep) <= len(active) // 2  # drop finished rows once they are half or more
            if prune:
                keep_kv(
                    active, mask, [s for s, row in enumerate(active) if reasons[row] is not None]
                )
            feed = chosen[:, None]  # [A, 1]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=-1)
            pos = next_pos[:, None]
            if prune:
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                feed, mask, pos, next_pos = feed[index], mask[index], pos[index], next_pos[index]
                active = [active[s] for s in keep]
            with (
                shared_prefix_decoding(self.model, cache)
                if isinstance(cache, SharedPrefixCache)
                else nullcontext()
            ):
                logits = self.model(
                    input_ids=feed, attention_mask=mask, position_ids=pos, cache=cache
                ).logits[:, -1, :]
            next_pos = next_pos + 1
        keep_kv(active, mask, list(range(len(active))))

        results: list[list[Completion]] = [[] for _ in requests]
        for row, req_index in enumerate(owners):
            reason = reasons[row] or "length"
            body = (
                tokens[row][:-1]
                if tokens[row] and tokens[row][-1] in self.stop_ids
                else tokens[row]
            )
            text = self.tokenizer.decode(body, skip_special_tokens=False)  # type: ignore[attr-defined]
            results[req_index].append(Completion(tokens[row], logps[row], text, reason))
        return results

    def _sample(
        self, logprobs: torch.Tensor, greedy: torch.Tensor, top_p: torch.Tensor
    ) -> torch.Tensor:
        """Sample one token per row from `logprobs` [A, V], nucleus-filtered per row
        (`engines/sampling.py`)."""
        sampled = sample_from(nucleus(logprobs.exp(), top_p), self.generator)
        return torch.where(greedy, logprobs.argmax(-1), sampled)

    def _hit_stop_string(self, tokens: list[int], stop: tuple[str, ...]) -> bool:
        if not stop:
            return False
        # Every token decodes to at least one byte: a window of the stop strings' byte
        # length holds them even when each character takes several byte tokens.
        longest = max(len(s.encode()) for s in stop)
        tail = self.tokenizer.decode(tokens[-(longest + 4) :], skip_special_tokens=False)  # type: ignore[attr-defined]
        return any(s in tail for s in stop)


def sampling_for_eval(max_tokens: int) -> SamplingParams:
    """Greedy decoding, the setting every evaluation uses."""
    return SamplingParams(max_tokens=max_tokens, temperature=0.0, n=1)
