"""Where GRPO's groups come from: the lockstep loop, or the concurrent scheduler.

    source = make_source(cfg.rollout, model, engine, tokenizer, sampler, get_domain, params)
    groups = source.batch(prompts, version=step)    # [(task, its group_size rollouts)]
    ...update the policy...
    source.updated(model, version=step + 1)          # the engine gets the new weights
    source.close()

`lockstep` runs a step's episodes in one batched loop (`run_episodes`) on the
trainer's own model: nothing runs during the update. `rollout.backend=ray` runs them
on `rollout.ray_workers` Ray actors, each with its own copy of the policy, loaded
with the new weights after every update (LoRA merged first); a step's groups split
into one chunk per worker, so one worker samples exactly what the local lockstep loop
would. `scheduled` runs them through a
`Scheduler`: with `max_staleness` 0 a step submits its groups and waits for all of
them (concurrent stages, synchronous steps). With `max_staleness` ≥ 1 it is
asynchronous: right after a batch is taken the next step's groups (plus
`over_provision` extra) are submitted, so generation runs while the policy trains;
the engine then works on its own copy of the model, loaded with the new weights
after each update (`Scheduler.update_weights`). A group older than `max_staleness`
versions when collected is dropped and counted, never trained on.

Not guaranteed: a resumed scheduled run does not get back the groups that were in
flight when it stopped (they are sampled again); with the scheduler, which samples a
fixed seed gives depends on timing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from transformers import PreTrainedModel

from posttrain.config import RolloutConfig
from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.ranks import broadcast_object, is_distributed, is_main, shard_map
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler, SchedulerConfig
from posttrain.tools import ToolPolicy
from posttrain.train.distributed import DistributedError
from posttrain.train.mixture import TaskSampler
from posttrain.types import Rollout, Task

if TYPE_CHECKING:
    from posttrain.rollout.backends.ray_backend import RayRollouts

Group = tuple[Task, list[Rollout]]


class RolloutSource(Protocol):
    def batch(self, prompts: int, version: int) -> list[Group]: ...

    def updated(self, model: PreTrainedModel, version: int) -> None: ...

    def metrics(self) -> dict[str, float]: ...

    def close(self) -> None: ...


class LockstepSource:
    """A step's episodes in one batched loop on the trainer's model."""

    def __init__(
        self,
        engine: Engine,
        tokenizer: Any,
        sampler: TaskSampler,
        get_domain: Callable[[str], Domain],
        params: SamplingParams,
        max_context: int | None,
        over_long: OverLongPolicy | None,
        tool_policy: ToolPolicy | None = None,
    ) -> None:
        self.engine, self.tokenizer, self.sampler = engine, tokenizer, sampler
        self.tool_policy = tool_policy
        self.get_domain, self.params = get_domain, params
        self.max_context, self.over_long = max_context, over_long

    def batch(self, prompts: int, version: int) -> list[Group]:
        """The step's tasks (the same on every rank: one sampler seed); under torchrun
        each rank runs the episodes of its share and gets everyone's (`shard_map`)."""
        tasks = self.sampler.sample(prompts)

        def episodes(mine: list[Task]) -> list[list[Rollout]]:
            return run_episodes(
                mine, self.engine, self.tokenizer, self.params, self.get_domain,
                policy_version=version, max_context=self.max_context,
                over_long=self.over_long, tool_policy=self.tool_policy,
            )  # fmt: skip

        return list(zip(tasks, shard_map(tasks, episodes), strict=True))

    def updated(self, model: PreTrainedModel, version: int) -> None:
        """The engine samples from the trainer's own model: nothing to load."""

    def metrics(self) -> dict[str, float]:
        return {}

    def close(self) -> None:
        pass


