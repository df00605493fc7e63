"""SFT, DPO or GRPO runs of the tiny model on synthetic data, under torchrun or in process.

The distributed tests start it with `posttrain.train.distributed.launch`:

    launch([__file__, "--task", "sft", "--strategy", "ddp", "--out", out], nproc=2)

and call `run(Args(...))` in process for the single-process baseline. Rank 0 writes
`metrics.json` (the logged stats per step) into `--out`; with `--audit DIR` every rank
records, in `DIR/rank{r}.json`, the paths under `--out` it opened for writing,
created, renamed or removed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

from posttrain.config import DPOConfig, GRPOConfig, RolloutConfig, SFTConfig, TrainConfig
from posttrain.domains.base import Axes
from posttrain.engines.base import Completion, GenerationRequest
from posttrain.models.loading import load_policy
from posttrain.ranks import is_main, rank
from posttrain.train import distributed as ddist
from posttrain.train.dpo import PreferencePair, train_dpo
from posttrain.train.grpo import train_grpo
from posttrain.train.mixture import TaskSampler
from posttrain.train.preemption import Preempted, StopSignals
from posttrain.train.sft import SFTLoop, sft_optimizer, train_sft
from posttrain.types import Message, Reference, Rollout, Task, Verdict

VOCAB = 250


@dataclass
class Args:
    tasks: str = "sft"  # "sft", "dpo", "grpo" or e.g. "sft,dpo" (in turn, same model)
    strategy: str = "none"
    steps: int = 6
    batch: int = 8
    out: str | None = None
    save_at: int = 0
    ckpt: str | None = None
    resume: str | None = None
    merged: str | None = None
    kill_rank: int = -1
    kill_step: int = 0
    audit: str | None = None
    rollout: str = "lockstep"  # GRPO's rollout.mode: lockstep, or scheduled (on rank 0)
    guidance: int = 0  # 1: GRPO with grpo.guidance, and every even-seed group fails
    stop_rank: int = -1  # GRPO: this rank gets SIGTERM in step stop_step's after_step
    stop_step: int = 0


def synthetic_rollout(rng: random.Random, i: int) -> Rollout:
    prompt = [rng.randrange(3, VOCAB) for _ in range(rng.randint(4, 16))]
    completion = [rng.randrange(3, VOCAB) for _ in range(rng.randint(3, 14))]
    mask = [int(rng.random() > 0.1) for _ in completion]
    return Rollout(
        id=f"r{i}", task_id=f"t{i}", domain="synthetic/v1", difficulty=1,
        prompt_ids=prompt, completion_ids=completion, loss_mask=mask,
        logprobs=[-1.0] * len(completion), messages=[Message("user", "x")], turns=[],
        verdict=Verdict(1.0, True, "synthetic"),
    )  # fmt: skip


def sft_data() -> tuple[list[Rollout], list[Rollout]]:
    rng = random.Random(7)
    data = [synthetic_rollout(rng, i) for i in range(40)]
    return data[:32], data[32:]


def sft_config(args: Args) -> SFTConfig:
    return SFTConfig(
        batch_size=args.batch, lr=3e-3, warmup_steps=2, max_steps=args.steps,
        eval_every=1, patience=100, micro_batches=2, max_minutes=10.0,
    )  # fmt: skip


def run(args: Args) -> dict[str, Any]:
    """Train as `args` says; returns {"stats": {task: {step: stats}}, "state": weights}."""
    torch.set_num_threads(1)
    info = ddist.init_distributed("cpu", timeout_s=30.0)
    if args.audit:
        _audit_writes(Path(args.out or "."), Path(args.audit) / f"rank{info.rank}.json")
    policy = load_policy("tiny", seed=0)
    replica = ddist.PolicyReplica(policy.model, TrainConfig(strategy=args.strategy))  # type: ignore[arg-type]
    model = replica.trained
    if info.rank == args.kill_rank:
        _kill_during_step(model, args.kill_step)
    stats: dict[str, dict[int, dict[str, float]]] = {}
    pad = policy.tokenizer.pad_token_id  # type: ignore[attr-defined]
    for task in args.tasks.split(","):
        log = stats.setdefault(task, {}).__setitem__
        if task == "sft":
            _run_sft(args, model, pad, log)
        elif task == "grpo":
            _run_grpo(args, replica, policy.tokenizer, log)
        else:  # 16 pairs in batches of 5, 2-3 micro-batches each: a 1-pair micro-batch
            # (and the last batch) is a stand-in on rank 1
            pairs = [PreferencePair(*sft_data()[0][i : i + 2]) for i in range(0, 32, 2)]
            cfg = DPOConfig(
                batch_size=5, micro_batch_tokens=100, lr=1e-3, epochs=1, max_minutes=10.0
            )
            train_dpo(model, pairs, pairs[:4], cfg, pad, log=log)
    if args.merged:
        ddist.save_merged(Path(args.merged), model, policy.tokenizer)
    if args.out and is_main():
        (Path(args.out) / "metrics.json").write_text(json.dumps(stats))
    full = get_model_state_dict(
        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
    )
    ddist.close_distributed()
    return {"stats": stats, "state": full}


def _run_sft(args: Args, model: Any, pad: int, log: Any) -> None:
    train, val = sft_data()
    cfg = sft_config(args)
    optimizer = sft_optimizer(model, cfg)
    resume = None
    if args.resume:
        resume = SFTLoop.from_dict(ddist.load_sharded(Path(args.resume), model, optimizer))

    def on_step(loop: SFTLoop, opt: torch.optim.Optimizer) -> None:
        if loop.step == args.save_at and args.ckpt:
            ddist.save_sharded(Path(args.ckpt), model, opt, loop.to_dict())

    train_sft(model, train, val, cfg, pad, log=log, optimizer=optimizer, resume=resume,
              on_step=on_step)  # fmt: skip


class SayYes:
    """A one-turn domain whose reward is 1 exactly when the answer is "yes"."""

    id = "test/say-yes-v1"
    axes = Axes("text", "none", "single", "exact")
    max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        prompt = [Message("user", f"say yes #{seed}")]
        return Task(f"{self.id}@{seed}.d{difficulty}", self.id, prompt, "yes", difficulty, seed)

    def reference(self, task: Task) -> Reference:
        return Reference.single("yes")

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        passed = rollout.final_text == "yes"
        return Verdict(float(passed), passed, "said yes" if passed else "did not say yes")


class ScriptedSampler:
    """Sample i of every request is `TEXTS[i % 4]` with logprobs -1: the same rollouts
    whichever rank runs a group, so one process and two ranks train on the same data."""

    TEXTS = ("yes", "no", "yes yes yes", "nope, no")

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def update_weights(self, state_dict: Any) -> None:
        pass

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        out = []
        for r in requests:
            row = []
            for i in range(r.params.n):
                text = self.TEXTS[i % len(self.TEXTS)]
                ids = [*self.tokenizer.encode(text, add_special_tokens=False),
                       self.tokenizer.eos_token_id]  # fmt: skip
                row.append(Completion(ids, [-1.0] * len(ids), text, "stop"))
            out.append(row)
        return out


def grpo_config(args: Args) -> GRPOConfig:
    """Two groups of 4 per step (one per rank), two minibatches of 4, micro-batches of
    about two rollouts, a KL term: every part of the update that ranks split."""
    return GRPOConfig(
        steps=args.steps, batch_size=8, group_size=4, minibatch_size=4, lr=1e-3,
        kl_coef=0.05, micro_batch_tokens=40, max_minutes=10.0, guidance=bool(args.guidance),
    )  # fmt: skip


class SayYesOnOddSeeds(SayYes):
    """SayYes, except that nothing passes on even seeds (where "maybe" is asked for): a
    group that only guidance's reference gives a gradient."""

    id = "test/say-yes-on-odd-seeds-v1"

    def reference(self, task: Task) -> Reference:
        return Reference.single("yes" if task.seed % 2 else "maybe")

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        passed = rollout.final_text == ("yes" if task.seed % 2 else "maybe")
        return Verdict(float(passed), passed, "as asked" if passed else "not as asked")


