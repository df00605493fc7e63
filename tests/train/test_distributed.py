"""Data-parallel SFT, DPO and GRPO under torchrun (gloo, 2 CPU ranks) against one process.

Each torchrun job (`distributed_worker.py`) runs once per module and several tests
read its outputs; the single-process baselines run in this process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from posttrain.config import ConfigError, load_config
from posttrain.train.distributed import RankFailedError, failure_message, launch
from tests.train.distributed_worker import Args, run

WORKER = str(Path(__file__).with_name("distributed_worker.py"))
ROOT = Path(__file__).resolve().parents[2]
LAUNCH_TIMEOUT = 300.0


def torchrun(out: Path, *flags: str) -> dict[str, Any]:
    """Run the worker on 2 ranks writing into `out`; its metrics.json and write audits."""
    (out / "audit").mkdir(parents=True)
    (out / "run").mkdir()
    args = [WORKER, "--out", str(out / "run"), "--audit", str(out / "audit"), *flags]
    launch(args, nproc=2, timeout_s=LAUNCH_TIMEOUT)
    return {
        "stats": json.loads((out / "run" / "metrics.json").read_text()),
        "writes": {r: json.loads((out / "audit" / f"rank{r}.json").read_text()) for r in (0, 1)},
    }


def step_losses(stats: dict[str, dict[str, float]]) -> list[float]:
    """Per-step SFT losses recovered from the logged EMA (0.9 * previous + 0.1 * step)."""
    emas = [stats[k]["loss"] for k in sorted(stats, key=int)]
    first = int(min(stats, key=int))
    if first > 1:
        raise ValueError("a resumed run's first EMA needs its predecessor")
    return [emas[0]] + [(b - 0.9 * a) / 0.1 for a, b in zip(emas, emas[1:], strict=False)]


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    common = sorted(set(a) & set(b))
    assert len(common) >= 10
    for key in common:
        torch.testing.assert_close(a[key].float(), b[key].float(), rtol=1e-3, atol=1e-4)


def as_str_keys(stats: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in stats.items()}


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One process: SFT (checkpointed after step 3), and separately SFT then DPO."""
    ckpt = tmp_path_factory.mktemp("single") / "ckpt"
    sft = run(Args(tasks="sft", ckpt=str(ckpt), save_at=3))
    both = run(Args(tasks="sft,dpo"))
    grpo = run(Args(tasks="grpo", steps=3))
    return {"sft": as_str_keys(sft["stats"]["sft"]), "sft_state": sft["state"], "ckpt": ckpt,
            "dpo": as_str_keys(both["stats"]["dpo"]),
            "grpo": as_str_keys(grpo["stats"]["grpo"])}  # fmt: skip


@pytest.fixture(scope="module")
def ddp_job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("ddp")
    return torchrun(out, "--strategy", "ddp", "--tasks", "sft,dpo")


@pytest.fixture(scope="module")
def fsdp_job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("fsdp")
    job = torchrun(out, "--strategy", "fsdp", "--ckpt", str(out / "run" / "ckpt"),
                   "--save-at", "3", "--merged", str(out / "run" / "model"))  # fmt: skip
    return {**job, "dir": out / "run"}


def test_ddp_sft_matches_the_single_process_loss_curve(
    single: dict[str, Any], ddp_job: dict[str, Any]
) -> None:
    ours, theirs = step_losses(ddp_job["stats"]["sft"]), step_losses(single["sft"])
    assert len(ours) == 6
    assert ours == pytest.approx(theirs, rel=1e-4)
    assert [s["val_loss"] for s in ddp_job["stats"]["sft"].values()] == pytest.approx(
        [s["val_loss"] for s in single["sft"].values()], rel=1e-4
    )


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_fsdp_sft_matches_the_single_process_loss_curve(
    single: dict[str, Any], fsdp_job: dict[str, Any]
) -> None:
    ours, theirs = step_losses(fsdp_job["stats"]["sft"]), step_losses(single["sft"])
    assert len(ours) == 6
    assert ours == pytest.approx(theirs, rel=1e-4)


