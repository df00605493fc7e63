"""The two baselines `bench.py` measures the warm pool against, one execution each.

- `FreshBwrap`: a fresh bubblewrap per execution, on the sandbox's own command line
  (same flags, uid drop, seccomp program, rlimits via `prlimit`, task environment).
- `plain`: an unisolated `python3 -S` subprocess in a fresh temp dir.

Both run the sandbox's interpreter with our packages, as the fork-server does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence

from posttrain.sandbox import layers
from posttrain.sandbox.inside.tasks import TASK_ENV
from posttrain.sandbox.results import SandboxSpec, task_rlimits
from posttrain.sandbox.sandbox import SANDBOX_TMP, WORKSPACE


def _task_env(home: str, site: str) -> dict[str, str]:
    """The environment the fork-server gives a task (`TASK_ENV` plus PYTHONPATH, HOME)."""
    return {**TASK_ENV, "PYTHONPATH": site, "HOME": home}


def _communicate(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return -9, out.decode(errors="replace"), "timed out; " + err.decode(errors="replace")
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


class FreshBwrap:
    """One bubblewrap sandbox per execution, on the sandbox's own command line."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        full = layers.launch_argv(
            "bwrap", fd=3, workspace=WORKSPACE, tmp=SANDBOX_TMP, preload=[], seccomp_fd=-1,
            tmpfs_bytes=spec.tmpfs_mb << 20, host_dir="",
        )  # fmt: skip
        # launch_argv ends with `PYTHON -S -m inside.server FD ...`: keep everything before it
        at = full.index("inside.server")
        if full[at - 2 : at] != ["-S", "-m"]:
            raise RuntimeError(f"unexpected sandbox command line tail: {full[at - 3 :]}")
        self.python = full[at - 3]
        self.prefix = full[: at - 3]
        self.prefix[self.prefix.index("--chdir") + 1] = WORKSPACE  # tasks start in the workspace
        for key, value in _task_env(WORKSPACE, layers.SANDBOX_SITE).items():
            self.prefix += ["--setenv", key, value]
        self.seccomp = layers.seccomp_program()

    def run(self, argv_tail: Sequence[str], timeout: float, files: dict[str, str] | None = None) -> tuple[int, str, str]:  # fmt: skip
        """Run `python3 -S ARGV_TAIL` in a fresh sandbox with `files` in its workspace."""
        fds: list[int] = []
        argv = list(self.prefix)
        try:
            if self.seccomp is not None:
                fds.append(_memfd("seccomp", self.seccomp))
                argv += ["--seccomp", str(fds[-1])]
            for name, text in (files or {}).items():
                fds.append(_memfd("file", text.encode()))
                argv += ["--file", str(fds[-1]), f"{WORKSPACE}/{name}"]
            limits = task_rlimits(self.spec, timeout)
            argv += ["/usr/bin/prlimit", *(f"--{k}={v}" for k, v in limits.items()), "--"]
            argv += [self.python, "-S", *argv_tail]
            proc = subprocess.Popen(
                argv, pass_fds=fds, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"},
                start_new_session=True, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
        finally:
            for fd in fds:
                os.close(fd)
        return _communicate(proc, timeout)


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(f"posttrain-bench-{name}", 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def plain(python: str, argv_tail: Sequence[str], timeout: float, files: dict[str, str] | None = None) -> tuple[int, str, str]:  # fmt: skip
    """Run `python3 -S ARGV_TAIL` unisolated in a fresh temp dir holding `files`."""
    with tempfile.TemporaryDirectory(prefix="posttrain-bench-") as workdir:
        for name, text in (files or {}).items():
            with open(os.path.join(workdir, name), "w") as f:
                f.write(text)
        env = {**_task_env(workdir, layers.site_packages()), "TMPDIR": workdir}
        proc = subprocess.Popen(
            [python, "-S", *argv_tail], cwd=workdir, env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        return _communicate(proc, timeout)
