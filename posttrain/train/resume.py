"""SFT's and GRPO's full training state, saved every `sft.save_every` / `grpo.save_every`
steps so a run killed mid-stage (`kill -9` included) continues exactly where the last
save left it.

    save_grpo_state(run.checkpoint_path("grpo-state"), state)     # atomic directory
    state = load_grpo_state(run.checkpoint_path("grpo-state"))    # None when absent
    save_sft_state(run.checkpoint_path("sft-state"), model, optimizer, loop, elapsed_s)
    loop, elapsed_s = load_sft_state(run.checkpoint_path("sft-state"), model, optimizer)

    posttrain run resume=runs/20261201-003956                     # the whole run

`posttrain run resume=RUN` continues a run under its own `config.yaml`: stages whose
checkpoint is complete are loaded (weights and evaluation), not redone; GRPO goes on
from its last state; a stage that had not finished starts again from the previous
stage's checkpoint, and its metrics from the lost attempt are dropped
(`forget_unfinished`).

What a state holds: the step, the stage's elapsed seconds (so `grpo.max_minutes`
keeps counting), the rewards seen (for the stage summary), the model weights, the
optimizer (AdamW moments and step counts), the KL reference's weights when there is
one, the task sampler (its RNG, seed cursor, curriculum pass rates and episode
lengths, length window: `TaskSampler.state_dict`), every RNG the step draws from (torch's global
generator, Python's `random`, the engine's sampling generator), the step guard's
counts (`train/step_guard.py`), whether the monitor evaluation of the saved step is
still to run (a stop came before it: the resume runs it first) and the trace store's
high-water mark at the save. The directory is written with `store.atomic`: a crash
mid-save leaves the previous state as it was. An SFT state is a sharded checkpoint
(`train/distributed.py`'s `save_sharded`: model and AdamW state through
torch.distributed.checkpoint, loadable on any number of ranks) whose JSON holds the
`SFTLoop` (step, the data order's RNG and remaining order, loss EMA, plateau
counters, the step guard's counts), every rank's torch and Python RNGs (LoRA dropout draws from them) and the
stage's elapsed seconds. The recipe removes a stage's state only once the stage's
final checkpoint is published, and crash-safely (`store.atomic.remove_directory`): a
kill leaves it whole or gone; a state beside its stage's complete checkpoint is never
read, and one without a readable state.json counts as none.

Before a resume continues (`prepare_resume`, under the run's lock): leftovers of
crashed atomic saves and deletes under the run directory and `checkpoints/` are swept,
the lost attempt's rows are dropped (`forget_unfinished`; a malformed line in the
middle of `metrics.jsonl` or `alerts.jsonl` is a ConfigError naming the file and line),
and `tb/` is rewritten from the rows kept. `record_data_files` / `check_data_files`
keep the users' data files' size and sha256 in `data_files.json` and refuse a resume
whose data has changed.

Not guaranteed: exactness needs the same code, config, thread count and machine
class (float reductions differ across CPUs). Metrics and alerts logged after the last
save are dropped on resume and logged again by the replayed steps; their rollouts stay
in the trace store (marked with their policy version) beside the replayed ones (the
store loses nothing it recorded), and so do those of an evaluation cut short before
its results file was written: it is redone, and stage `eval/<label>` holds both. The
alert rules are brought back to where they stood by replaying the kept metrics
(`AlertMonitor.replay`), so the replayed steps raise the alerts they raised before. A
resumed SFT stage does not
have the plateau rule's best weights from before the save (it restores only a best
found after it). Only CPU generators are kept, not CUDA's. The control arm is not
resumable: when it had not finished, a fresh one starts from the SFT checkpoint and
trains for the whole DPO + GRPO `seconds` again (both lives of a resumed GRPO).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_state_dict,
    set_state_dict,
)

from posttrain.ranks import is_distributed, rank, world_size
from posttrain.store.alerts import read_alerts
from posttrain.store.atomic import (
    atomic_directory,
    atomic_write_text,
    is_complete,
    remove_directory,
    sweep_leftovers,
)
from posttrain.store.metrics import read_metrics, rewrite_tensorboard
from posttrain.store.run_dir import RunDir, RunDirError
from posttrain.train.distributed import load_sharded, rank_seed, save_sharded
from posttrain.train.sft import SFTLoop

if TYPE_CHECKING:
    from posttrain.config import RunConfig

STATE_JSON = "state.json"
TENSORS = "tensors.pt"
GRPO_STATE = "grpo-state"  # checkpoints/grpo-state/
SFT_STATE = "sft-state"  # checkpoints/sft-state/
STAGES = ("sft", "dpo", "grpo", "control")
# The stages with a mid-stage resume state, and its directory under checkpoints/.
MID_STAGE_STATES = {"sft": SFT_STATE, "grpo": GRPO_STATE}


@dataclass
class GRPOState:
    step: int
    elapsed_s: float
    rewards_seen: list[float]
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    sampler: dict[str, Any]
    rng: dict[str, Any]
    ref_model: dict[str, torch.Tensor] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the recipe's: trace high-water mark
    guard: dict[str, Any] = field(default_factory=dict)  # StepGuard.state_dict()
    after_step_pending: bool = False  # saved on a stop before `after_step(step)` ran


def capture_rng(engine: Any) -> dict[str, Any]:
    generator = getattr(engine, "generator", None)
    return {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "engine": generator.get_state() if isinstance(generator, torch.Generator) else None,
    }


def restore_rng(rng: dict[str, Any], engine: Any) -> None:
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    generator = getattr(engine, "generator", None)
    if rng.get("engine") is not None and isinstance(generator, torch.Generator):
        generator.set_state(rng["engine"])


def save_grpo_state(path: Path, state: GRPOState) -> Path:
    with atomic_directory(path) as tmp:
        meta = {"step": state.step, "elapsed_s": state.elapsed_s,
                "rewards_seen": state.rewards_seen, "sampler": state.sampler,
                "extra": state.extra, "guard": state.guard,
                "after_step_pending": state.after_step_pending}  # fmt: skip
        (tmp / STATE_JSON).write_text(json.dumps(meta, indent=1))
        tensors = {"model": state.model, "optimizer": state.optimizer, "rng": state.rng,
                   "ref_model": state.ref_model}  # fmt: skip
        torch.save(tensors, tmp / TENSORS)
    return path


def load_grpo_state(path: Path) -> GRPOState | None:
    """The state saved at `path`, or None when no complete state is there."""
    if not is_complete(path):
        return None
    meta = json.loads((path / STATE_JSON).read_text())
    # weights_only=False: the RNG states are Python tuples; the file is our own.
    tensors = torch.load(path / TENSORS, weights_only=False)
    return GRPOState(
        step=int(meta["step"]),
        elapsed_s=float(meta["elapsed_s"]),
        rewards_seen=[float(x) for x in meta["rewards_seen"]],
        model=tensors["model"],
        optimizer=tensors["optimizer"],
        sampler=meta["sampler"],
        rng=tensors["rng"],
        ref_model=tensors["ref_model"],
        extra=dict(meta.get("extra", {})),
        guard=dict(meta.get("guard", {})),  # absent from states saved before it was kept
        after_step_pending=bool(meta.get("after_step_pending", False)),
    )


def open_for_resume(path: str | Path) -> tuple[RunDir, RunConfig]:
    """The run directory and its own saved config (ConfigError when either is unusable)."""
    from posttrain.config import ConfigError, load_config, read_recipe

    try:
        run = RunDir.open(path)
    except RunDirError as exc:
        raise ConfigError(f"resume: {exc}") from None  # no config.yaml: nothing written
    try:
        # A run writes its whole config; an empty one would resume under the defaults.
        if not read_recipe(run.config_path):
            raise ConfigError(
                "it is empty, but a run's config.yaml holds every setting of the run; "
                "restore it, or start a new run"
            )
        config = load_config(run.config_path)
    except ConfigError as exc:  # a foreign or damaged config.yaml: say which file
        raise ConfigError(f"resume: {run.config_path}: {exc}") from None
    return run, config.model_copy(update={"resume": None})


def forget_unfinished(run: RunDir, stages: tuple[str, ...]) -> int:
    """Drop from `metrics.jsonl` what a resume redoes: rows of training stages without
    a complete checkpoint (GRPO's only after its saved state's step), held-out monitor
    rows after that step, and evaluation rows without a results file; drop from
    `alerts.jsonl` the alerts of those training steps too (the redone steps raise them
    again). Returns the number of rows dropped; each file is rewritten atomically.
    ConfigError naming the file and line when one holds a malformed line."""
    from posttrain.config import ConfigError

    unfinished = {s for s in stages if not is_complete(run.checkpoint_path(s))}
    # Only an unfinished stage's state counts: a finished one's is stale (a kill while
    # it was deleted may have left it half gone).
    saved = {s: _state_step(run, name) for s, name in MID_STAGE_STATES.items() if s in unfinished}

    def lost(row: dict[str, Any]) -> bool:
        stage, step = row.get("stage", ""), int(row.get("step", 0))
        if stage in saved:
            return step > saved[stage]
        if stage == "heldout":
            return "grpo" in saved and step > saved["grpo"]
        if stage.startswith("eval/"):
            return not run.eval_path(stage.split("/", 1)[1]).is_file()
        return stage in unfinished

    dropped = 0
    try:
        if run.metrics_path.is_file():
            dropped += _drop_rows(run.metrics_path, read_metrics(run.metrics_path), lost)
        if run.alerts_path.is_file():
            dropped += _drop_rows(run.alerts_path, read_alerts(run.alerts_path), lost)
    except ValueError as exc:  # "PATH:LINE: not a JSON line: ..."
        raise ConfigError(f"resume: {exc}; mend or delete that line, then resume again") from None
    return dropped


def unlogged_rows(
    run: RunDir, stage: str, saved: list[tuple[int, dict[str, float]]]
) -> list[tuple[int, dict[str, float]]]:
    """The rows of `stage` its checkpoint saved that `metrics.jsonl` lacks. The control
    arm's process saves its checkpoint, rows included, before the run logs those rows;
    a kill in between leaves the finished arm, which a resume takes, without them."""
    logged = set()
    if run.metrics_path.is_file():
        logged = {int(r["step"]) for r in read_metrics(run.metrics_path) if r["stage"] == stage}
    return [(int(step), values) for step, values in saved if int(step) not in logged]


def _drop_rows(
    path: Path, rows: list[dict[str, Any]], lost: Callable[[dict[str, Any]], bool]
) -> int:
    """Rewrite the JSON-lines file `path` (atomically) without the `lost` of its `rows`;
    the number dropped."""
    kept = [json.dumps(row, allow_nan=False) for row in rows if not lost(row)]
    dropped = len(rows) - len(kept)
    if dropped:
        atomic_write_text(path, "".join(line + "\n" for line in kept))
    return dropped


def _state_step(run: RunDir, name: str) -> int:
    """The step of a complete mid-stage state under checkpoints/`name`; 0 when there is
    none, or its state.json is missing or unreadable (no state: the stage starts over)."""
    path = run.checkpoint_path(name)
    if not is_complete(path):
        return 0
    try:
        return int(json.loads((path / STATE_JSON).read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def prepare_resume(run: RunDir) -> None:
    """Make a run directory ready to continue, holding its lock (`RunDir.lock`): remove
    what crashed atomic writes and deletes left under it (`sweep_leftovers`), forget
    what the resume redoes (`forget_unfinished`), remove the mid-stage states it took
    for none (beside a finished stage, or without a readable `state.json`), and write TensorBoard's files again
    from the rows kept (every time: an earlier resume may have been killed between the
    two; about 40 µs a value)."""
    from posttrain.config import ConfigError

    sweep_leftovers(run.checkpoints)
    sweep_leftovers(run.path)
    forget_unfinished(run, STAGES)
    for stage, name in MID_STAGE_STATES.items():  # what forget_unfinished took for none
        state = run.checkpoint_path(name)
        finished = is_complete(run.checkpoint_path(stage))
        if is_complete(state) and (finished or _state_step(run, name) == 0):
            remove_directory(state)  # so that no loader reads it: the stage starts over
    if run.tb_dir.is_dir():
        try:
            rewrite_tensorboard(run)
        except ValueError as exc:
            raise ConfigError(f"resume: {exc}") from None


def record_data_files(run: RunDir, config: RunConfig) -> None:
    """Write `data_files.json`: the path, size and sha256 of each users' data file the
    run reads (`sft.data_file`, `dpo.data_file`, `datasets[].path`), for a resume to check."""
    record = {name: {"path": path, **_fingerprint(path)}
              for name, path in _data_files(config).items()}  # fmt: skip
    atomic_write_text(run.data_files_path, json.dumps(record, indent=1) + "\n")


def check_data_files(run: RunDir, config: RunConfig) -> None:
    """ConfigError naming the file when a data file differs from the one the run started
    with (another path, size or sha256), so a resume never trains on other data. A run
    without `data_files.json` (started before it was written) is not checked."""
    from posttrain.config import ConfigError

    if not run.data_files_path.is_file():
        return
    try:
        record = json.loads(run.data_files_path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"resume: {run.data_files_path} cannot be read: {exc}") from None
    current = _data_files(config)
    for name in sorted(set(record) | set(current)):
        was, path = record.get(name), current.get(name)
        was = was if isinstance(was, dict) else {}
        if path is None or path != was.get("path"):
            raise ConfigError(f"resume: {name} is {path!r} in config.yaml, but the run "
                              f"started with {was.get('path')!r}")  # fmt: skip
        try:
            now = _fingerprint(path)
        except OSError as exc:
            raise ConfigError(f"resume: {name} {path} cannot be read: {exc.strerror}") from None
        if now != {"size": was.get("size"), "sha256": was.get("sha256")}:
            raise ConfigError(
                f"resume: {name} {path} has changed since the run started (its size or "
                "sha256 differs); put the original back, or start a new run"
            )


def _data_files(config: RunConfig) -> dict[str, str]:
    """{field: path} of the users' data files the run reads (those of enabled stages)."""
    s, d = config.sft, config.dpo
    files = {"sft.data_file": s.data_file if s.enabled else None,
             "dpo.data_file": d.data_file if d.enabled else None}  # fmt: skip
    files |= {f"datasets[{i}].path ({d.id})": d.path for i, d in enumerate(config.datasets)}
    return {name: path for name, path in files.items() if path}