def test_ddp_dpo_matches_the_single_process_loss_curve(
    single: dict[str, Any], ddp_job: dict[str, Any]
) -> None:
    ours, theirs = ddp_job["stats"]["dpo"], single["dpo"]
    assert list(ours) == ["1", "2", "3", "4"]  # 16 pairs in batches of 5: the last has one
    for key in ("loss", "margin"):
        assert [ours[s][key] for s in ours] == pytest.approx(
            [theirs[s][key] for s in theirs], rel=1e-4, abs=1e-6
        )
    # At step 1 the policy is the reference: margins are 0 up to rounding, and their sign
    # (reward_accuracy) depends on how the rows were padded.
    after = [s for s in ours if s != "1"]
    assert [ours[s]["reward_accuracy"] for s in after] == [
        theirs[s]["reward_accuracy"] for s in after
    ]


GRPO_KEYS = ("loss", "kl", "clip_frac", "reward", "entropy")


def same_grpo_curve(job: dict[str, Any], single: dict[str, Any]) -> None:
    """Per-step GRPO stats of a 2-rank job equal the single-process run's: the ranks
    sampled one group each and split every micro-batch, yet took the same updates."""
    assert sorted(job) == sorted(single["grpo"]) == ["1", "2", "3"]
    for step, values in job.items():
        for key in GRPO_KEYS:
            assert values[key] == pytest.approx(single["grpo"][step][key], rel=1e-4, abs=1e-6), (
                step, key)  # fmt: skip