class ScheduledSource:
    """A step's groups from a `Scheduler` or `RayRollouts`, synchronous or within a
    staleness bound."""

    def __init__(
        self,
        cfg: RolloutConfig,
        rollouts: Scheduler | RayRollouts,
        sampler: TaskSampler,
        push_weights: bool,
    ) -> None:
        self.cfg, self.scheduler, self.sampler = cfg, rollouts, sampler
        self.push_weights = push_weights  # the engines hold their own copy of the model
        self.dropped = 0
        self.last_staleness: list[float] = []

    def _top_up(self, prompts: int, version: int) -> None:
        want = prompts + self.cfg.over_provision - self.scheduler.inflight
        if want > 0:
            tasks = self.sampler.sample(want)
            if len(tasks) != want:  # collecting would wait for groups never submitted
                raise RuntimeError(f"the task sampler gave {len(tasks)} tasks, {want} asked for")
            self.scheduler.submit(tasks, policy_version=version)

    def batch(self, prompts: int, version: int) -> list[Group]:
        self.scheduler.set_policy_version(version)
        if self.cfg.max_staleness == 0:  # synchronous: this step's tasks, in their order
            tasks = self.sampler.sample(prompts)
            groups = list(zip(tasks, self.scheduler.run(tasks, policy_version=version), strict=True))  # fmt: skip
        else:
            groups = []
            while len(groups) < prompts:
                self._top_up(prompts, version)
                for task, rollouts in self.scheduler.collect_groups(prompts - len(groups)):
                    if version - rollouts[0].policy_version > self.cfg.max_staleness:
                        self.dropped += 1
                        continue
                    groups.append((task, rollouts))
            self._top_up(prompts, version)  # the next step's groups generate during the update
        self.last_staleness = [r.timings["staleness"] for _, g in groups for r in g]
        return groups

    def updated(self, model: PreTrainedModel, version: int) -> None:
        if self.push_weights:
            self.scheduler.update_weights(weights_of(model), version)
        else:
            self.scheduler.set_policy_version(version)

    def metrics(self) -> dict[str, float]:
        stale = self.last_staleness
        return {
            "staleness_mean": sum(stale) / max(1, len(stale)),
            "staleness_max": max(stale, default=0.0),
            "dropped_stale_groups": float(self.dropped),
            **self.scheduler.metrics(),
        }

    def close(self) -> None:
        self.scheduler.close()


class RankZeroSource:
    """Under torchrun: rank 0 runs `inner` (the scheduler, or Ray rollout workers) and
    broadcasts each step's groups; the new weights go to `inner` from rank 0's full
    model (`PolicyReplica.plain`, synced on every rank before `updated`). The other
    ranks pass None and wait in the broadcast while rank 0's engines generate."""

    def __init__(self, inner: RolloutSource | None) -> None:
        self.inner = inner

    def batch(self, prompts: int, version: int) -> list[Group]:
        groups = self.inner.batch(prompts, version) if self.inner is not None else None
        received: list[Group] | None = broadcast_object(groups)
        if received is None:
            raise DistributedError("rank 0 sent no rollout groups: it has no rollout source")
        return received

    def updated(self, model: PreTrainedModel, version: int) -> None:
        if self.inner is not None:
            self.inner.updated(model, version)

    def metrics(self) -> dict[str, float]:
        """Rank 0's (the only rank that logs)."""
        return self.inner.metrics() if self.inner is not None else {}

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def weights_of(model: PreTrainedModel) -> dict[str, Any]:
    """The plain weights an engine loads: LoRA adapters merged into a copy first."""
    from posttrain.models.lora import is_lora, merged_copy

    return (merged_copy(model) if is_lora(model) else model).state_dict()


def local_scheduler(
    cfg: RolloutConfig,
    model: PreTrainedModel,
    engine: Engine,
    tokenizer: Any,
    get_domain: Callable[[str], Domain],
    params: SamplingParams,
    max_context: int | None,
    over_long: OverLongPolicy | None,
) -> tuple[Scheduler, bool]:
    """The in-process scheduler, and whether its engine got its own model copy (it
    does when generation overlaps the update: the optimizer must not write its weights)."""
    own_copy = cfg.max_staleness > 0 and getattr(engine, "model", None) is model
    if own_copy:
        from posttrain.models.lora import is_lora, merged_copy

        engine = copy.copy(engine)
        plain = merged_copy(model) if is_lora(model) else copy.deepcopy(model)
        engine.model = plain.eval()  # type: ignore[attr-defined]  # loads weights_of(model)
        # The shallow copy would share the KV cache with the trainer's engine, which
        # evaluates while this one generates: each would clear (and race on) the other's.
        kept = getattr(engine, "prefix_cache", None)
        if kept is not None:
            engine.prefix_cache = type(kept)(kept.max_tokens)  # type: ignore[attr-defined]
    sched_cfg = SchedulerConfig(
        engine_slots=cfg.engine_slots,
        env_workers=cfg.env_workers,
        verify_workers=cfg.verify_workers,
        episode_timeout_s=cfg.episode_timeout_s,
    )
    scheduler = Scheduler(
        engine, tokenizer, get_domain, params, sched_cfg, max_context, over_long,
        tool_policy=tool_policy(cfg),
    )  # fmt: skip
    return scheduler, own_copy


