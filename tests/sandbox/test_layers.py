"""`layers`: doctor tells the truth about this machine and about a machine without bubblewrap."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from posttrain.sandbox import layers


def _names(active_only: bool = True) -> set[str]:
    return {layer.name for layer in layers.doctor() if layer.active or not active_only}


def test_doctor_lists_every_layer_family() -> None:
    names = _names(active_only=False)
    for family in ("namespaces (bubblewrap)", "unprivileged uid", "seccomp", "rlimits",
                   "cgroup memory", "cgroup pids", "cgroup cpu"):  # fmt: skip
        assert family in names


def test_doctor_bwrap_state_matches_the_binary() -> None:
    bw = next(layer for layer in layers.doctor() if layer.name == "namespaces (bubblewrap)")
    if shutil.which("bwrap") is None:
        assert not bw.active and "not installed" in bw.detail
    else:
        assert bw.active == (layers.bwrap_status()[0] and layers.sandbox_python() is not None)


def test_doctor_cgroup_state_matches_the_filesystem() -> None:
    for controller in ("memory", "pids", "cpu"):
        layer = next(x for x in layers.doctor() if x.name == f"cgroup {controller}")
        assert layer.active == (layers.cgroup_v1_root(controller) is not None)


def test_without_bubblewrap_doctor_says_so_and_names_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(
        layers.shutil, "which", lambda name: None if name == "bwrap" else real_which(name)
    )
    layers.bwrap_status.cache_clear()
    try:
        bw = next(layer for layer in layers.doctor() if layer.name == "namespaces (bubblewrap)")
        assert not bw.active and "bubblewrap is not installed" in bw.detail
        assert layers.best_mode() == ("unshare" if layers.unshare_status()[0] else None)
    finally:
        layers.bwrap_status.cache_clear()


def test_seccomp_program_is_a_bpf_array() -> None:
    program = layers.seccomp_program()
    if program is None:
        pytest.skip("no libseccomp here")
    assert len(program) % 8 == 0 and len(program) > 8 * len(layers.DENIED_SYSCALLS)


def test_bwrap_command_drops_privileges_and_network() -> None:
    argv = layers.launch_argv("bwrap", fd=3, workspace="/workspace", tmp="/tmp", preload=[],
                              seccomp_fd=-1, tmpfs_bytes=1 << 20, host_dir="")  # fmt: skip
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                 "--new-session", "--clearenv", "--as-pid-1"):  # fmt: skip
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--share-net" not in argv


CLAIM = "from posttrain.sandbox import layers\nlayers.SANDBOX_UIDS = range({uid}, {uid} + 1)\n"
CLAIM += "try:\n    print(layers.claim_uid())\nexcept OSError:\n    print('taken')"


def test_a_claimed_uid_is_taken_for_every_process_until_released() -> None:
    uid = layers.claim_uid()
    try:
        assert uid in layers.SANDBOX_UIDS
        other = subprocess.run([sys.executable, "-c", CLAIM.format(uid=uid)], capture_output=True, text=True)  # fmt: skip
        assert other.stdout == "taken\n", other.stderr
        second = layers.claim_uid()
        assert second != uid
        layers.release_uid(second)
    finally:
        layers.release_uid(uid)
    again = subprocess.run([sys.executable, "-c", CLAIM.format(uid=uid)], capture_output=True, text=True)  # fmt: skip
    assert again.stdout == f"{uid}\n", again.stderr


HOST_DIRS = """
import json, os, stat
from posttrain.sandbox import layers
uid = layers.SANDBOX_UIDS[0] if os.geteuid() == 0 else None  # chown needs root
first, second = layers.private_host_dir(uid), layers.private_host_dir(uid)
parent = os.path.dirname(first)
modes = {
    path: [stat.S_IMODE(os.stat(path).st_mode), os.stat(path).st_uid]
    for path in (parent, f"{first}/workspace", f"{first}/tmp")
}
layers.remove_host_dir(first)
kept = os.path.isdir(parent) and not os.path.exists(first)
layers.remove_host_dir(second)
print(json.dumps([parent, uid or os.geteuid(), modes, kept, os.path.exists(parent)]))
"""


def test_private_host_dirs_sit_in_a_parent_nobody_else_can_list() -> None:
    run = subprocess.run([sys.executable, "-c", HOST_DIRS], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    parent, owner, modes, kept, parent_left = json.loads(run.stdout)
    assert os.path.dirname(parent) == tempfile.gettempdir()
    assert list(modes.values()) == [[0o711, os.geteuid()], [0o700, owner], [0o700, owner]]
    assert kept and not parent_left  # the parent goes with the last folder in it


@pytest.mark.skipif(layers.best_mode() != "bwrap", reason="needs bubblewrap isolation")
def test_an_installed_posttrain_is_hidden_from_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed from a wheel, posttrain sits in the bound site-packages with every domain's
    reference code (templates, C sources): tasks must not read it, nor write where it was."""
    from posttrain.sandbox import Sandbox

    site = tempfile.mkdtemp(prefix="posttrain-site-")
    try:
        os.chmod(site, 0o755)
        os.makedirs(f"{site}/posttrain/domains", mode=0o755)
        with open(f"{site}/posttrain/domains/templates.py", "w") as f:
            f.write("REFERENCE = 'the fix'\n")
        with open(f"{site}/other.py", "w") as f:
            f.write("OTHER = 1\n")
        for path in (f"{site}/posttrain/domains/templates.py", f"{site}/other.py"):
            os.chmod(path, 0o644)
        monkeypatch.setattr(layers, "site_packages", lambda: site)
        monkeypatch.setattr(layers, "PACKAGE_DIR", f"{site}/posttrain")
        probe = (
            "import os, sys; sys.path.insert(0, '/opt/posttrain/site-packages'); import other\n"
            "print(other.OTHER, os.listdir('/opt/posttrain/site-packages/posttrain'))\n"
            "try:\n    open('/opt/posttrain/site-packages/posttrain/x', 'w')\n"
            "except OSError as exc:\n    print(type(exc).__name__)\n"
        )
        with Sandbox(isolation="bwrap") as sb:
            result = sb.run_python(probe)
        assert result.ok, result
        assert result.stdout == "1 []\nOSError\n"
    finally:
        shutil.rmtree(site)
