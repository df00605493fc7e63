"""`layers`: doctor tells the truth about this machine and about a machine without bubblewrap."""

from __future__ import annotations

import shutil

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
                 "--new-session", "--clearenv"):  # fmt: skip
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--share-net" not in argv