def ray_rollouts(
    cfg: RolloutConfig,
    model: PreTrainedModel,
    engine: Engine,
    tokenizer: Any,
    get_domain: Callable[[str], Domain],
    params: SamplingParams,
    prompts_per_step: int,
    max_context: int | None,
    over_long: OverLongPolicy | None,
) -> RayRollouts:
    """Rollout workers on Ray (`rollout/backends/ray_backend.py`), each with a copy of
    the policy; a step's groups split evenly over them, one chunk each."""
    from posttrain.rollout.backends.ray_backend import RayRollouts, ensure_ray
    from posttrain.rollout.backends.ray_worker import HFEngineFactory

    ensure_ray(cfg.ray_address)
    factory: Callable[[], Engine]
    if getattr(engine, "model", None) is model:  # the HF engine on the trainer's model
        from posttrain.models.lora import is_lora, merged_copy

        plain = merged_copy(model) if is_lora(model) else model
        seed = int(engine.generator.initial_seed())  # type: ignore[attr-defined]
        factory = HFEngineFactory.from_model(plain, tokenizer, seed=seed)
    else:  # any other engine travels as it is (scripted engines in tests)
        factory = _Same(engine)
    return RayRollouts(
        factory, tokenizer, get_domain, params, workers=cfg.ray_workers,
        max_context=max_context, over_long=over_long, tool_policy=tool_policy(cfg),
        chunk_groups=max(1, -(-prompts_per_step // cfg.ray_workers)), address=cfg.ray_address,
    )  # fmt: skip


@dataclass(frozen=True)
class _Same:
    """An engine factory that returns (a copy of) one picklable engine."""

    engine: Engine

    def __call__(self) -> Engine:
        return self.engine


def tool_policy(cfg: RolloutConfig) -> ToolPolicy:
    """The tool guard's policy from the run's `rollout:` settings."""
    return ToolPolicy(timeout_s=cfg.tool_timeout_s, retries=cfg.tool_retries)


def make_source(
    cfg: RolloutConfig | None,
    model: PreTrainedModel,
    engine: Engine,
    tokenizer: Any,
    sampler: TaskSampler,
    get_domain: Callable[[str], Domain],
    params: SamplingParams,
    max_context: int | None = None,
    over_long: OverLongPolicy | None = None,
    prompts_per_step: int = 1,
    ranked: bool = True,
) -> RolloutSource:
    """The source `cfg` names: lockstep (also without a config), the local scheduler,
    or Ray workers. Under torchrun, lockstep runs on every rank (each its share of the
    groups); the scheduler or Ray workers run on rank 0, which hands every step's
    groups to the other ranks (`RankZeroSource`)."""
    lockstep = cfg is None or (cfg.backend == "local" and cfg.mode == "lockstep")
    if ranked and is_distributed() and not lockstep:
        inner = None
        if is_main():
            inner = make_source(cfg, model, engine, tokenizer, sampler, get_domain, params,
                                max_context, over_long, prompts_per_step, ranked=False)  # fmt: skip
        return RankZeroSource(inner)
    if cfg is not None and cfg.backend == "ray":
        rollouts = ray_rollouts(
            cfg, model, engine, tokenizer, get_domain, params, prompts_per_step,
            max_context, over_long,
        )  # fmt: skip
        return ScheduledSource(cfg, rollouts, sampler, push_weights=True)
    if cfg is None or cfg.mode == "lockstep":
        policy = None if cfg is None else tool_policy(cfg)
        return LockstepSource(
            engine, tokenizer, sampler, get_domain, params, max_context, over_long, policy
        )
    scheduler, own_copy = local_scheduler(
        cfg, model, engine, tokenizer, get_domain, params, max_context, over_long
    )
    return ScheduledSource(cfg, scheduler, sampler, push_weights=own_copy)
