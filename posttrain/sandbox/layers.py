"""Isolation layers: what this machine offers, and the command lines that use it.

`doctor()` probes each layer and says why one is missing; `launch_argv()` builds the
command that starts a sandbox's fork-server under the strongest mode available:

- ``bwrap``: bubblewrap started under the unprivileged ``nobody`` uid (via setpriv),
  new user/pid/net/ipc/uts/mount namespaces, read-only ``/usr`` and the Python
  packages (an installed posttrain, with the domains' reference code, and the files of
  every distribution with a ``posttrain.domains`` entry point hidden: see `hidden`),
  private size-limited tmpfs for ``/workspace``, ``/tmp`` and ``/dev/shm``,
  everything else remounted read-only, empty environment,
  ``--die-with-parent --new-session --cap-drop ALL --disable-userns``, and
  ``--as-pid-1``: the fork-server itself is the namespace's pid 1 (no bubblewrap init
  without seccomp or rlimits that tasks could signal or patch; pid 1 ignores signals it
  has no handler for, so a task cannot SIGKILL or SIGSTOP it).
- ``unshare``: the fallback without bubblewrap, chosen automatically only as root:
  util-linux `unshare` namespaces; each live sandbox runs as a host uid of its own
  (`claim_uid`, from `SANDBOX_UIDS`; ``nobody`` inside, no capabilities), with rlimits,
  seccomp, cgroups. Its workspace and ``TMPDIR`` are host folders owned by that uid,
  mode 0700, under a per-process parent of mode 0711 (`private_host_dir`): other
  sandboxes can neither list nor open them. Weaker than bwrap: the host filesystem
  stays visible — world-readable files are readable, world-writable folders (the
  host's ``/tmp``, ``/var/tmp``, ``/dev/shm``) writable and never wiped (a later
  sandbox that draws the same uid can read what was left there), and world-writable
  UNIX sockets in them connectable.
- ``none``: trusted code only, by explicit request: a plain subprocess.

Seccomp (a deny-list compiled once by libseccomp through `pyseccomp`), rlimits and
cgroup v1 limits stack on the namespace mode. Nothing here runs model code.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import random
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from posttrain.sandbox import hidden

NOBODY = 65534
MODES = ("bwrap", "unshare", "none")
INSIDE_DIR = Path(__file__).with_name("inside")  # the fork-server's package, bound read-only
# In bwrap mode /opt/posttrain holds `inside/` (run as `-m inside.server`) and our
# packages, both read-only, wherever the venv lives on the host.
SANDBOX_OPT = "/opt/posttrain"
SANDBOX_SITE = f"{SANDBOX_OPT}/site-packages"
# Our own package: installed from a wheel it lies in a folder bound into the sandbox, with
# every domain's reference code (fixed templates, C sources), so it is hidden there, as
# are the files of third-party domain plugins (`hidden.plugin_paths`).
PACKAGE_DIR = str(Path(__file__).resolve().parents[1])

DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "bpf", "keyctl", "add_key", "request_key",
    "perf_event_open", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "userfaultfd",
    "open_by_handle_at", "name_to_handle_at", "fsopen", "fsmount", "fsconfig",
    "move_mount", "open_tree", "fspick", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "quotactl", "syslog", "lookup_dcookie", "iopl", "ioperm",
    "vhangup", "mount_setattr", "pidfd_getfd", "mq_open", "mq_unlink",
)  # fmt: skip
PID_TARGETED = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
                "sched_setattr", "ioprio_set")  # fmt: skip
TIOCSTI = 0x5412
CLONE_NEWUSER = 0x10000000


@dataclass(frozen=True)
class Layer:
    """One isolation layer: whether it is active here and why (or why not)."""

    name: str
    active: bool
    detail: str


# ----------------------------------------------------------------------------- probes


def _run_ok(argv: list[str]) -> tuple[bool, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return proc.returncode == 0, (proc.stderr or proc.stdout).strip()[-300:]


def _drop_uid_prefix(uid: int = NOBODY) -> list[str]:
    """Start the next command as `uid`, no groups, no inheritable capabilities."""
    if os.geteuid() != 0:
        return []
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all",
    ]  # fmt: skip


@functools.cache
def bwrap_status() -> tuple[bool, str]:
    path = shutil.which("bwrap")
    if path is None:
        return False, "bubblewrap is not installed (Debian package `bubblewrap`)"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return False, "running as root and `setpriv` (util-linux) is missing for the uid drop"
    ok, why = _run_ok(
        [*_drop_uid_prefix(), path, "--unshare-all", "--unshare-user", "--disable-userns",
         "--ro-bind", "/", "/", "--cap-drop", "ALL", "true"]
    )  # fmt: skip
    return ok, f"{path} works under uid {NOBODY}" if ok else f"bwrap fails here: {why}"


@functools.cache
def unshare_status() -> tuple[bool, str]:
    path = shutil.which("unshare")
    if path is None:
        return False, "util-linux `unshare` is not installed"
    ok, why = _run_ok([*_drop_uid_prefix(), path, *UNSHARE_FLAGS, "true"])
    return ok, f"{path} works under uid {NOBODY}" if ok else f"unshare fails here: {why}"


# Mapped to `nobody` inside too (not --map-root-user): the server and its tasks hold no
# capability in their user namespace, so they cannot lift the server's non-dumpable guard.
UNSHARE_FLAGS = [f"--map-user={NOBODY}", f"--map-group={NOBODY}", "--pid", "--fork",
                 "--mount-proc", "--net", "--ipc", "--uts", "--mount", "--kill-child"]  # fmt: skip


@functools.cache
def seccomp_program() -> bytes | None:
    """The deny-list as a BPF program (raw `sock_filter` array), or None without libseccomp."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError):
        return None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            f.add_rule(eperm, name)  # skipped: a call this kernel or libseccomp does not know
    f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
    f.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # flags live in memory BPF cannot read
    # Tasks share the server's uid: they may change their own limits, priority and CPUs
    # (pid 0), never another process's — the server's, which later tasks inherit.
    for name in PID_TARGETED:
        f.add_rule(eperm, name, sc.Arg(0, sc.NE, 0))
    f.add_rule(eperm, "setpriority", sc.Arg(0, sc.NE, 0))  # PRIO_PGRP / PRIO_USER
    f.add_rule(eperm, "setpriority", sc.Arg(1, sc.NE, 0))
    memfd = os.memfd_create("posttrain-bpf", 0)
    try:
        with os.fdopen(os.dup(memfd), "wb") as w:
            f.export_bpf(w)
        return os.pread(memfd, os.fstat(memfd).st_size, 0)
    except OSError:
        return None
    finally:
        os.close(memfd)