def _run_grpo(args: Args, replica: ddist.PolicyReplica, tokenizer: Any, log: Any) -> None:
    """With `stop_rank`, each rank writes `preempted{rank}.json` into `out`: the step
    `Preempted` named, whether it saved, and the steps of the states saved."""
    domain = SayYesOnOddSeeds() if args.guidance else SayYes()
    stops, saved = StopSignals(), []

    def after_step(step: int) -> None:
        if rank() == args.stop_rank and step == args.stop_step:
            os.kill(os.getpid(), signal.SIGTERM)  # latched by the handler below

    try:
        with stops.installed():
            train_grpo(
                replica.trained, tokenizer, ScriptedSampler(tokenizer),  # type: ignore[arg-type]
                TaskSampler([domain], "grpo"), lambda _: domain, grpo_config(args), max_tokens=8,
                log=log, replica=replica, rollout=RolloutConfig(mode=args.rollout),
                after_step=after_step, save_state=lambda state: saved.append(state.step),
                stop=stops,
            )  # fmt: skip
    except Preempted as exc:
        outcome = {"step": exc.step, "saved": exc.saved, "states": saved}
        (Path(args.out or ".") / f"preempted{rank()}.json").write_text(json.dumps(outcome))


def _kill_during_step(model: torch.nn.Module, step: int) -> None:
    """SIGKILL this process at the second forward pass of optimizer step `step`."""
    calls = {"n": 0}
    forwards_per_step = 2 + 1  # two micro-batches, then the validation chunk

    def hook(*_: Any) -> None:
        calls["n"] += 1
        if calls["n"] == (step - 1) * forwards_per_step + 2:
            os.kill(os.getpid(), signal.SIGKILL)

    model.register_forward_pre_hook(hook)


def _audit_writes(root: Path, report: Path) -> None:
    root = root.resolve()
    written: list[str] = []
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            mode, flags = args[1], args[2]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & write_flags
            )
            paths = [args[0]] if writing else []
        elif event in ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree"):
            paths = [a for a in args[:2] if isinstance(a, str | os.PathLike)]
        else:
            return
        for p in paths:
            if isinstance(p, str | os.PathLike) and str(Path(p).resolve()).startswith(str(root)):
                written.append(str(Path(p).resolve().relative_to(root)))

    sys.addaudithook(hook)
    import atexit

    atexit.register(lambda: report.write_text(json.dumps(sorted(set(written)))))


def main() -> None:
    parser = argparse.ArgumentParser()
    for name, default in vars(Args()).items():
        kind = int if isinstance(default, int) else str
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=default)
    run(Args(**vars(parser.parse_args())))


if __name__ == "__main__":
    main()
