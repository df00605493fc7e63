"""The recipe's entry point: start-up checks, the ranks under torchrun, the run directory.

`run_recipe(config)` checks what only the machine and the launcher can refuse
(`check_machine`, `check_launch`) and what the config alone cannot see (a package
that `logging.wandb` or `rollout.backend=ray` needs, a held-out set the domains
cannot fill), all before anything is written; joins torchrun's process group when
there is one, creates (or, with `resume`, reopens) the run directory and runs the
stages (`train/pipeline.py`), then writes `summary.md` and the HTML report.

Under `torchrun` with `train.strategy=ddp|fsdp` every rank runs the pipeline: the
stages train `PolicyReplica.trained` together, episodes (pair mining, GRPO groups,
evaluation) are shared out over the ranks, and rank 0 alone writes the run directory
(the other ranks log into a scratch directory that is removed at the end). The
control arm runs beside rank 0 as one process.

Rank 0 holds the run directory's lock (`RunDir.lock`) from creating or reopening it to
the end, so a second process on one run (two `resume=RUN` at once) exits 2 with "run RUN
is in use (pid N)". `resume=RUN` refuses every other setting given, even one equal to
its default. A new run stores `sft.data_file`, `dpo.data_file` and `datasets[].path`
absolute in its config.yaml and their size and sha256 in `data_files.json`; a resume
refuses a data file that has changed since.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import tempfile
from pathlib import Path

import torch
from pydantic import BaseModel
from transformers.utils import logging as hf_logging

from posttrain.config import ConfigError, RunConfig, check_machine
from posttrain.domains.base import Domain
from posttrain.models.loading import ModelNotFoundError, check_model_name
from posttrain.ranks import broadcast_object, is_main
from posttrain.store import MetricsLogger, RunDir, RunDirError, TraceStore
from posttrain.store.metrics import WandbMissing
from posttrain.train.data_files import DataFileError
from posttrain.train.distributed import close_distributed, init_distributed, resolve_device
from posttrain.train.mixture import MixtureError, mixture_weights
from posttrain.train.pipeline import Pipeline, RecipeResult
from posttrain.train.preemption import Preempted
from posttrain.train.recipe_inputs import check_heldout, check_reward_component, resolve_domains
from posttrain.train.reporter import QuietReporter, Reporter
from posttrain.train.resume import (
    check_data_files,
    open_for_resume,
    prepare_resume,
    record_data_files,
)
from posttrain.train.summary import summary_markdown

# What callers import from here (the CLI, the summary, tests): the entry point and its types.
__all__ = ["QuietReporter", "RecipeResult", "Reporter", "check_launch", "run_recipe"]


def run_recipe(config: RunConfig, reporter: Reporter | None = None) -> RecipeResult:
    """Run every enabled stage of `config`; returns evaluations and paired tests.
    With `config.resume` set, continue that run under its own saved config instead
    (finished stages are loaded, GRPO continues from its last full-state save)."""
    report = reporter or QuietReporter()
    resumed: RunDir | None = None
    if config.resume is not None:
        given = sorted(_given_settings(config) - {"resume"})
        if given:  # even one equal to its default: the run's own value may differ
            raise ConfigError(
                f"resume={config.resume} continues the run under its own config.yaml; "
                f"drop the other settings ({', '.join(given)})"
            )
        resumed, config = open_for_resume(config.resume)
        check_data_files(resumed, config)  # the same data as the run started with
    else:
        config = _absolute_data_files(config)
    check_machine(config.train)
    check_launch(config)
    domains = resolve_domains(config)
    try:
        mixture = mixture_weights(domains, config.mixture)
    except MixtureError as exc:
        raise ConfigError(str(exc)) from None
    try:
        check_model_name(config.model.name)
    except ModelNotFoundError as exc:
        raise ConfigError(f"model.name: {exc}") from None
    for field_name, path in (("sft.data_file", config.sft.data_file),
                             ("dpo.data_file", config.dpo.data_file)):  # fmt: skip
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{field_name}: {path!r} does not exist or is not a file")
    if config.logging.wandb and not _installed("wandb"):
        raise ConfigError("logging.wandb=true needs the wandb package: pip install wandb")
    if config.rollout.backend == "ray" and config.grpo.enabled and not _installed("ray"):
        raise ConfigError(
            "rollout.backend=ray needs the ray package: pip install posttrain[ray] "
            "(or use rollout.backend=local)"
        )
    if config.rollout.backend == "ray" and config.grpo.enabled and config.rollout.ray_address:
        check_ray_address(config.rollout.ray_address)
    check_heldout(config, domains)
    check_reward_component(config, domains)
    init_distributed(resolve_device(config.train.device), config.train.timeout_s)
    try:
        return _run_ranked(config, resumed, domains, mixture, report)
    finally:
        close_distributed()


def _given_settings(config: BaseModel, prefix: str = "") -> set[str]:
    """The dotted names of the settings `config` was given (a recipe or overrides), not
    those left at their defaults: `grpo.steps` for `grpo.steps=3000`."""
    names = set()
    for name in config.model_fields_set:
        value = getattr(config, name)
        inner = _given_settings(value, f"{prefix}{name}.") if isinstance(value, BaseModel) else None
        names |= inner or {prefix + name}
    return names


def _absolute_data_files(config: RunConfig) -> RunConfig:
    """`config` with `sft.data_file`, `dpo.data_file` and every `datasets[].path` made
    absolute against this working directory, as config.yaml then stores them: a resume
    started elsewhere reads the same files."""
    update: dict[str, object] = {}
    for stage in ("sft", "dpo"):
        settings = getattr(config, stage)
        if settings.data_file is not None:
            absolute = os.path.abspath(settings.data_file)
            update[stage] = settings.model_copy(update={"data_file": absolute})
    if config.datasets:
        update["datasets"] = [d.model_copy(update={"path": os.path.abspath(d.path)})
                              for d in config.datasets]  # fmt: skip
    return config.model_copy(update=update) if update else config


def check_ray_address(address: str, timeout_s: float = 5.0) -> None:
    """ConfigError unless something answers at `address` (`host:port` or
    `ray://host:port`; `auto` is Ray's own lookup, not checked): otherwise the run would
    evaluate and train SFT first and then hang where GRPO joins the cluster."""
    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"rollout.ray_address={address!r}: expected host:port or ray://host:port")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(
            f"rollout.ray_address={address!r}: no Ray cluster answers ({exc})"
        ) from None


def _installed(package: str) -> bool:
    """Whether `package` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a blocked import, or a module without a spec
        return False


def check_launch(config: RunConfig) -> None:
    """A strategy needs torchrun's ranks, and ranks need a strategy; every global batch
    must split evenly over them. ConfigError saying which."""
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    strategy = config.train.strategy
    if strategy != "none" and "WORLD_SIZE" not in os.environ:
        raise ConfigError(
            f"train.strategy={strategy} runs under torchrun, e.g. `torchrun "
            f"--nproc-per-node 2 -m posttrain run ... train.strategy={strategy}`; "
            "alone, use train.strategy=none"
        )
    if strategy == "none" and ranks > 1:
        raise ConfigError(
            f"{ranks} torchrun ranks but train.strategy=none: each would train its own "
            "copy; set train.strategy=ddp or fsdp"
        )
    if strategy == "fsdp" and config.model.lora.r is not None:
        raise ConfigError(
            "train.strategy=fsdp with model.lora.r set: peft's wrapper hides the decoder "
            "layers FSDP shards, and LoRA's few trainable weights gain nothing from "
            "sharding; use train.strategy=ddp with LoRA"
        )
    batches = (
        ("sft.batch_size", config.sft.batch_size),
        ("dpo.batch_size", config.dpo.batch_size),
        ("grpo.batch_size / grpo.group_size", config.grpo.batch_size // config.grpo.group_size),
    )
    for name, size in batches:
        if size % ranks:
            raise ConfigError(
                f"{name}={size} does not split over {ranks} ranks; make it a multiple of {ranks}"
            )


def _run_ranked(
    config: RunConfig,
    resumed: RunDir | None,
    domains: list[Domain],
    mixture: list[float] | None,
    report: Reporter,
) -> RecipeResult:
    """The run on this rank: rank 0 owns the run directory (and holds its lock until the
    end); the others read it (a resumed run's checkpoints) and write their logs into a
    scratch directory."""
    main = is_main()
    with contextlib.ExitStack() as stack:
        path: str | None = None
        error: ValueError | None = None
        if main:
            try:
                path = str(_own_run_dir(config, resumed, stack).path)
            except (ConfigError, RunDirError) as exc:
                error = exc
            except OSError as exc:  # a full disk, a read-only folder, a data file gone
                error = ConfigError(f"the run directory: {exc}")
        # Every rank learns rank 0's run directory, or why it has none (then all stop).
        path, error = broadcast_object((path, error))
        if error is not None:
            raise error
        run = RunDir(Path(str(path)))
        result = _run_in(config, run, resumed is not None, domains, mixture, report, stack)
    return result


def _own_run_dir(config: RunConfig, resumed: RunDir | None, stack: contextlib.ExitStack) -> RunDir:
    """Rank 0's run directory, locked until `stack` closes: the resumed one made ready to
    continue (`prepare_resume`), or a new one with its config and data files recorded."""
    if resumed is not None:
        stack.enter_context(resumed.lock())
        prepare_resume(resumed)
        return resumed
    run = RunDir.create(config.out_dir, config.name)
    stack.enter_context(run.lock())
    run.write_config(config.model_dump(mode="json"))
    record_data_files(run, config)
    return run


def _run_in(
    config: RunConfig,
    run: RunDir,
    resuming: bool,
    domains: list[Domain],
    mixture: list[float] | None,
    report: Reporter,
    stack: contextlib.ExitStack,
) -> RecipeResult:
    """The stages in `run`, then (rank 0) its summary and report."""
    main = is_main()
    hf_logging.disable_progress_bar()  # our own progress bars speak for the stages
    torch.set_num_threads(config.model.threads)
    torch.manual_seed(config.seed)
    result = RecipeResult(run.path)
    logs = run
    if not main:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="posttrain-rank-"))
        logs = RunDir.create(scratch, "run")
        report = QuietReporter()
    try:
        metrics = MetricsLogger(
            logs,
            tensorboard=config.logging.tensorboard and main,
            wandb=config.logging.wandb and main,
            wandb_config=config.model_dump(mode="json"),
        )
    except WandbMissing as exc:
        raise ConfigError(str(exc)) from None
    with metrics, TraceStore(logs.traces_path) as traces:
        try:
            pipeline = Pipeline(config, domains, run, metrics, traces, report, result,
                                mixture)  # fmt: skip
            pipeline.resuming = resuming
            with pipeline.stops.installed():  # SIGTERM / SIGUSR1: save and stop
                try:
                    pipeline.run()
                except Preempted as exc:
                    exc.run_dir = str(run.path)
                    raise
            result.degraded_traces = dict(traces.degraded)
        except DataFileError as exc:
            raise ConfigError(str(exc)) from None
    if main:
        run.write_summary(summary_markdown(config, result))
        from posttrain.eval.report import write_run_report  # matplotlib: only when reporting

        write_run_report(run.path)
    return result
