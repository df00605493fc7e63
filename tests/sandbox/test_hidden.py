"""`hidden`: a domain plugin's own files are found and hidden from tasks; its neighbours are not."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

from posttrain.domains.registry import ENTRY_POINT_GROUP
from posttrain.sandbox import hidden, layers

PLUGIN_FILES = {
    "acme/plug/__init__.py": "DOMAIN = None\n",
    "acme/plug/answers.py": "ANSWER = 'the key'\n",
    "acme_keys.py": "KEYS = [1, 2, 3]\n",
}
NEIGHBOUR_FILES = {"acme/other/__init__.py": "OTHER = 1\n"}  # same namespace, another dist
STRAY_BYTECODE = ("acme/plug/__pycache__/answers.cpython-311.pyc", "__pycache__/acme_keys.cpython-311.pyc")  # fmt: skip


def _write(site: str, rel: str, text: str) -> None:
    path = os.path.join(site, rel)
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


def _dist(site: str, name: str, files: dict[str, str], entry_points: str, record: bool) -> None:
    meta = f"{name}-0.1.dist-info"
    _write(site, f"{meta}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    if entry_points:
        _write(site, f"{meta}/entry_points.txt", entry_points)
    if record:
        lines = [f"{rel},," for rel in [*files, f"{meta}/METADATA", f"{meta}/RECORD"]]
        _write(site, f"{meta}/RECORD", "\n".join(lines) + "\n")
    for rel, text in files.items():
        _write(site, rel, text)


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A site folder on sys.path (world-readable, for the sandbox's `nobody`): the plugin
    `acme-plug` (a sub-package of the shared `acme/` namespace and a top-level module, from
    its RECORD), its neighbour `acme-other` in the same namespace, an unrelated module."""
    path = os.path.realpath(tempfile.mkdtemp(prefix="posttrain-plugin-site-"))
    os.chmod(path, 0o755)
    _dist(path, "acme_plug", PLUGIN_FILES, f"[{ENTRY_POINT_GROUP}]\nacme = acme.plug:DOMAIN\n", True)  # fmt: skip
    _dist(path, "acme_other", NEIGHBOUR_FILES, "", True)
    _write(path, "other.py", "UNRELATED = 1\n")
    for rel in STRAY_BYTECODE:  # compiled at run time, so not in RECORD
        _write(path, rel, "bytecode")
    monkeypatch.syspath_prepend(path)
    hidden.plugin_paths.cache_clear()
    try:
        yield path
    finally:
        hidden.plugin_paths.cache_clear()
        for name in [m for m in sys.modules if m == "acme" or m.startswith("acme.")]:
            del sys.modules[name]
        shutil.rmtree(path)


def test_the_group_is_the_one_the_registry_loads() -> None:
    assert hidden.PLUGIN_GROUP == ENTRY_POINT_GROUP


def test_a_plugins_own_folder_and_files_are_listed_not_the_shared_namespace(site: str) -> None:
    found = {os.path.relpath(p, site) for p in hidden.plugin_paths() if p.startswith(site)}
    assert found == {"acme/plug", "acme_keys.py", "__pycache__/acme_keys.cpython-311.pyc"}


def test_a_plugin_without_record_hides_its_entry_points_package(site: str) -> None:
    _dist(site, "bareplug", {"bareplug/__init__.py": "", "bareplug/core.py": "D = 1\n"},
          f"[{ENTRY_POINT_GROUP}]\nbare = bareplug.core:D\n", record=False)  # fmt: skip
    hidden.plugin_paths.cache_clear()
    assert os.path.join(site, "bareplug") in hidden.plugin_paths()
    assert "bareplug" not in sys.modules  # located, never imported


def test_the_bwrap_command_covers_plugin_folders_and_files(
    site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layers, "site_packages", lambda: site)
    argv = layers.launch_argv("bwrap", fd=3, workspace="/workspace", tmp="/tmp", preload=[],
                              seccomp_fd=-1, tmpfs_bytes=1 << 20, host_dir="")  # fmt: skip
    inside = layers.SANDBOX_SITE
    assert argv[argv.index(f"{inside}/acme/plug") - 1] == "--tmpfs"
    assert argv[argv.index(f"{inside}/acme_keys.py") - 1] == "/dev/null"
    assert f"{inside}/acme" not in argv and f"{inside}/acme/other" not in argv


PROBE = """
import os
S = '/opt/posttrain/site-packages'
def read(rel):
    try:
        return open(rel if rel.startswith('/') else f'{S}/{rel}').read()
    except OSError as exc:
        return type(exc).__name__
print(read('acme/plug/answers.py'), os.listdir(f'{S}/acme/plug'))
print(repr(read('acme_keys.py')), repr(read('__pycache__/acme_keys.cpython-311.pyc')))
print(read('acme/other/__init__.py').strip(), read('other.py').strip(), sorted(os.listdir(f'{S}/acme')))
print('import os' in read(os.__file__.replace('.pyc', '.py')) or len(read(os.__file__)) > 1000)
try:
    open(f'{S}/acme/plug/planted.py', 'w')
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.mark.skipif(layers.best_mode() != "bwrap", reason="needs bubblewrap isolation")
def test_a_plugins_files_are_unreadable_in_the_sandbox_its_neighbours_and_stdlib_are(
    site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed, a plugin's references and answer keys lie in the bound site-packages:
    tasks must not read them, while the namespace it shares and the stdlib stay readable."""
    from posttrain.sandbox import Sandbox

    monkeypatch.setattr(layers, "site_packages", lambda: site)
    with Sandbox(isolation="bwrap") as sb:
        result = sb.run_python(PROBE)
    assert result.ok, result
    assert result.stdout.splitlines() == [
        "FileNotFoundError []",
        "'PermissionError' 'PermissionError'",  # /dev/null on a nodev bind: not even empty
        "OTHER = 1 UNRELATED = 1 ['other', 'plug']",
        "True",
        "OSError",
    ]
