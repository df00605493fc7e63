"""HFEngine on a CUDA model: every tensor it builds lives on the model's device, so
greedy ids equal the CPU engine's and sampled logprobs equal a CUDA forward's.
Skipped where no GPU is present (CI here); `make test-all` runs it on a GPU machine."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
from tests.engines.test_hf import PROMPTS, encode, forward_logprobs, greedy_ids

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_a_cuda_model_samples_what_the_cpu_one_does(tiny_model: Any, tokenizer: Any) -> None:
    prompts = [encode(tokenizer, p) for p in PROMPTS]
    cuda_model = copy.deepcopy(tiny_model).cuda()
    on_cpu = greedy_ids(HFEngine(tiny_model, tokenizer), prompts)
    on_gpu = greedy_ids(HFEngine(cuda_model, tokenizer), prompts)
    assert on_gpu == on_cpu

    engine = HFEngine(cuda_model, tokenizer)
    params = SamplingParams(max_tokens=12, temperature=0.8, top_p=0.9, n=3, stop=("z",))
    first, second = engine.generate([GenerationRequest(p, params) for p in prompts[:2]])
    for prompt, completions in ((prompts[0], first), (prompts[1], second)):
        for c in completions:
            expected = forward_logprobs(tiny_model, prompt, c, temperature=0.8)  # on the CPU
            assert torch.allclose(torch.tensor(c.logprobs), expected, atol=1e-3)
