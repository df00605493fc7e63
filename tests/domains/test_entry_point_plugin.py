"""A third-party domain package (examples/domain-plugin), installed into a temporary
location, is listed and checked by the real console script through its entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "domain-plugin"
POSTTRAIN = str(Path(sys.executable).with_name("posttrain"))


def test_an_installed_plugin_domain_is_listed_and_checked(tmp_path: Path) -> None:
    source = shutil.copytree(PLUGIN, tmp_path / "src")  # the build writes next to the sources
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1", "COLUMNS": "200"}

    listed = subprocess.run([POSTTRAIN, "domains", "list", "--family", "vowels", "--json"],
                            capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert [d["id"] for d in json.loads(listed.stdout)] == ["vowels/count-v1"]

    checked = subprocess.run([POSTTRAIN, "domains", "check", "vowels/count-v1"],
                             capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 domains, 7/7 checks pass" in checked.stdout


def test_without_the_plugin_the_id_is_unknown() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    result = subprocess.run([POSTTRAIN, "domains", "check", "vowels/count-v1"],
                            capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert result.returncode == 2 and "unknown domain id 'vowels/count-v1'" in result.stderr
