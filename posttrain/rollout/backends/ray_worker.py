"""The Ray backend's worker: one engine per actor, chunks of groups through `run_episodes`.

`RayRollouts` (`ray_backend.py`) creates `EpisodeWorker` actors and sends each a chunk
of groups at a time; a chunk runs through the lockstep `run_episodes`, so the `n`
samples of a group share one prefill on one worker, and verification happens inside
that loop, on the worker, right after each episode (there is no separate verifier
pool); an episode whose session cannot open is a recorded failure there, so it does
not fail its chunk. Sessions lease sandboxes from `posttrain/sandbox/shared.py`, whose
pools are per process: each worker actor keeps its own warm pools (a node running
three workers runs three pools).

The engine is built once per actor by the picklable zero-arg `engine_factory`. An
engine with a torch `generator` attribute (`HFEngine`) is reseeded to its initial seed
plus the worker's rank, so worker 0 samples exactly as the same engine would locally.
`HFEngineFactory.from_model(model, tokenizer, seed)` is such a factory for an
in-memory transformers model: the weights go to the object store once and every
worker rebuilds the model from its config and those weights.

Not guaranteed: a restarted actor rebuilds its engine from the factory and its seed,
so the chunk it redoes does not sample what the killed one would have; a chunk is
marked started in Ray's internal key-value store (the GCS) to count re-executions,
which is Ray's internal API (`ray.experimental.internal_kv`); side effects of a killed
chunk's episodes (sandbox commands already run) are not undone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.experimental import internal_kv

from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import plain_prompt_ids, prompt_ids, run_episodes
from posttrain.tools import ToolPolicy
from posttrain.types import Rollout, Task, Verdict

KV_NAMESPACE = "posttrain-rollouts"


@dataclass
class ChunkResult:
    """What a worker returns for one chunk: each group's rollouts, in chunk order."""

    chunk_id: int
    rank: int
    incarnation: str  # a fresh id per actor process: a new one means a restart
    reexecuted: bool  # this chunk had been started before (by a process that died)
    groups: list[list[Rollout]]
    seconds: float


class EpisodeWorker:
    """One rollout worker (wrapped by `ray.remote` in `RayRollouts`)."""

    def __init__(
        self,
        rank: int,
        shared: list[ray.ObjectRef],
        get_domain: Callable[[str], Domain],
        params: SamplingParams,
        max_context: int | None,
        over_long: OverLongPolicy | None,
        tool_policy: ToolPolicy | None,
        ledger: str,
    ) -> None:
        # `shared` = [engine factory, tokenizer] as refs the driver keeps, fetched here
        # (again after a restart): passed nested, not as arguments in the object store,
        # which Ray flags for actors with restarts (ray-project/ray#53727).
        self.factory: Callable[[], Engine]
        self.factory, self.tokenizer = ray.get(shared)
        self.rank = rank
        self.get_domain, self.params = get_domain, params
        self.max_context, self.over_long, self.tool_policy = max_context, over_long, tool_policy
        self.ledger = ledger  # the key prefix of this run's chunk-started markers
        self.incarnation = uuid.uuid4().hex
        self.engine = self._build()
        self.weights: str | None = None  # hex id of the loaded weights' ObjectRef

    def _build(self) -> Engine:
        engine = self.factory()
        generator = getattr(engine, "generator", None)
        if generator is not None and hasattr(generator, "initial_seed"):
            generator.manual_seed(generator.initial_seed() + self.rank)  # rank r: seed + r
        return engine

    def ready(self) -> str:
        """This actor process's incarnation id (answers once the engine is built)."""
        return self.incarnation

    def load_weights(self, box: list[Any]) -> None:
        """Load the weights `box[0]` (an ObjectRef, boxed so Ray does not resolve it),
        unless they are loaded already; `[None]` means the factory's own weights."""
        ref = box[0]
        if ref is None:
            if self.weights is not None:  # only a retried old chunk gets here
                self.engine, self.weights = self._build(), None
            return
        if ref.hex() != self.weights:
            self.engine.update_weights(ray.get(ref))
            self.weights = ref.hex()

    def run_chunk(
        self, chunk_id: int, tasks: Sequence[Task], policy_version: int, weights: list[Any]
    ) -> ChunkResult:
        """Every task's `n` episodes under the weights the chunk was submitted with."""
        key = f"{self.ledger}/{chunk_id}"
        reexecuted = internal_kv._internal_kv_put(key, b"1", overwrite=False, namespace=KV_NAMESPACE)  # fmt: skip
        self.load_weights(weights)
        start = time.perf_counter()
        groups = run_episodes(
            tasks, self.engine, self.tokenizer, self.params, self.get_domain, policy_version,
            self.max_context, self.over_long, self.tool_policy,
        )  # fmt: skip
        elapsed = time.perf_counter() - start
        return ChunkResult(chunk_id, self.rank, self.incarnation, bool(reexecuted), groups, elapsed)


