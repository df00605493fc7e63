"""Evaluate any model on the domains it could train on: behind `posttrain eval MODEL`.

    spec = EvalSpec(model="smollm2-135m", domains=["arith"], n=50, k=4)
    doc = run_eval(spec)          # a results document (`posttrain.eval.results`)

MODEL is `tiny` (the built-in model, freshly initialised), `smollm2-135m`, a local
Hugging Face model directory, a run directory (its latest stage checkpoint, and by
default the run's own domains, held-out seeds, difficulties and token budget), or
`openai:URL[#model]` for any OpenAI-compatible server (API key from
`$OPENAI_API_KEY`, or the variable `api_key_env` names).

Domain selectors (`domains`): a domain id (`arith/addition-v1`, also `id@MIN-MAX` span
variants), a family (`arith`), or an axis filter (`modality=table`); ids and families
add up, axis filters then narrow the set. Tasks are the held-out tasks of the recipe:
`n` per domain cycling through `difficulties`, seeds from `seed_offset` (10⁹) plus
`seed` × 10⁶, so `seed=0` is exactly the held-out set a run evaluates on.

Each task runs once greedily (the completion rate); with `k`, also `max(k, samples)`
draws at `temperature` for an unbiased pass@k.

Not guaranteed: an `openai:` model is scored on the text the server returns; token
counts then come from a local accounting tokenizer (the built-in byte-level one) and
are bytes, not the server's tokens. A remote server's sampling is its own; greedy on
a server that does not honour `temperature=0` is not greedy.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from posttrain.domains import all_domains, get_domain, load_entry_points
from posttrain.domains.base import Domain
from posttrain.domains.matrix import family_of, filter_domains, parse_axis_filter
from posttrain.engines.base import Engine
from posttrain.store.run_dir import load_yaml

DEFAULT_SEED_OFFSET = 10**9


class EvalSpecError(ValueError):
    """A bad `posttrain eval` argument; the message names it."""


@dataclass
class EvalSpec:
    model: str
    domains: list[str] = field(default_factory=list)
    n: int | None = None  # None: the run's eval.tasks_per_domain, else 20
    k: int | None = None
    samples: int | None = None
    temperature: float = 1.0
    seed: int = 0
    concurrency: int = 8
    max_tokens: int | None = None
    difficulties: list[int] | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0  # per request to an openai: server, all its retries included


def select_domains(selectors: list[str]) -> list[Domain]:
    """Domains named by ids, families and axis filters (see the module docstring),
    installed plugins' domains included."""
    try:
        load_entry_points()
        plugins = ""
    except RuntimeError as exc:
        plugins = f" (broken domain plugins: {exc})"
    everything = all_domains()
    families = {family_of(d.id) for d in everything}
    chosen: dict[str, Domain] = {}
    filters: dict[str, str] = {}
    for sel in selectors:
        sel = sel.strip()
        if "=" in sel:
            try:
                axis, value = parse_axis_filter(sel)
            except ValueError as exc:
                raise EvalSpecError(str(exc)) from None
            filters[axis] = value
        elif "/" in sel:
            try:
                chosen[sel] = get_domain(sel)
            except KeyError as exc:
                raise EvalSpecError(f"--domains: {exc.args[0]}{plugins}") from None
        elif sel in families:
            chosen.update({d.id: d for d in everything if family_of(d.id) == sel})
        else:
            raise EvalSpecError(
                f"--domains: {sel!r} is not a domain id, a family or an axis filter; "
                f"families: {', '.join(sorted(families))}"
            )
    pool = list(chosen.values()) if chosen else everything
    if filters:
        try:
            pool = filter_domains(pool, axes_filters=filters)
        except ValueError as exc:
            raise EvalSpecError(f"--domains: {exc}") from None
    if not pool:
        raise EvalSpecError(f"--domains {' '.join(selectors)} selects no domain")
    return pool


