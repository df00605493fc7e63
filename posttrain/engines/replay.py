"""The replay engine: plays known assistant turns through the Engine interface.

It is the scripted policy used by domain checks, tests and benchmarks: given a
script per episode key (normally a domain's `Reference`), it returns turn `k` of
that script, tokenized and closed with the end-of-turn token, with logprobs 0.
A turn past the end of the script comes back empty.
"""

from __future__ import annotations

import torch

from posttrain.engines.base import Completion, GenerationRequest
from posttrain.types import Reference


class ReplayEngine:
    def __init__(self, tokenizer: object, scripts: dict[str, list[str]] | None = None) -> None:
        self.tokenizer = tokenizer
        self.scripts: dict[str, list[str]] = dict(scripts or {})
        self.eos_id: int = tokenizer.eos_token_id  # type: ignore[attr-defined]

    def add(self, key: str, reference: Reference) -> None:
        """Play `reference`'s assistant turns for the episode keyed `key`."""
        self.scripts[key] = [m.content for m in reference.turns]

    def update_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """A script has no weights; nothing to update."""

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        out = []
        for r in requests:
            script = self.scripts.get(r.key)
            if script is None:
                raise KeyError(f"replay engine has no script for episode key {r.key!r}")
            text = script[r.turn] if r.turn < len(script) else ""
            ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.eos_id]  # type: ignore[attr-defined]
            completion = Completion(ids, [0.0] * len(ids), text, "stop")
            out.append([completion] * r.params.n)
        return out
