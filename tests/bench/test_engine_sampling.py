"""`bench/engine_sampling.py`'s baseline samples as our engine does: temperature 1 over
the whole vocabulary, no top-k cut (`generate` applies top-k 50 unless told not to)."""

from __future__ import annotations

import pytest
from transformers.generation import utils as generation_utils

from posttrain.models import TinyModelSpec, build_tiny_model, build_tokenizer
from tests.bench import load_script


def test_the_baseline_samples_the_full_vocabulary_without_top_k(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = load_script("engine_sampling")
    tok = build_tokenizer()
    model = build_tiny_model(tok, seed=0, spec=TinyModelSpec()).eval()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the baseline cut its sampling to the top k tokens")

    monkeypatch.setattr(generation_utils.TopKLogitsWarper, "__init__", refuse)
    prompts = [[10, 11, 12], [13, 14]]
    assert script.baseline(model, tok, prompts, n=2, max_tokens=3) == 2 * 2 * 3