def run_defaults(spec: EvalSpec) -> tuple[EvalSpec, int]:
    """For a run directory: the run's domains, difficulties and token budget where the
    spec leaves them open, and its held-out seed offset. Returns (spec, seed_offset)."""
    path = Path(spec.model)
    config = path / "config.yaml"
    if not (path.is_dir() and config.is_file()):
        return spec, DEFAULT_SEED_OFFSET
    try:
        data = load_yaml(config.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise EvalSpecError(f"{config} cannot be read as a run's config: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("eval", {}), dict):
        raise EvalSpecError(f"{config} is not a run's config: it must hold a mapping of settings")
    ev = data.get("eval", {})
    spec = dataclasses.replace(
        spec,
        domains=spec.domains or _typed(config, "domains", data.get("domains", []), _IDS),
        n=spec.n or _typed(config, "eval.tasks_per_domain", ev.get("tasks_per_domain"), _INT),
        difficulties=spec.difficulties
        or _typed(config, "eval.difficulties", ev.get("difficulties"), _INTS),
        max_tokens=spec.max_tokens
        or _typed(config, "max_new_tokens", data.get("max_new_tokens"), _INT),
    )
    seed_offset = ev.get("seed_offset", DEFAULT_SEED_OFFSET)  # null is no offset: refused
    return spec, _typed(config, "eval.seed_offset", seed_offset, _SET_INT)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# What run_defaults reads from a run's config.yaml: (description, check); None = unset.
_INT = ("an integer", lambda v: v is None or _is_int(v))
_SET_INT = ("an integer", _is_int)
_INTS = (
    "a list of integers",
    lambda v: v is None or (isinstance(v, list) and all(map(_is_int, v))),
)
_IDS = (
    "a list of domain ids",
    lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
)


def _typed(config: Path, name: str, value: Any, kind: tuple[str, Any]) -> Any:
    """`value` if it is of `kind`; else an EvalSpecError naming the file and the key (the
    file may have been edited by hand: a string of domains would be read letter by letter)."""
    want, check = kind
    if not check(value):
        raise EvalSpecError(f"{config}: {name} must be {want}, got {value!r}")
    return value


def load_engine(spec: EvalSpec) -> tuple[Engine, Any, str]:
    """(engine, tokenizer, model description) for `spec.model`."""
    from transformers.utils import logging as hf_logging

    from posttrain.engines.hf import HFEngine
    from posttrain.models.loading import ModelNotFoundError, load_model_dir, load_policy

    hf_logging.disable_progress_bar()  # the command prints its own results

    if spec.model.startswith("openai:"):
        from posttrain.engines.openai import OpenAIEngine, parse_openai_spec
        from posttrain.models.tiny import build_tokenizer

        try:
            url, name = parse_openai_spec(spec.model)
        except ValueError as exc:
            raise EvalSpecError(str(exc)) from None
        tokenizer = build_tokenizer()
        remote = OpenAIEngine(url, name, tokenizer=tokenizer, api_key_env=spec.api_key_env,
                              timeout_s=spec.timeout_s, concurrency=spec.concurrency)  # fmt: skip
        return remote, tokenizer, spec.model
    path = Path(spec.model)
    if path.is_dir() and ((path / "config.yaml").is_file() or (path / "checkpoints").is_dir()):
        from posttrain.serve import CheckpointNotFoundError, resolve_checkpoint

        try:
            checkpoint = resolve_checkpoint(path)
        except CheckpointNotFoundError as exc:
            raise EvalSpecError(str(exc)) from None
        try:
            policy = load_model_dir(checkpoint)
        except (OSError, ValueError) as exc:  # a damaged checkpoint: say which, in one line
            raise EvalSpecError(f"cannot load checkpoint {checkpoint}: {exc}") from None
        described = str(checkpoint)
    else:
        try:
            policy = load_policy(spec.model, seed=spec.seed)
        except ModelNotFoundError as exc:
            raise EvalSpecError(str(exc)) from None
        described = spec.model
    policy.model.eval()
    engine = HFEngine(policy.model, policy.tokenizer, max_batch_rows=spec.concurrency * 16,
                      seed=spec.seed)  # fmt: skip
    return engine, policy.tokenizer, described


def run_eval(spec: EvalSpec) -> dict[str, Any]:
    """Evaluate `spec.model`; returns the results document."""
    from posttrain.engines.base import SamplingParams
    from posttrain.eval.evaluate import evaluate
    from posttrain.eval.results import results_document
    from posttrain.rollout.episode import run_episodes
    from posttrain.train.mixture import heldout_tasks

    if spec.n is not None and spec.n < 1:
        raise EvalSpecError(f"--n must be >= 1, got {spec.n}")
    if spec.k is not None and spec.k < 1:
        raise EvalSpecError(f"--k must be >= 1, got {spec.k}")
    if spec.seed < 0:  # offset + seed * 10**6 would fall below the held-out offset, where
        # the training streams (sft, dpo, grpo) draw their tasks: not held out at all
        raise EvalSpecError(f"--seed must be >= 0, got {spec.seed}")
    if spec.seed >= 2**31:  # the bound of a run's seed; torch's overflows not far above
        raise EvalSpecError(f"--seed must be below 2**31, got {spec.seed}")
    if spec.max_tokens is not None and spec.max_tokens < 1:  # 0 would mean the default
        raise EvalSpecError(f"--max-tokens must be >= 1, got {spec.max_tokens}")
    if spec.concurrency < 1:
        raise EvalSpecError(f"--concurrency must be >= 1, got {spec.concurrency}")
    if not 0 <= spec.temperature < math.inf:  # NaN too; before the greedy pass, not after it
        raise EvalSpecError(f"--temperature must be >= 0 and finite, got {spec.temperature}")
    if not 0 < spec.timeout_s < math.inf:
        raise EvalSpecError(f"timeout_s must be > 0 and finite, got {spec.timeout_s}")
    given_max_tokens = spec.max_tokens
    spec, seed_offset = run_defaults(spec)
    n = spec.n or 20
    domains = select_domains(spec.domains or ["arith/addition-v1", "text/reverse-v1",
                                              "list/sort-v1", "tools/calculator-v1"])  # fmt: skip
    levels = spec.difficulties or list(range(1, 11))
    if not levels or any(not 1 <= d <= 10 for d in levels):
        raise EvalSpecError(f"--difficulties must be within 1..10, got {levels}")
    max_tokens = spec.max_tokens or 80
    try:
        tasks = heldout_tasks(domains, n, seed_offset + spec.seed * 10**6, levels)
    except ValueError as exc:  # a domain with fewer distinct prompts than --n
        raise EvalSpecError(f"--n {n} with --difficulties {levels}: {exc}") from None
    from posttrain.models.loading import context_window

    engine, tokenizer, described = load_engine(spec)
    try:
        max_context = context_window(getattr(engine, "model", None))  # a remote engine: none
        if max_context is not None and max_tokens >= max_context:  # every episode would fail
            named = ("--max-tokens" if given_max_tokens else
                     "the run's max_new_tokens" if spec.max_tokens else "the default --max-tokens")  # fmt: skip
            raise EvalSpecError(
                f"{named} {max_tokens} leaves no room for a prompt in the model's context "
                f"window of {max_context} tokens; give fewer than {max_context}"
            )
        result = evaluate("eval", tasks, engine, tokenizer, get_domain, max_tokens,
                          max_context=max_context)  # fmt: skip
        samples: dict[str, list[bool]] | None = None
        draws = max(spec.k or 0, spec.samples or 0)
        if draws:
            params = SamplingParams(max_tokens=max_tokens, temperature=spec.temperature, n=draws)
            groups = run_episodes(tasks, engine, tokenizer, params, get_domain,
                                  max_context=max_context)  # fmt: skip
            samples = {t.id: [r.verdict.passed for r in g]
                       for t, g in zip(tasks, groups, strict=True)}  # fmt: skip
    finally:  # a remote engine holds connections and an event-loop thread
        close = getattr(engine, "close", None)
        if close is not None:
            close()
    settings = {"n": n, "k": spec.k, "samples": draws, "temperature": spec.temperature,
                "seed": spec.seed, "seed_offset": seed_offset, "difficulties": levels,
                "max_tokens": max_tokens, "domains": [d.id for d in domains]}  # fmt: skip
    return results_document(result, described, settings, samples, spec.k, spec.temperature)
