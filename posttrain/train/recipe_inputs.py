"""What a recipe trains on: its domain mix (with the users' dataset domains registered),
its held-out set, and the train / validation split of the users' data files.

    domains = resolve_domains(config)      # ConfigError naming an unknown domain id
    check_heldout(config, domains)         # ConfigError when the held-out set cannot be built
    check_reward_component(config, domains)  # ... when no verdict has grpo.reward_component
    train, val = split_off(items, 16, seed=0)
    examples, val = sft_demonstrations(config, domains, exclude, tokenizer)

Not guaranteed: dataset domains are registered process-wide; a second recipe in the
same process that gives an existing id a different dataset is refused, never replaced.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

from posttrain.config import ConfigError, RunConfig
from posttrain.domains import get_domain, load_entry_points, register
from posttrain.domains.base import Domain
from posttrain.domains.dataset import DatasetDomain, DatasetError
from posttrain.rollout.episode import replay_references
from posttrain.train.mixture import StreamExhausted, TaskSampler, heldout_tasks, prompt_key
from posttrain.types import Rollout, Task

T = TypeVar("T")


def resolve_domains(config: RunConfig) -> list[Domain]:
    """The mix's domains, after registering the recipe's `datasets` (once per process)
    and the installed plugins' domains (`posttrain.domains` entry points). A broken
    plugin matters only when the recipe names a domain that is then missing."""
    register_datasets(config)
    try:
        load_entry_points()
        plugins = ""
    except RuntimeError as exc:
        plugins = f" (broken domain plugins: {exc})"
    domains = []
    for name in config.domains:
        try:
            domains.append(get_domain(name))
        except KeyError as exc:
            raise ConfigError(f"domains: {exc.args[0]}{plugins}") from None
    return domains


def check_heldout(config: RunConfig, domains: list[Domain]) -> None:
    """ConfigError, before anything is written, when `eval`'s held-out set cannot be
    built: a domain with fewer distinct prompts at `eval.difficulties` than
    `eval.tasks_per_domain`. (Building it takes milliseconds; the run builds it again.)"""
    e = config.eval
    try:
        heldout_tasks(domains, e.tasks_per_domain, e.seed_offset, e.difficulties)
    except ValueError as exc:
        raise ConfigError(
            f"eval.tasks_per_domain={e.tasks_per_domain} with eval.difficulties="
            f"{e.difficulties}: {exc}"
        ) from None


def check_reward_component(config: RunConfig, domains: list[Domain]) -> None:
    """ConfigError when `grpo.reward_component` is set and no verdict of the run's
    domains has it (GRPO would silently train on the reward): one reference task per
    domain is replayed and judged, only when the field is set."""
    name = config.grpo.reward_component
    if name is None or not config.grpo.enabled:
        return
    from posttrain.models.tiny import build_tokenizer
    from posttrain.rollout.episode import replay_references

    tasks = [domain.generate(0, 1) for domain in domains]
    seen = {c for r in replay_references(tasks, build_tokenizer(), get_domain)
            for c in r.verdict.components}  # fmt: skip
    if name not in seen:
        raise ConfigError(
            f"grpo.reward_component={name!r}: no verdict of the run's domains has it; "
            f"their components: {', '.join(sorted(seen)) or 'none'}"
        )


def register_datasets(config: RunConfig) -> None:
    """Register each of `config.datasets` as a `DatasetDomain`; ConfigError on a bad one.
    An id already registered by an identical dataset is left alone (a second run in one
    process); any other clash is an error."""
    for spec in config.datasets:
        try:
            domain = DatasetDomain(
                spec.id, spec.path, spec.verifier, spec.reward, spec.reward_weights,
                spec.pass_threshold, heldout_fraction=spec.heldout_fraction,
                heldout_seed_offset=config.eval.seed_offset,
            )  # fmt: skip
        except DatasetError as exc:
            raise ConfigError(f"datasets: {exc}") from None
        try:
            existing = get_domain(spec.id)
        except KeyError:
            existing = None
        if existing is None:
            try:
                register(domain)
            except ValueError as exc:
                raise ConfigError(f"datasets: {exc}") from None
        elif not (isinstance(existing, DatasetDomain) and vars(existing) == vars(domain)):
            raise ConfigError(f"datasets: id {spec.id!r} is already a different domain")


def check_window(max_new_tokens: int, window: int | None) -> None:
    """ConfigError when a turn's budget leaves no room for a prompt in the model's
    window: every episode would fail before its first token, and the run train nothing."""
    if window is not None and max_new_tokens >= window:
        raise ConfigError(
            f"max_new_tokens={max_new_tokens} leaves no room for a prompt in the model's "
            f"window of {window} tokens; set it below {window}"
        )


def split_off(items: list[T], held_out: int, seed: int) -> tuple[list[T], list[T]]:
    """A seeded shuffle of `items` split into (train, validation): at most `held_out`
    and at most a fifth of them for validation, at least one left to train on."""
    order = list(items)
    random.Random(seed).shuffle(order)
    k = min(held_out, len(order) // 5)
    return order[k:], order[:k]


def grpo_sampler(
    config: RunConfig, domains: list[Domain], mixture: list[float] | None, exclude: set[str]
) -> TaskSampler:
    """GRPO's task stream, with the curriculum settings of `config.grpo`."""
    c = config.grpo
    return TaskSampler(
        domains,
        "grpo",
        c.difficulties,
        weights=mixture,
        exclude=exclude,
        seed=config.seed,
        adaptive=c.adaptive_difficulty,
        floor=c.adaptive_floor,
        cost_aware=c.adaptive_cost,
    )


