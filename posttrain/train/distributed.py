"""Data-parallel training with torch.distributed: process group, wrapping, reductions, DCP.

The trainers (`train_sft`, `train_dpo`) call the helpers here and behave exactly as
before when no process group is up. Under `torchrun`, every rank runs the same loop
over the same global batch order (seeded by the run seed) and takes its own share
of each batch; gradients are averaged by DDP or FSDP2, and the loss is scaled by the
world size so that the averaged gradient equals the single-process one.

    info = init_distributed(device="cpu", timeout_s=30)   # reads torchrun's env vars
    model = wrap_model(policy.model, "fsdp")               # or "ddp", "none"
    result = train_sft(model, examples, val, cfg, pad_id, log=main_only(log))
    save_sharded(run / "ckpt", model, optimizer, {"step": 6})  # every rank writes its shard
    save_merged(run / "model", model, policy.tokenizer)     # rank 0 writes a plain HF dir
    close_distributed()

`launch(args, nproc)` starts `torchrun` on this machine and raises `RankFailedError`
naming the first rank that failed.

Not guaranteed: every rank must build the same model (DDP broadcasts rank 0's
weights; `wrap_model` does so for FSDP too, before sharding). Collectives assume all
ranks take the same branches: callers decide anything clock-based through
`any_rank`. FSDP2 is applied per decoder layer and at the root (no tensor or
pipeline parallelism). A sharded checkpoint holds model and optimizer state plus a
JSON `state`; the merged directory is gathered in rank 0's CPU memory.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.nn.parallel import DistributedDataParallel

from posttrain.config import TrainConfig
from posttrain.ranks import (
    barrier,
    is_distributed,
    is_main,
    rank,
    world_size,
)
from posttrain.store.atomic import COMPLETE_MARKER, atomic_directory, publish_directory

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
Strategy = Literal["none", "ddp", "fsdp"]
STATE_FILE = "state.json"
SHARDS_DIR = "shards"


class DistributedError(RuntimeError):
    """A distributed setting that cannot run (the message says which and why)."""


class RankFailedError(RuntimeError):
    """A `torchrun` job ended with a failed rank; the message names it."""


@dataclass(frozen=True)
class DistInfo:
    rank: int
    local_rank: int
    world_size: int
    backend: str | None  # None: a single process, no process group


# ---- process group ---------------------------------------------------------------------


def init_distributed(device: str = "cpu", timeout_s: float = 30.0) -> DistInfo:
    """Join the process group `torchrun` describes (RANK, WORLD_SIZE, MASTER_ADDR ...).

    Without those variables this is a single process and nothing is set up. The
    backend is nccl on CUDA, gloo on CPU; `timeout_s` bounds every collective, so a
    rank whose peer died fails instead of hanging."""
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        return DistInfo(0, 0, 1, None)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda":
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    return DistInfo(dist.get_rank(), local_rank, dist.get_world_size(), backend)


def close_distributed() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def main_only(fn: Callable[P, R] | None) -> Callable[P, R | None] | None:
    """`fn` on rank 0 (its result passed on), a no-op returning None elsewhere: the
    guard for anything that writes files."""
    if fn is None:
        return None

    def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
        return fn(*args, **kwargs) if is_main() else None

    return guarded


def rank_seed(seed: int) -> int:
    """A seed of this rank's own (sampling, dropout); data order keeps the run seed."""
    return seed + 1_000_003 * rank()


def seed_rank(seed: int) -> None:
    torch.manual_seed(rank_seed(seed))
    random.seed(rank_seed(seed))


# ---- sharing work and reducing results -------------------------------------------------


def local_share(items: Sequence[T]) -> tuple[list[T], float]:
    """This rank's items (every world-th, from its rank) and their weight, 1.0.

    A rank left without items gets the first one with weight 0.0, so that every
    rank runs the same forward and backward passes (FSDP gathers weights in each)."""
    mine = list(items[rank() :: world_size()])
    if mine or not items:
        return mine, 1.0
    return [items[0]], 0.0


@contextlib.contextmanager
def gradient_sync(model: nn.Module, enabled: bool) -> Iterator[None]:
    """Skip the gradient all-reduce inside (`enabled=False`) while micro-batches accumulate."""
    if enabled or not is_distributed():
        yield
    elif isinstance(model, DistributedDataParallel):
        with model.no_sync():
            yield
    elif isinstance(model, FSDPModule):
        model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            model.set_requires_gradient_sync(True)
    else:
        yield


# ---- wrapping --------------------------------------------------------------------------


