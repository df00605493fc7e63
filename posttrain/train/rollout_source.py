"""Where GRPO's groups come from: the lockstep loop, or the concurrent scheduler.

    source = make_source(cfg.rollout, model, engine, tokenizer, sampler, get_domain, params)
    groups = source.batch(prompts, version=step)    # [(task, its group_size rollouts)]
    ...update the policy...
    source.updated(model, version=step + 1)          # the engine gets the new weights
    source.close()

`lockstep` runs a step's episodes in one batched loop (`run_episodes`) on the
trainer's own model: nothing runs during the update. `scheduled` runs them through a
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
from typing import Any, Protocol

from transformers import PreTrainedModel

from posttrain.config import RolloutConfig
from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler, SchedulerConfig
from posttrain.tools import ToolPolicy
from posttrain.train.mixture import TaskSampler
from posttrain.types import Rollout, Task

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
        tasks = self.sampler.sample(prompts)
        groups = run_episodes(
            tasks, self.engine, self.tokenizer, self.params, self.get_domain,
            policy_version=version, max_context=self.max_context, over_long=self.over_long,
            tool_policy=self.tool_policy,
        )  # fmt: skip
        return list(zip(tasks, groups, strict=True))

    def updated(self, model: PreTrainedModel, version: int) -> None:
        """The engine samples from the trainer's own model: nothing to load."""

    def metrics(self) -> dict[str, float]:
        return {}

    def close(self) -> None:
        pass


class ScheduledSource:
    """A step's groups from a `Scheduler`, synchronous or within a staleness bound."""

    def __init__(
        self,
        cfg: RolloutConfig,
        model: PreTrainedModel,
        engine: Engine,
        tokenizer: Any,
        sampler: TaskSampler,
        get_domain: Callable[[str], Domain],
        params: SamplingParams,
        max_context: int | None,
        over_long: OverLongPolicy | None,
    ) -> None:
        self.cfg, self.sampler = cfg, sampler
        # Generating during the update needs weights the optimizer is not writing.
        self.own_copy = cfg.max_staleness > 0 and getattr(engine, "model", None) is model
        if self.own_copy:
            engine = copy.copy(engine)
            engine.model = copy.deepcopy(model).eval()  # type: ignore[attr-defined]
        sched_cfg = SchedulerConfig(
            engine_slots=cfg.engine_slots,
            env_workers=cfg.env_workers,
            verify_workers=cfg.verify_workers,
            episode_timeout_s=cfg.episode_timeout_s,
        )
        self.scheduler = Scheduler(
            engine, tokenizer, get_domain, params, sched_cfg, max_context, over_long,
            tool_policy=tool_policy(cfg),
        )  # fmt: skip
        self.dropped = 0
        self.last_staleness: list[float] = []

    def _top_up(self, prompts: int, version: int) -> None:
        want = prompts + self.cfg.over_provision - self.scheduler.inflight
        if want > 0:
            self.scheduler.submit(self.sampler.sample(want), policy_version=version)

    def batch(self, prompts: int, version: int) -> list[Group]:
        self.scheduler.set_policy_version(version)
        groups: list[Group] = []
        while len(groups) < prompts:
            self._top_up(prompts, version)
            for task, rollouts in self.scheduler.collect_groups(prompts - len(groups)):
                if version - rollouts[0].policy_version > self.cfg.max_staleness:
                    self.dropped += 1
                    continue
                groups.append((task, rollouts))
        if self.cfg.max_staleness > 0:  # the next step's groups generate during the update
            self._top_up(prompts, version)
        self.last_staleness = [r.timings["staleness"] for _, g in groups for r in g]
        return groups

    def updated(self, model: PreTrainedModel, version: int) -> None:
        if self.own_copy:
            self.scheduler.update_weights(model.state_dict(), version)
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
) -> RolloutSource:
    """The source `cfg.mode` names (lockstep without a config)."""
    if cfg is None or cfg.mode == "lockstep":
        return LockstepSource(
            engine, tokenizer, sampler, get_domain, params, max_context, over_long
        )
    return ScheduledSource(
        cfg, model, engine, tokenizer, sampler, get_domain, params, max_context, over_long
    )