def clear_ledger(ledger: str) -> None:
    """Drop a run's chunk-started markers from Ray's key-value store (at close)."""
    internal_kv._internal_kv_del(ledger, del_by_prefix=True, namespace=KV_NAMESPACE)


def failed_groups(
    jobs: Sequence[tuple[Task, int]], n: int, tokenizer: Any, rank: int, exc: Exception
) -> list[list[Rollout]]:
    """For each (task, policy version) of a chunk that raised on worker `rank`, `n`
    recorded failures (reward 0, `error` naming the exception; the prompt as plain text
    when the chat template refuses it)."""
    cause = getattr(exc, "cause", None) or exc  # a task error carries the worker's exception
    reason = f"rollout worker {rank} failed: {type(cause).__name__}: {cause}"
    return [
        [
            Rollout(
                id=uuid.uuid4().hex,
                task_id=task.id,
                domain=task.domain,
                difficulty=task.difficulty,
                prompt_ids=_prompt_ids_or_plain(tokenizer, task),
                completion_ids=[],
                loss_mask=[],
                logprobs=[],
                messages=list(task.prompt),
                turns=[],
                verdict=Verdict(0.0, False, reason),
                policy_version=version,
                error=reason,
                judged=False,
            )  # fmt: skip
            for _ in range(n)
        ]
        for task, version in jobs
    ]


def _prompt_ids_or_plain(tokenizer: Any, task: Task) -> list[int]:
    """The task's prompt ids, or its plain-text ids when the template refuses it: the
    prompt may be what failed the chunk, and this record must not fail too (it runs on
    the gathering thread, which would die and leave every caller waiting)."""
    try:
        return prompt_ids(tokenizer, task)
    except Exception:
        return plain_prompt_ids(tokenizer, task)


@dataclass
class HFEngineFactory:
    """Builds an `HFEngine` inside a worker from a model's class, config and weights in
    Ray's object store (put once; each node fetches them once). The model must be a
    plain transformers model: merge LoRA adapters first (`models.lora.merged_copy`)."""

    model_class: type
    config: Any  # the model's transformers config
    generation_config: Any
    weights: Any  # ObjectRef of a CPU state dict
    tokenizer: Any
    seed: int = 0
    device: str = "cpu"
    dtype: Any = None  # the model's parameter dtype
    engine_kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_model(
        cls, model: Any, tokenizer: Any, seed: int = 0, device: str = "cpu", **engine_kwargs: Any
    ) -> HFEngineFactory:
        """A factory for copies of `model` (a transformers causal LM) on `device`;
        `engine_kwargs` go to `HFEngine` (`max_batch_rows`, `prefix_cache`, ...)."""
        state = {k: v.detach().to("cpu") for k, v in model.state_dict().items()}
        dtype = next(model.parameters()).dtype
        return cls(
            type(model), model.config, model.generation_config, ray.put(state), tokenizer,
            seed, device, dtype, dict(engine_kwargs),
        )  # fmt: skip

    def __call__(self) -> Engine:
        from posttrain.engines.hf import HFEngine

        model = self.model_class(self.config)
        if self.dtype is not None:
            model = model.to(self.dtype)
        model.load_state_dict(ray.get(self.weights))
        model.generation_config = self.generation_config
        model = model.to(self.device).eval()
        return HFEngine(model, self.tokenizer, seed=self.seed, **self.engine_kwargs)