def resolve_device(device: str) -> str:
    """The device to use: "auto" is cuda when torch sees a GPU, else cpu."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def prepare_model(model: nn.Module, cfg: TrainConfig) -> nn.Module:
    """`model` set up as the `train:` block says: device, activation checkpointing,
    the data-parallel wrapper and precision (`wrap_model`), then torch.compile."""
    device = resolve_device(cfg.device)
    if cfg.grad_checkpointing:
        names = ("activation_checkpointing_enable", "gradient_checkpointing_enable")
        enable: Callable[[dict[str, bool]], None] = next(  # the new name, else the old one
            getattr(model, n) for n in names if hasattr(model, n)
        )
        enable({"use_reentrant": False})
    wrapped = wrap_model(model, cfg.strategy, device, cfg.precision)
    if cfg.compile:
        wrapped.compile()  # in place: the module keeps its class and state_dict keys
    return wrapped


def wrap_model(
    model: nn.Module, strategy: Strategy, device: str = "cpu", precision: str = "fp32"
) -> nn.Module:
    """`model` on `device`, wrapped for data parallelism.

    "ddp" returns a DistributedDataParallel; "fsdp" shards each decoder layer and the
    root in place (`fully_shard`) and returns the same module; "none" returns it as
    is. bf16 keeps fp32 weights and optimizer state: FSDP computes in bf16 and reduces
    in fp32, the others run forward under autocast."""
    if strategy not in ("none", "ddp", "fsdp"):
        raise DistributedError(f"train.strategy must be none, ddp or fsdp, got {strategy!r}")
    if strategy == "fsdp" and not _decoder_layers(model):
        raise DistributedError(
            f"train.strategy='fsdp' cannot shard {type(model).__name__}: it has no "
            "decoder layers at model.model.layers, so one FSDP unit would hold every "
            "weight (no memory saved); use train.strategy='ddp'"
        )
    if strategy != "none" and not is_distributed():
        raise DistributedError(
            f"train.strategy={strategy!r} needs a process group: start with torchrun"
        )
    model.to(device)
    bf16 = precision == "bf16"
    if strategy == "ddp":
        if bf16:
            _autocast_forward(model, device)
        ids = [torch.cuda.current_device()] if device == "cuda" else None
        # Llama has no running buffers, so no per-forward buffer broadcast (a collective).
        return DistributedDataParallel(model, device_ids=ids, forward_sync_buffers=False)
    if strategy == "fsdp":
        with torch.no_grad():  # ranks may have built different weights; rank 0's win
            for p in model.parameters():
                dist.broadcast(p.data, src=0)
        mp = (
            MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            if bf16
            else MixedPrecisionPolicy()
        )
        for layer in _decoder_layers(model):
            fully_shard(layer, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        return model
    if bf16:
        _autocast_forward(model, device)
    return model


class PolicyReplica:
    """The module the optimizer trains and the plain model everything else uses.

    `plain` is an ordinary transformers model with the full weights: the inference
    engine samples from it, evaluation scores it, checkpoints save it. `trained` is
    what the trainers step: `plain` itself without a strategy, `plain` inside a DDP
    wrapper (the same parameters), or under FSDP a sharded copy, whose full weights
    `sync()` gathers back into `plain` after each update (an all-gather: every rank
    calls it). Generation never runs on a sharded module: its forwards are
    collectives, and ranks sample different lengths.

    Not guaranteed: under FSDP every rank holds a full copy of the weights for its
    engine besides its shard (the colocated-engine trade: memory for simplicity).
    """

    def __init__(self, plain: nn.Module, cfg: TrainConfig) -> None:
        self.plain = plain
        self.strategy = cfg.strategy
        if cfg.strategy == "fsdp":
            plain.to(resolve_device(cfg.device))
            self.trained = prepare_model(copy.deepcopy(plain), cfg)
            self.sync()  # rank 0's weights everywhere, as DDP does for `plain` itself
        else:
            self.trained = prepare_model(plain, cfg)

    def load(self, state_dict: dict[str, Any]) -> None:
        """Full weights (a finished stage's checkpoint) into `plain` and, when it is a
        separate sharded copy, into `trained` too."""
        with torch.no_grad():
            self.plain.load_state_dict(state_dict)
        if self.strategy == "fsdp":
            set_model_state_dict(
                self.trained, state_dict, options=StateDictOptions(full_state_dict=True)
            )

    def sync(self) -> None:
        """Bring `plain` up to the trained weights (a no-op unless sharded)."""
        if self.strategy != "fsdp":
            return
        full = get_model_state_dict(self.trained, options=StateDictOptions(full_state_dict=True))
        with torch.no_grad():
            self.plain.load_state_dict(full)


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP wrapper (an FSDP2 module is its own model)."""
    return model.module if isinstance(model, DistributedDataParallel) else model


def _decoder_layers(model: nn.Module) -> list[nn.Module]:
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    return list(layers) if isinstance(layers, nn.ModuleList) else []


def _autocast_forward(model: nn.Module, device: str) -> None:
    model.forward = torch.autocast(device, dtype=torch.bfloat16)(model.forward)  # type: ignore[method-assign]


# ---- checkpoints -----------------------------------------------------------------------


def save_sharded(
    path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
) -> Path:
    """Model and optimizer state through torch.distributed.checkpoint (each rank writes
    its own shard file), plus `state` as JSON from rank 0; loadable at any world size.

    Written under a temporary sibling that rank 0 fsyncs, marks `COMPLETE` and moves
    into place once every rank is done (`store.atomic.publish_directory`): a crash
    mid-save leaves nothing that looks finished, and the previous checkpoint at `path`
    is replaced only by a complete one."""
    path = Path(path)
    # One name every rank can compute without talking: ranks are separate processes.
    tmp = path.parent / f".{path.name}.tmp"
    if is_main():
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    barrier()
    model_sd, optim_sd = get_state_dict(model, optimizer)
    with _single_process_quiet():
        dcp.save(
            {"model": model_sd, "optim": optim_sd},
            checkpoint_id=str(tmp / SHARDS_DIR),
            no_dist=not is_distributed(),
        )
    barrier()
    if is_main():
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=2, sort_keys=True))
        publish_directory(tmp, path)
    barrier()
    return path