def seccomp_rule_count() -> int:
    """How many deny rules the compiled program carries (names this kernel lacks excluded)."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError):
        return 0
    known = 0
    for name in DENIED_SYSCALLS:
        with contextlib.suppress(Exception):
            sc.resolve_syscall(sc.system_arch(), name)
            known += 1
    return known + 4 + len(PID_TARGETED) + 2


def cgroup_v1_root(controller: str) -> Path | None:
    """The writable cgroup v1 hierarchy of `controller`, or None."""
    path = Path("/sys/fs/cgroup") / controller
    if (path / "cgroup.procs").exists() and os.access(path, os.W_OK):
        return path
    return None


def sandbox_python() -> str | None:
    """An interpreter the `nobody` uid can run whose version matches ours (so our packages load)."""
    want = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (
        os.path.realpath(sys.executable),
        f"/usr/bin/{want}",
        f"/usr/local/bin/{want}",
    ):
        if os.path.basename(candidate) == want and _world_reachable(candidate):
            return candidate
    return None


def site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


def _world_reachable(path: str) -> bool:
    """Whether `nobody` can traverse to and read `path` (every parent world-executable)."""
    p = Path(path)
    if not p.exists() or not (p.stat().st_mode & 0o004):
        return False
    return all(parent.stat().st_mode & 0o001 for parent in p.parents)


def doctor() -> list[Layer]:
    """Every layer with its state on this machine, strongest first."""
    bw_ok, bw_why = bwrap_status()
    un_ok, un_why = unshare_status()
    python = sandbox_python()
    layers = [
        Layer("namespaces (bubblewrap)", bw_ok and python is not None,
              bw_why if python else f"{bw_why}; but no interpreter readable by uid {NOBODY}"),
        Layer("namespaces (unshare fallback)", un_ok,
              un_why + ("" if not bw_ok else " (unused: bubblewrap is preferred)")),
        Layer("unprivileged uid", os.geteuid() != 0 or shutil.which("setpriv") is not None,
              f"tasks run as uid {NOBODY} on the host (unshare mode: a uid of their own per "
              f"sandbox, from {SANDBOX_UIDS.start})" if os.geteuid() == 0
              else f"already unprivileged (uid {os.geteuid()})"),
        Layer("seccomp", seccomp_program() is not None,
              f"deny-list of {seccomp_rule_count()} rules via libseccomp" if seccomp_program()
              else "pyseccomp or libseccomp2 missing: no syscall filter"),
        Layer("rlimits", True, "address space, CPU, file size, open files, processes, no core"),
    ]  # fmt: skip
    for controller in ("memory", "pids", "cpu"):
        root = cgroup_v1_root(controller)
        detail = f"cgroup v1 {root} writable: per-sandbox limit" if root else (
            f"no writable cgroup v1 `{controller}` hierarchy (cgroup v2 here lacks the "
            "controller or is read-only): rlimits only")  # fmt: skip
        layers.append(Layer(f"cgroup {controller}", root is not None, detail))
    return layers


def active_layers() -> list[str]:
    return [layer.name for layer in doctor() if layer.active]


def best_mode() -> str | None:
    """bwrap, else unshare — but only as root, where tasks can be dropped to `nobody`;
    unprivileged, the fallback would run tasks as the host user (ask for it by name)."""
    if bwrap_status()[0] and sandbox_python() is not None:
        return "bwrap"
    if unshare_status()[0] and os.geteuid() == 0:
        return "unshare"
    return None


# ----------------------------------------------------------------------------- uids, folders

# Host uids for unshare-mode sandboxes, one per live sandbox (no account needs to exist).
SANDBOX_UIDS = range(200_000, 265_536)
_claims: dict[int, socket.socket] = {}
_root: str | None = None  # this process's parent folder of sandbox host folders
_root_lock = threading.Lock()


def claim_uid() -> int:
    """A host uid no other live sandbox on this machine holds; `release_uid` gives it back.

    The claim is an abstract UNIX socket named after the uid, bound while the sandbox
    lives: it holds across processes and the kernel drops it if this process dies. The
    search starts at a random uid, so a freed uid is rarely handed out again soon.
    """
    start = random.randrange(len(SANDBOX_UIDS))
    for i in range(len(SANDBOX_UIDS)):
        uid = SANDBOX_UIDS[(start + i) % len(SANDBOX_UIDS)]
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            claim.bind(f"\0posttrain-sandbox-uid-{uid}")
        except OSError:
            claim.close()
            continue
        _claims[uid] = claim
        return uid
    raise OSError(errno.EAGAIN, f"every sandbox uid in {SANDBOX_UIDS} is taken")


def release_uid(uid: int) -> None:
    claim = _claims.pop(uid, None)
    if claim is not None:
        claim.close()


def private_host_dir(uid: int | None) -> str:
    """A new host folder holding `workspace/` and `tmp/` (mode 0700, owned by `uid` when
    given), inside this process's parent folder of mode 0711: other uids may pass through
    the parent but not list it, so a sandbox can neither find nor open another's folders.
    The parent is made on demand and removed with the last folder in it."""
    global _root
    with _root_lock:
        if _root is None:
            _root = tempfile.mkdtemp(prefix="posttrain-sandboxes-")
            os.chmod(_root, 0o711)
        host_dir = tempfile.mkdtemp(dir=_root)
    for name in ("workspace", "tmp"):
        os.mkdir(os.path.join(host_dir, name), 0o700)
        if uid is not None:
            os.chown(os.path.join(host_dir, name), uid, uid)
    if uid is not None:
        os.chmod(host_dir, 0o711)
    return host_dir


def remove_host_dir(path: str) -> None:
    """Remove a sandbox's host folder, read-only folders its tasks left in it too."""
    global _root
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if not os.path.islink(full):
                with contextlib.suppress(OSError):
                    os.chmod(full, 0o700)
    shutil.rmtree(path, ignore_errors=True)
    with _root_lock:
        if _root is not None and os.path.dirname(path) == _root:
            with contextlib.suppress(OSError):  # not empty: other sandboxes of ours live on
                os.rmdir(_root)
                _root = None