def _fingerprint(path: str) -> dict[str, Any]:
    """{"size", "sha256"} of the file at `path`."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"size": size, "sha256": digest.hexdigest()}


def save_sft_state(
    path: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loop: SFTLoop,
    elapsed_s: float,
) -> Path:
    """An SFT stage's state after `loop.step` (every rank calls it: each writes its shard,
    and its torch and Python RNGs, which LoRA dropout draws from, go in through
    `capture_rank_rng`, a collective)."""
    rng = _rng_to_json(capture_rank_rng(None))
    return save_sharded(path, model, optimizer, {**loop.to_dict(), "elapsed_s": elapsed_s,
                                                 "rng": rng})  # fmt: skip


def load_sft_state(
    path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> tuple[SFTLoop, float]:
    """Load `save_sft_state`'s weights and optimizer into `model` and `optimizer`, and
    its RNGs into this rank's global generators; returns the loop to resume and the
    seconds the stage had run."""
    state = load_sharded(path, model, optimizer)
    elapsed = float(state.pop("elapsed_s"))
    rng = state.pop("rng", None)  # None: a state saved before RNGs were kept
    loop = SFTLoop.from_dict(state)
    if rng is not None:
        restore_rank_rng(_rng_from_json(rng), None, loop.step)
    return loop, elapsed


def _rng_to_json(rng: dict[str, Any]) -> dict[str, Any]:
    """`capture_rank_rng(None)` as JSON: torch's state as base64, Python's as lists."""
    return {"ranks": [{"torch": base64.b64encode(r["torch"].numpy().tobytes()).decode(),
                       "python": r["python"]} for r in rng["ranks"]]}  # fmt: skip


def _rng_from_json(data: dict[str, Any]) -> dict[str, Any]:
    ranks = []
    for r in data["ranks"]:
        raw = bytearray(base64.b64decode(r["torch"]))
        version, internal, gauss = r["python"]  # JSON turned getstate()'s tuples into lists
        ranks.append({"torch": torch.frombuffer(raw, dtype=torch.uint8).clone(),
                      "python": (version, tuple(internal), gauss), "engine": None})  # fmt: skip
    return {"ranks": ranks}


def train_state(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Full model and optimizer state keyed by parameter names, gathered from the
    shards under FSDP (a collective: every rank calls it; rank 0 gets the tensors, on
    CPU): what `load_train_state` loads into a run of any world size and strategy."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_state_dict(model, optimizer, options=options)


def load_train_state(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    model_state: dict[str, Any],
    optimizer_state: dict[str, Any],
) -> None:
    """Load `train_state`'s output (every rank reads the same full state)."""
    set_state_dict(
        model,
        optimizer,
        model_state_dict=model_state,
        optim_state_dict=optimizer_state,
        options=StateDictOptions(full_state_dict=True),
    )


def capture_rank_rng(engine: Any) -> dict[str, Any]:
    """`capture_rng` of every rank (a collective under torchrun), as {"ranks": [...]}."""
    mine = capture_rng(engine)
    if not is_distributed():
        return {"ranks": [mine]}
    every: list[dict[str, Any] | None] = [None] * world_size()
    dist.all_gather_object(every, mine)
    return {"ranks": every}


def restore_rank_rng(rng: dict[str, Any], engine: Any, step: int) -> None:
    """This rank's generators from `capture_rank_rng`. A rank the saved run did not
    have (resumed on more ranks) takes rank 0's and reseeds them from its rank and the
    step, so ranks still sample differently. A state saved before ranks were recorded
    is rank 0's."""
    states = rng.get("ranks", [rng])
    if rank() < len(states):
        restore_rng(states[rank()], engine)
        return
    restore_rng(states[0], engine)
    seed = rank_seed(step)
    torch.manual_seed(seed)
    random.seed(seed)
    generator = getattr(engine, "generator", None)
    if isinstance(generator, torch.Generator):
        generator.manual_seed(seed)