def dpo_tasks(
    config: RunConfig,
    domains: list[Domain],
    mixture: list[float] | None,
    exclude: set[str],
    warn: Callable[[str], None] | None = None,
) -> tuple[list[Task], list[Task]]:
    """DPO's (mining, validation) tasks, none a held-out prompt and no validation prompt
    a mining one (preference accuracy is then measured on prompts DPO never saw; see
    `validation_tasks` for a mix too small for that)."""
    c, seed = config.dpo, config.seed
    tasks = TaskSampler(domains, "dpo", weights=mixture, exclude=exclude, seed=seed).sample(
        c.num_tasks
    )

    def stream(excluded: set[str]) -> TaskSampler:
        return TaskSampler(domains, "dpo-val", weights=mixture, exclude=excluded, seed=seed)

    return tasks, validation_tasks(stream, c.val_tasks, exclude, tasks, warn, "dpo")


def validation_tasks(
    stream: Callable[[set[str]], TaskSampler],
    count: int,
    exclude: set[str],
    training: list[Task],
    warn: Callable[[str], None] | None,
    stage: str,
) -> list[Task]:
    """`count` tasks of the validation `stream` (built with the prompts it must skip),
    none a held-out (`exclude`) or `training` prompt. A mix whose every prompt training
    drew (a small dataset) has none left: its validation then shares training's
    prompts, with a warning."""
    try:
        return stream(exclude | {prompt_key(t) for t in training}).sample(count)
    except StreamExhausted:
        if warn is not None:
            warn(f"{stage}: too few prompts outside the training ones; validation shares them")
        return stream(exclude).sample(count)


def sft_demonstrations(
    config: RunConfig,
    domains: list[Domain],
    exclude: set[str],
    tokenizer: Any,
    window: int | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[list[Rollout], list[Rollout]]:
    """SFT's (train, validation) demonstrations: domain references of difficulties
    1..`sft.max_difficulty` replayed through the episode loop, drawn with
    `sft.domain_weights` (validation: evenly), none of them a held-out prompt, and no
    validation prompt a training one: the stopping rule reads validation loss, which
    prompts the model has learned by heart would hold down (a small cell, the 100
    one-digit sums, is all in training and gives validation none)."""
    c = config.sft
    difficulties = range(1, c.max_difficulty + 1)
    weights = [c.domain_weights.get(d.id, 1.0) for d in domains]
    train = TaskSampler(domains, "sft", difficulties, weights, exclude=exclude, seed=config.seed)
    tasks = train.sample(c.num_examples)

    def stream(excluded: set[str]) -> TaskSampler:
        return TaskSampler(domains, "sft-val", difficulties, exclude=excluded, seed=config.seed)

    val = validation_tasks(stream, c.val_examples, exclude, tasks, warn, "sft")
    examples = replay_references(tasks, tokenizer, get_domain)
    val_examples = replay_references(val, tokenizer, get_domain)
    return _fitting(examples, window, warn, "sft"), _fitting(val_examples, window, warn, "sft-val")


def _fitting(
    examples: list[Rollout], window: int | None, warn: Callable[[str], None] | None, what: str
) -> list[Rollout]:
    """The `examples` that fit the model's `window` (a long-context domain's reference
    can run to millions of tokens: trained on whole, it takes the machine's memory). The
    others are left out, with a warning naming their cells; none fitting is an error."""
    if window is None:
        return examples
    fit: list[Rollout] = []
    long: list[Rollout] = []
    for r in examples:
        (fit if len(r.prompt_ids) + len(r.completion_ids) <= window else long).append(r)
    if long:
        cells = sorted({f"{r.domain} d{r.difficulty}" for r in long})
        message = (
            f"{what}: {len(long)} of {len(examples)} demonstrations are longer "
            f"than the model's window of {window} tokens and are left out ({', '.join(cells[:6])}"
            f"{', ...' if len(cells) > 6 else ''}); lower sft.max_difficulty to draw fewer"
        )
        if not fit:
            raise ConfigError(message)
        if warn is not None:
            warn(message)
    return fit