def test_ddp_grpo_matches_the_single_process_run(single: dict[str, Any], tmp_path: Path) -> None:
    job = torchrun(tmp_path, "--strategy", "ddp", "--tasks", "grpo", "--steps", "3")
    same_grpo_curve(job["stats"]["grpo"], single)
    assert job["writes"][1] == []  # rank 1 logged nothing itself


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_ddp_grpo_with_the_scheduler_on_rank_zero_matches_the_single_process_run(
    single: dict[str, Any], tmp_path: Path
) -> None:
    """rollout.mode=scheduled: rank 0's scheduler samples every group and broadcasts
    them; with deterministic samples that is the lockstep run's batch."""
    job = torchrun(tmp_path, "--strategy", "ddp", "--tasks", "grpo", "--steps", "3",
                   "--rollout", "scheduled")  # fmt: skip
    same_grpo_curve(job["stats"]["grpo"], single)


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_ddp_grpo_with_guidance_matches_the_single_process_run(tmp_path: Path) -> None:
    """Guidance replays references and scores them on every rank's share, gathered back:
    both ranks train on the same groups, so the run is the single process's."""
    single = run(Args(tasks="grpo", steps=3, guidance=1))["stats"]["grpo"]
    assert [single[k]["guided_groups"] for k in sorted(single)] == [1.0, 1.0, 1.0]
    job = torchrun(tmp_path, "--strategy", "ddp", "--tasks", "grpo", "--steps", "3",
                   "--guidance", "1")  # fmt: skip
    same_grpo_curve(job["stats"]["grpo"], {"grpo": as_str_keys(single)})


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_fsdp_grpo_matches_the_single_process_run(single: dict[str, Any], tmp_path: Path) -> None:
    job = torchrun(tmp_path, "--strategy", "fsdp", "--tasks", "grpo", "--steps", "3")
    same_grpo_curve(job["stats"]["grpo"], single)


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_a_sigterm_to_one_fsdp_rank_stops_both_at_the_same_step_with_a_save(
    tmp_path: Path,
) -> None:
    """Rank 1 alone is signalled in step 2's after-step hook: the ranks agree right
    after it, both take part in the state's collective save, and both stop there."""
    torchrun(tmp_path, "--strategy", "fsdp", "--tasks", "grpo", "--steps", "5",
             "--stop-rank", "1", "--stop-step", "2")  # fmt: skip
    outcomes = [json.loads((tmp_path / "run" / f"preempted{r}.json").read_text()) for r in (0, 1)]
    assert outcomes[0] == {"step": 2, "saved": True, "states": [2]}  # rank 0 writes it
    assert outcomes[1] == {"step": 2, "saved": True, "states": []}


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_a_two_rank_fsdp_checkpoint_resumes_on_one_rank(
    single: dict[str, Any], fsdp_job: dict[str, Any]
) -> None:
    resumed = run(Args(tasks="sft", resume=str(fsdp_job["dir"] / "ckpt")))
    stats = as_str_keys(resumed["stats"]["sft"])
    assert list(stats) == ["4", "5", "6"]
    assert [stats[s]["loss"] for s in stats] == pytest.approx(
        [single["sft"][s]["loss"] for s in stats], rel=1e-4
    )
    same_weights(resumed["state"], single["sft_state"])


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_a_one_rank_checkpoint_resumes_on_two_ranks(single: dict[str, Any], tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    job = torchrun(tmp_path, "--strategy", "fsdp", "--resume", str(single["ckpt"]),
                   "--merged", str(tmp_path / "run" / "model"))  # fmt: skip
    stats = job["stats"]["sft"]
    assert list(stats) == ["4", "5", "6"]
    assert [stats[s]["loss"] for s in stats] == pytest.approx(
        [single["sft"][s]["loss"] for s in stats], rel=1e-4
    )
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "run" / "model"))
    same_weights(model.state_dict(), single["sft_state"])


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_the_merged_model_dir_loads_with_plain_transformers(
    single: dict[str, Any], fsdp_job: dict[str, Any]
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = str(fsdp_job["dir"] / "model")
    model = AutoModelForCausalLM.from_pretrained(path)
    assert AutoTokenizer.from_pretrained(path).pad_token_id is not None
    same_weights(model.state_dict(), single["sft_state"])


def test_only_rank_zero_writes_files(ddp_job: dict[str, Any]) -> None:
    assert ddp_job["writes"][1] == []
    assert "metrics.json" in ddp_job["writes"][0]


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_under_fsdp_rank_one_writes_only_its_checkpoint_shard(fsdp_job: dict[str, Any]) -> None:
    ours = fsdp_job["writes"][1]
    assert ours, "rank 1 holds a shard of the weights and must write it"
    assert all(p.startswith(".ckpt.tmp/shards") for p in ours), ours
    assert any(p.endswith(".distcp") for p in ours)


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_a_killed_rank_fails_the_job_with_its_rank_named(tmp_path: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(RankFailedError, match=r"rank 1 failed \(signal SIGKILL\)"):
        launch([WORKER, "--strategy", "ddp", "--kill-rank", "1", "--kill-step", "3"],
               nproc=2, timeout_s=LAUNCH_TIMEOUT)  # fmt: skip
    assert time.perf_counter() - start < 120  # the 30 s process-group timeout, not a hang


def test_failure_message_reads_the_root_cause_rank() -> None:
    report = (
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-01_06:53:00\n"
        "  host      : localhost\n  rank      : 3 (local_rank: 1)\n"
        "  exitcode  : 7 (pid: 31628)\n  error_file: <N/A>\n"
    )
    assert failure_message(report, 1) == "rank 3 failed (exit code 7); torchrun exited with code 1"


def test_bf16_on_a_cpu_without_native_bf16_is_refused_at_start_up() -> None:
    if torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported():
        pytest.skip("this CPU has native bf16")
    from posttrain.config import check_machine

    config = load_config(None, ["train.precision=bf16"])  # a GPU recipe validates anywhere
    with pytest.raises(ConfigError, match="no native bf16 instructions"):
        check_machine(config.train)


def test_the_train_block_defaults_to_one_cpu_process_in_fp32() -> None:
    train = load_config(None, []).train
    assert (train.device, train.precision, train.strategy) == ("cpu", "fp32", "none")


@pytest.mark.slow  # torchrun jobs; make test keeps the DDP job
def test_the_gpu_bench_dry_run_prints_one_json_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu.py"), "--dry-run"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    assert result["dry_run"] is True
    assert {r["model"] for r in result["runs"]} == {"smollm2-135m-shape", "llama-1b-shape"}
    assert all(r["tokens_per_s"] > 0 for r in result["runs"])
