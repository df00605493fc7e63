"""KV-cache memory of the engine's models at growing context lengths, full and quantized.

    python bench/kv_cache.py [--threads 1 --new-tokens 16 --tiny 256,512,1024,2048
        --smollm2 1024,2048,4096,8192 --backends fp8,quanto,hqq --check-generate]

For each model (the built-in tiny model with a 4096-position window, untrained, and
SmolLM2-135M-Instruct) and each length, a prompt of exactly that many tokens of
generated English-like text (batch 1, float32) is prefilled once into a
`DynamicCache`; then 16 tokens are decoded greedily (the last one is not fed back, so
the cache ends at length + 15) with each cache:

- full: the `DynamicCache` itself;
- fp8: `QuantizedCache(backend="fp8")` (per-tensor float8_e4m3fn, no extra package);
- int4: `QuantizedCache(backend="quanto", nbits=4)` (optimum-quanto; q_group_size 64,
  residual_length 128, axis 0: the transformers defaults);
- hqq4: `QuantizedCache(backend="hqq", nbits=4)` (hqq; same defaults).

A quantized cache is filled by passing the prefill's key/value states of every layer
to its `update`, which is what the model's own prefill does with it (attention over
the prompt runs in full precision and only the stored states are quantized), so one
prefill serves all caches. `--check-generate` verifies this at each model's shortest
length: `model.generate(ids, cache=QuantizedCache(...), do_sample=False)` (transformers
5.24 names the argument `cache`; `past_key_values` is a deprecated alias) must give
the same tokens as the shared-prefill path.

Per row: `kv_bytes_*` counted from the cache's tensors after decoding
(`posttrain.engines.kv_cache.cache_bytes`: quantized storage, scales and zero points,
plus the full-precision residual), `analytic_bytes` = 2 × layers × kv_heads × head_dim ×
(length + 15) × 4, `agree_*` = positions among the 16 greedy tokens equal to the full
cache's, `prefix_*` = how many of them come before the first difference,
`kv_rel_err_*` = mean over layers and K/V of ||dequantized − original|| / ||original||
for the prompt's states (not timed), `seconds_*` = prefill + quantizing the prompt's
states + 15 decode forwards, and `rss_peak_mb` = the peak RSS of this process and its
children, sampled every 10 ms during the prefill and during each cache's
quantize+decode phase (model weights included; the full prefill cache stays resident
during every phase, and glibc may keep memory freed by an earlier phase). A backend
that fails (not installed, or an error) records its error and null figures. Progress goes to stderr; the last stdout line is a JSON object.

Not guaranteed: agreement on the tiny model means little (an untrained model repeats
one token); timings vary with other jobs on the cores. optimum-quanto compiles its
C++ CPU extension on first use (about 3 minutes on 2 cores, kept in its package dir).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psutil
import torch
from transformers import DynamicCache, QuantizedCache

from posttrain.engines.kv_cache import analytic_kv_bytes, cache_bytes
from posttrain.models import TinyModelSpec, load_policy

BACKENDS = {"fp8": "fp8", "int4": "quanto", "hqq4": "hqq"}  # row key -> transformers backend
NAMES = ("the", "a", "every", "one", "that", "this", "our", "their")
NOUNS = str.split(
    "river farmer window letter garden teacher market village engine story morning bridge "
    "student kitchen mountain doctor train forest painter harbor library road winter child "
    "castle bakery sailor field lamp clock"
)
ADJECTIVES = str.split(
    "old quiet bright small heavy green careful distant warm narrow patient busy simple "
    "strange golden tired"
)
VERBS = str.split(
    "carried found painted watched followed opened mended visited crossed wrote remembered "
    "built cleaned noticed explained"
)
LINKS = ("near", "behind", "across", "under", "beside", "after", "before", "with")
JOINERS = ("and then", "while", "because", "so", "but")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def english_text(words: int, seed: int = 0) -> str:
    """Deterministic English-like prose: simple clauses joined into sentences."""
    rng = random.Random(seed)

    def phrase() -> str:
        return f"{rng.choice(NAMES)} {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"

    out: list[str] = []
    count = 0
    while count < words:
        clause = f"{phrase()} {rng.choice(VERBS)} {phrase()} {rng.choice(LINKS)} {phrase()}"
        if rng.random() < 0.5:
            clause += f" {rng.choice(JOINERS)} {phrase()} {rng.choice(VERBS)} {phrase()}"
        sentence = clause[0].upper() + clause[1:] + "."
        out.append(sentence)
        count += len(sentence.split())
    return " ".join(out)


def prompt_ids(tokenizer: Any, tokens: int) -> torch.Tensor:
    """Exactly `tokens` ids of English-like text, shape [1, tokens]."""
    words = tokens
    while True:
        ids = tokenizer.encode(english_text(words), add_special_tokens=False)
        if len(ids) >= tokens:
            return torch.tensor([ids[:tokens]])
        words *= 2


class RssPeak:
    """Peak RSS (bytes) of this process and its children, sampled by a thread."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.proc = psutil.Process(os.getpid())
        self.peak = 0
        self._phase = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def rss(self) -> int:
        total = self.proc.memory_info().rss
        for child in self.proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:
                continue
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            phase = self._phase
            value = self.rss()
            with self._lock:
                if phase == self._phase:  # not a sample from before a `phase()` reset
                    self.peak = max(self.peak, value)
            time.sleep(self.interval)

    @contextmanager
    def phase(self) -> Iterator[dict[str, float]]:
        """Yields a dict that holds the phase's peak in MiB once the block ends."""
        out: dict[str, float] = {}
        with self._lock:
            self._phase += 1
            self.peak = self.rss()
        try:
            yield out
        finally:
            out["mb"] = round(max(self.peak, self.rss()) / 2**20, 1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def make_cache(key: str, config: Any) -> Any:
    if key == "full":
        return DynamicCache()
    if key == "fp8":
        return QuantizedCache(backend="fp8", config=config)
    return QuantizedCache(backend=BACKENDS[key], config=config, nbits=4)


@torch.inference_mode()
def fill_from(cache: Any, prefilled: Any) -> None:
    """Store the prefill's key/value states in `cache`, as the model's prefill would."""
    for index, layer in enumerate(prefilled.layers):
        cache.update(layer.keys, layer.values, index)


@torch.inference_mode()
def relative_error(cache: Any, prefilled: Any) -> float:
    """Mean over layers and K/V of ||dequantized - original|| / ||original|| (prompt states)."""
    errors = []
    for layer, full in zip(cache.layers, prefilled.layers, strict=True):
        for stored, original in (
            (layer._quantized_keys, full.keys),
            (layer._quantized_values, full.values),
        ):
            restored = layer._dequantize(stored).to(original.dtype)
            errors.append(float((restored - original).norm() / original.norm()))
    return sum(errors) / len(errors)


@torch.inference_mode()
def decode(model: Any, cache: Any, first: int, length: int, new_tokens: int) -> list[int]:
    """Greedy: `first` came from the prefill; feed it and the next ones, one at a time."""
    tokens = [first]
    while len(tokens) < new_tokens:
        position = torch.tensor([[length + len(tokens) - 1]])
        logits = model(
            input_ids=torch.tensor([[tokens[-1]]]), position_ids=position, cache=cache
        ).logits
        tokens.append(int(logits[0, -1].argmax()))
    return tokens


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def probe_backends(config: Any, keys: list[str]) -> dict[str, str | None]:
    """Quantize a small state once per backend (builds quanto's extension); None = works."""
    status: dict[str, str | None] = {}
    text = config.get_text_config(decoder=True)
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    state = torch.randn(1, heads, 256, head_dim)
    for key in keys:
        try:
            cache = make_cache(key, config)
            cache.update(state, state, 0)
            cache.update(state[:, :, :1], state[:, :, :1], 0)
            status[key] = None
        except Exception as exc:  # report what fails, keep the others
            status[key] = error_text(exc)
            log(f"  backend {key} ({BACKENDS[key]}) fails: {status[key]}")
    return status


def bench_model(
    name: str, lengths: list[int], keys: list[str], args: argparse.Namespace, rss: RssPeak
) -> dict[str, Any]:
    log(f"loading {name}")
    spec = TinyModelSpec(max_positions=4096) if name == "tiny" else None
    policy = load_policy(name, spec=spec)
    model, tokenizer = policy.model.eval(), policy.tokenizer
    config = model.config
    text = config.get_text_config(decoder=True)
    errors = probe_backends(config, keys)
    rows: list[dict[str, Any]] = []
    checks: dict[str, Any] = {}
    for length in lengths:
        ids = prompt_ids(tokenizer, length)
        prefilled = DynamicCache()
        with rss.phase() as prefill_rss, torch.inference_mode():
            start = time.perf_counter()
            logits = model(input_ids=ids, cache=prefilled, logits_to_keep=1).logits
            prefill_s = time.perf_counter() - start
        first = int(logits[0, -1].argmax())
        log(f"{name} {length}: prefill {prefill_s:.1f} s")
        cache_tokens = length + args.new_tokens - 1
        row: dict[str, Any] = {
            "tokens": length,
            "cache_tokens": cache_tokens,
            "analytic_bytes": analytic_kv_bytes(config, cache_tokens),
            "seconds_prefill": round(prefill_s, 2),
        }
        peaks = {"prefill": prefill_rss["mb"]}
        outputs: dict[str, list[int]] = {}
        for key in [*keys, "full"]:  # full last: it decodes into the shared prefill cache
            if errors.get(key):
                row[f"kv_bytes_{key}"] = row[f"agree_{key}"] = row[f"seconds_{key}"] = None
                continue
            try:
                with rss.phase() as phase_rss:
                    start = time.perf_counter()
                    if key == "full":
                        cache = prefilled
                    else:
                        cache = make_cache(key, config)
                        fill_from(cache, prefilled)
                        quantized_at = time.perf_counter()
                        row[f"kv_rel_err_{key}"] = round(relative_error(cache, prefilled), 4)
                        start += time.perf_counter() - quantized_at  # not timed
                    outputs[key] = decode(model, cache, first, length, args.new_tokens)
                    seconds = time.perf_counter() - start
                assert cache.get_seq_length() == cache_tokens, cache.get_seq_length()
                row[f"kv_bytes_{key}"] = cache_bytes(cache)
                row[f"seconds_{key}"] = round(prefill_s + seconds, 2)
                peaks[key] = phase_rss["mb"]
                del cache
            except Exception as exc:
                errors[key] = error_text(exc)
                log(f"  {key} fails at {length}: {errors[key]}")
                row[f"kv_bytes_{key}"] = row[f"agree_{key}"] = row[f"seconds_{key}"] = None
            gc.collect()
        for key in keys:
            if key in outputs:
                pairs = list(zip(outputs[key], outputs["full"], strict=True))
                row[f"agree_{key}"] = sum(a == b for a, b in pairs)
                row[f"prefix_{key}"] = next(
                    (i for i, (a, b) in enumerate(pairs) if a != b), len(pairs)
                )
        row["rss_peak_mb"] = peaks
        log(
            f"  bytes full {row['kv_bytes_full']} analytic {row['analytic_bytes']} "
            + " ".join(f"{k} {row.get(f'kv_bytes_{k}')}/{row.get(f'agree_{k}')}" for k in keys)
        )
        if args.check_generate and length == lengths[0]:
            checks = check_generate(model, tokenizer, ids, outputs, keys, errors, args)
        rows.append(row)
        del prefilled
        gc.collect()
    return {
        "model": name,
        "layers": text.num_hidden_layers,
        "kv_heads": getattr(text, "num_key_value_heads", None) or text.num_attention_heads,
        "head_dim": getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads,
        "max_positions": text.max_position_embeddings,
        "backend_errors": {k: v for k, v in errors.items() if v},
        "generate_check": checks,
        "rows": rows,
    }


def check_generate(
    model: Any,
    tokenizer: Any,
    ids: torch.Tensor,
    outputs: dict[str, list[int]],
    keys: list[str],
    errors: dict[str, str | None],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """`model.generate(cache=...)` against the shared-prefill path, per cache."""
    checks: dict[str, Any] = {"tokens": int(ids.shape[1])}
    for key in ["full", *keys]:
        if errors.get(key) or key not in outputs:
            continue
        cache = make_cache(key, model.config)
        with torch.inference_mode():
            out = model.generate(
                ids,
                cache=cache,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
        same = out[0, ids.shape[1] :].tolist() == outputs[key]
        checks[key] = {"same_tokens": same, "kv_bytes": cache_bytes(cache)}
        log(f"  generate(cache={key}) same tokens as shared prefill: {same}")
    return checks


def parse_lengths(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--tiny", type=parse_lengths, default=[256, 512, 1024, 2048])
    parser.add_argument("--smollm2", type=parse_lengths, default=[1024, 2048, 4096, 8192])
    parser.add_argument("--backends", default="fp8,quanto,hqq", help="of fp8, quanto, hqq")
    parser.add_argument(
        "--check-generate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compare with model.generate(cache=...) at each model's shortest length",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    wanted = args.backends.split(",")
    keys = [key for key, backend in BACKENDS.items() if backend in wanted]
    rss = RssPeak()
    start = time.perf_counter()
    models = []
    for name, lengths in (("tiny", args.tiny), ("smollm2-135m", args.smollm2)):
        if lengths:
            models.append(bench_model(name, lengths, keys, args, rss))
    rss.close()
    wall = time.perf_counter() - start

    for result in models:
        print(f"{result['model']}  (errors: {result['backend_errors'] or 'none'})")
        print("tokens  full MiB  analytic MiB  " + "  ".join(f"{k} MiB (agree)" for k in keys))
        for row in result["rows"]:
            cells = [
                f"{row[f'kv_bytes_{k}'] / 2**20:.2f} ({row[f'agree_{k}']})"
                if row[f"kv_bytes_{k}"] is not None
                else "failed"
                for k in keys
            ]
            full = row["kv_bytes_full"]
            print(
                f"{row['tokens']:>6}  {full / 2**20:8.2f}  {row['analytic_bytes'] / 2**20:12.2f}  "
                + "  ".join(cells)
            )
    summary = {
        "bench": "kv_cache",
        "torch_threads": torch.get_num_threads(),
        "settings": {
            "batch": 1,
            "dtype": "float32",
            "new_tokens": args.new_tokens,
            "greedy": True,
            "prompt": "generated English-like text, truncated to the length in tokens",
            "backends": {k: BACKENDS[k] for k in keys},
            "group_wise": {"nbits": 4, "q_group_size": 64, "residual_length": 128, "axis": 0},
            "shared_prefill": True,
            "versions": versions(),
        },
        "wall_seconds": round(wall, 1),
        "models": models,
    }
    print(json.dumps(summary))


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for package in ("torch", "transformers", "optimum-quanto", "hqq"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = None
    return out


if __name__ == "__main__":
    main()