def load_sharded(path: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Load a `save_sharded` checkpoint into `model` and `optimizer` (resharded to this
    run's world size and strategy); returns the saved `state`."""
    path = Path(path)
    if not (path / COMPLETE_MARKER).is_file():
        raise FileNotFoundError(f"no complete sharded checkpoint at {str(path)!r}")
    model_sd, optim_sd = get_state_dict(model, optimizer)
    loaded: dict[str, Any] = {"model": model_sd, "optim": optim_sd}
    with _single_process_quiet():
        dcp.load(loaded, checkpoint_id=str(path / SHARDS_DIR), no_dist=not is_distributed())
    set_state_dict(
        model, optimizer, model_state_dict=loaded["model"], optim_state_dict=loaded["optim"]
    )
    state: dict[str, Any] = json.loads((path / STATE_FILE).read_text())
    return state


@contextlib.contextmanager
def _single_process_quiet() -> Iterator[None]:
    """DCP warns on every call without a process group; one process is intended here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def save_merged(path: Path, model: nn.Module, tokenizer: Any) -> Path:
    """A plain transformers model directory of the full weights, written by rank 0
    (every rank must call it: gathering the shards is a collective)."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    full = get_model_state_dict(model, options=options)
    if is_main():
        inner = unwrap(model)
        with atomic_directory(path) as tmp:
            inner.save_pretrained(tmp, state_dict=full)  # type: ignore[operator]
            tokenizer.save_pretrained(tmp)
    barrier()
    return Path(path)


# ---- launching -------------------------------------------------------------------------

_ROOT_CAUSE = re.compile(
    r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)[^\n]*?(?:\((\w+)\))?\s*$",
    re.S | re.M,
)


def launch(
    args: Sequence[str],
    nproc: int,
    timeout_s: float = 300.0,
    env: dict[str, str] | None = None,
    port: int = 0,
) -> subprocess.CompletedProcess[str]:
    """Run `torchrun --nproc-per-node nproc ARGS` on this machine (loopback rendezvous).

    Returns the finished process; raises RankFailedError naming the first failed rank
    (from torchrun's root-cause report), or when the job outlives `timeout_s`."""
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
        "--master-addr", "127.0.0.1", "--master-port", str(port or free_port()), *args,
    ]  # fmt: skip
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, env=full_env, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RankFailedError(f"torchrun did not finish within {timeout_s:.0f} s") from exc
    if done.returncode != 0:
        raise RankFailedError(failure_message(done.stderr + done.stdout, done.returncode))
    return done


def failure_message(output: str, returncode: int) -> str:
    """One line naming the failed rank, read from torchrun's root-cause report."""
    match = _ROOT_CAUSE.search(output)
    if match is None:
        tail = output.strip().splitlines()[-1:] or ["no output"]
        return f"torchrun exited with code {returncode}: {tail[0]}"
    failed_rank, code, signal_name = match.groups()
    how = f"signal {signal_name}" if signal_name else f"exit code {code}"
    return f"rank {failed_rank} failed ({how}); torchrun exited with code {returncode}"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
