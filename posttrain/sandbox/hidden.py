"""What the bwrap sandbox hides of the bound Python packages: third-party domain plugins.

A distribution that publishes a ``posttrain.domains`` entry point ships domains, and with
them their reference solutions, hidden tests and answer keys. Installed, it lies in the
site-packages folder that the sandbox binds read-only for numpy and friends, so
`plugin_paths()` lists its files for `layers.launch_argv` to cover (a folder wholly the
plugin's with an empty tmpfs, a single file with ``/dev/null``, which bwrap binds
``nodev``, so opening it fails).

The files come from the distribution's ``RECORD`` (importlib.metadata), so a plugin that
shares a top-level folder with other distributions (a namespace package such as
``acme/``) hides only its own sub-packages and modules; the ``*.dist-info`` folder itself
(name, version, file list) stays readable. Where ``RECORD`` is missing, or the entry
point's module is not among its files (an editable install), the module's own package
folder (or file), found without importing it, is hidden instead.

Not covered: a plugin's code that lies outside the folders bound into the sandbox (it
is unreachable there anyway), and data a plugin fetches or writes elsewhere at run time.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from importlib.metadata import Distribution, entry_points
from pathlib import Path

# The group `posttrain.domains.registry` loads (the sandbox must not import domains).
PLUGIN_GROUP = "posttrain.domains"


@functools.cache
def plugin_paths() -> tuple[str, ...]:
    """Real host paths (folders and files) of every plugin distribution's own code and
    data; cached for the process (`plugin_paths.cache_clear()` after installing one)."""
    found: dict[str, Distribution] = {}
    modules: dict[str, list[str]] = {}
    for ep in entry_points(group=PLUGIN_GROUP):
        dist = ep.dist
        if dist is None:
            continue
        key = str(dist.locate_file(""))  # + name: several dists share one site folder
        key = f"{key}\0{dist.metadata['Name']}"
        found[key] = dist
        modules.setdefault(key, []).append(ep.module)
    hidden: set[str] = set()
    for key, dist in found.items():
        owned = _recorded_files(dist)
        hidden |= _cover(owned, os.path.realpath(str(dist.locate_file(""))))
        for module in modules[key]:
            where = _module_location(module)
            if where is None or _under_any(where, hidden):
                continue
            if not any(_under(f, where) for f in owned):  # not where RECORD put it
                hidden.add(where)
    return tuple(sorted(hidden))


def _recorded_files(dist: Distribution) -> set[str]:
    """The real paths of the files `dist` installed, its metadata folder left out."""
    files = set()
    for entry in dist.files or ():
        if entry.parts and entry.parts[0].endswith((".dist-info", ".egg-info")):
            continue
        path = os.path.realpath(str(dist.locate_file(entry)))
        if os.path.isfile(path):
            files.add(path)
    return files


def _cover(files: set[str], base: str) -> set[str]:
    """The fewest paths that hide `files`: each highest folder below `base` that holds
    nothing else (bytecode of those files aside), then the remaining files one by one,
    each with its stray bytecode in a sibling ``__pycache__``."""
    candidates = {
        str(parent)
        for f in files
        if _under(f, base)
        for parent in Path(f).parents
        if _under(str(parent), base) and str(parent) != base
    }
    folders: list[str] = []
    for folder in sorted(candidates, key=lambda p: p.count(os.sep)):
        if not _under_any(folder, set(folders)) and _only(folder, files):
            folders.append(folder)
    covered = set(folders)
    for f in files:
        if not _under_any(f, covered):
            covered.add(f)
            covered |= _bytecode_of(f)
    return covered


def _only(folder: str, files: set[str]) -> bool:
    """Whether every file under `folder` is one of `files` or bytecode compiled from one."""
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            if path in files:
                continue
            if os.path.basename(dirpath) == "__pycache__":
                source = os.path.join(os.path.dirname(dirpath), name.split(".")[0] + ".py")
                if source in files:
                    continue
            return False
    return True


def _bytecode_of(path: str) -> set[str]:
    """`path`'s compiled copies in the ``__pycache__`` next to it (any interpreter tag)."""
    folder, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    cache = os.path.join(folder, "__pycache__")
    if ext != ".py" or not os.path.isdir(cache):
        return set()
    return {
        os.path.join(cache, n)
        for n in os.listdir(cache)
        if n.startswith(stem + ".") and n.endswith(".pyc")
    }


def _module_location(module: str) -> str | None:
    """The folder of the first regular package on `module`'s dotted path (or the file of a
    plain module), found without running the plugin's code: only namespace packages,
    which have none, are imported on the way."""
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:i]))
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        if spec.origin is None or not spec.has_location:
            continue  # a namespace package: shared with others, look one level down
        if spec.submodule_search_locations:
            return os.path.realpath(os.path.dirname(spec.origin))
        return os.path.realpath(spec.origin)
    return None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _under_any(path: str, paths: set[str]) -> bool:
    return any(_under(path, p) for p in paths)