def _remove_root() -> None:
    """At exit: folders of sandboxes never closed go too (the parent's, in a forked child)."""
    if _root is not None:
        remove_host_dir(_root)


def _after_fork_in_child() -> None:
    """The parent's uid claims and folders are not ours: drop our copies of the claims
    (the parent keeps its own) and make a parent folder of our own when one is needed."""
    global _root, _root_lock
    _root, _root_lock = None, threading.Lock()
    for claim in _claims.values():
        claim.close()
    _claims.clear()


atexit.register(_remove_root)
os.register_at_fork(after_in_child=_after_fork_in_child)


# ----------------------------------------------------------------------------- launch


def launch_argv(mode: str, *, fd: int, workspace: str, tmp: str, preload: list[str],
                seccomp_fd: int, tmpfs_bytes: int, host_dir: str,
                uid: int = NOBODY) -> list[str]:  # fmt: skip
    """The command that starts the fork-server with control socket `fd`; `uid` is the host
    uid of an unshare-mode sandbox (bwrap mode always runs as `nobody`)."""
    sp = site_packages()
    scratch = f"{tmp}:/dev/shm" if mode == "bwrap" else tmp
    server_args = [str(fd), workspace, scratch, str(seccomp_fd), *preload]
    if mode == "none":
        return [sys.executable, "-S", "-m", "inside.server", *server_args]
    python = sandbox_python() or sys.executable
    if mode == "unshare":
        return [
            *_drop_uid_prefix(uid), "unshare", *UNSHARE_FLAGS, "env", "-i", f"PYTHONPATH={sp}",
            python, "-S", "-m", "inside.server", *server_args,
        ]  # fmt: skip
    argv = [
        *_drop_uid_prefix(), "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
        "--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
        "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
        # the sandbox's IPC sysctls (shmmax, msgmni, ...) would outlive a reset
        "--ro-bind", "/proc/sys", "/proc/sys",
        "--ro-bind", sp, SANDBOX_SITE, "--ro-bind", str(INSIDE_DIR), f"{SANDBOX_OPT}/inside",
        "--size", str(tmpfs_bytes), "--tmpfs", workspace,
        "--size", str(tmpfs_bytes), "--tmpfs", tmp,
        "--size", str(tmpfs_bytes), "--tmpfs", "/dev/shm",
        "--hostname", "sandbox", "--chdir", SANDBOX_OPT,
        "--setenv", "PYTHONPATH", SANDBOX_SITE, "--setenv", "PATH", "/usr/bin:/bin",
    ]  # fmt: skip
    for link in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{link}"):
            argv += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
    for extra in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(extra):
            argv += ["--ro-bind", extra, extra]
    bound = [("/usr", "/usr"), (sp, SANDBOX_SITE)]  # host folder, where tasks see it
    if not python.startswith("/usr/"):
        prefix = os.path.dirname(os.path.dirname(python))
        argv += ["--ro-bind", prefix, prefix]
        bound.append((prefix, prefix))
    argv += _hiding_args(bound)
    # Everything but /workspace, /tmp and /dev/shm (wiped between tasks) is read-only.
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
    return [*argv, python, "-S", "-m", "inside.server", *server_args]


def _hiding_args(bound: list[tuple[str, str]]) -> list[str]:
    """bwrap arguments that cover our package and every domain plugin's files (`hidden`)
    wherever a bound host folder (host, where tasks see it) holds them: an empty read-only
    tmpfs over a folder, ``/dev/null`` over a file (bound ``nodev``: opening it fails)."""
    args: list[str] = []
    for path in (os.path.realpath(PACKAGE_DIR), *hidden.plugin_paths()):
        if not _reachable_by_sandbox(path):
            continue  # tasks cannot open it, and bwrap (as them) could not mount over it
        for host, inside in bound:
            host = os.path.realpath(host)
            if os.path.commonpath([host, path]) != host:
                continue
            there = os.path.join(inside, os.path.relpath(path, host))
            if os.path.isdir(path):
                args += ["--tmpfs", there, "--remount-ro", there]
            elif os.path.exists(path):
                args += ["--ro-bind", "/dev/null", there]
    return args


def _reachable_by_sandbox(path: str) -> bool:
    """Whether the sandbox's uid can reach `path`: always when it is ours (not root);
    as `nobody`, only through world-searchable parents."""
    if os.geteuid() != 0:
        return True
    return all(p.stat().st_mode & 0o001 for p in Path(path).parents)
