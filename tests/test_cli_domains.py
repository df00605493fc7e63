"""`posttrain domains bench` and `posttrain score` through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from posttrain.domains import get_domain
from tests.test_cli import posttrain


def test_domains_bench_prints_rates_and_the_machine_load() -> None:
    result = posttrain("domains", "bench", "arith/addition-v1", "list/sort-v1", "--tasks", "5", "--repeats", "1")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "arith/addition-v1" in result.stdout and "list/sort-v1" in result.stdout
    assert "verifications/s over all 2" in result.stdout
    assert "on 2 cores" in result.stdout or "cores" in result.stdout


def test_domains_bench_json_gives_one_record_per_domain() -> None:
    result = posttrain("domains", "bench", "text/reverse-v1", "--tasks", "4", "--repeats", "2", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    [record] = json.loads(result.stdout)
    assert record["domain"] == "text/reverse-v1" and record["all_passed"] is True
    assert record["verifications_per_s"] > 100


def test_domains_bench_an_unknown_id_exits_2_with_the_nearest() -> None:
    result = posttrain("domains", "bench", "arith/addition-v2")
    assert result.returncode == 2 and "arith/addition-v1" in result.stderr


def test_domains_bench_an_unknown_family_exits_2_listing_the_families() -> None:
    result = posttrain("domains", "bench", "--family", "arithmetic")
    assert result.returncode == 2, result.stdout
    assert "unknown family 'arithmetic'; families: agent, arith," in result.stderr


def test_domains_bench_ids_outside_the_family_exit_2() -> None:
    result = posttrain("domains", "bench", "list/sort-v1", "--family", "arith")
    assert result.returncode == 2, result.stdout
    assert "no domain of family 'arith' among these ids" in result.stderr


def test_score_prints_each_line_and_the_summary(tmp_path: Path) -> None:
    task = get_domain("arith/addition-v1").generate(5, 3)
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"seed": 5, "difficulty": 3, "completion": task.answer}) + "\n"
        + json.dumps({"seed": 5, "difficulty": 3, "completion": "so 1"}) + "\n"
    )  # fmt: skip
    result = posttrain("score", "--domain", "arith/addition-v1", str(path))
    assert result.returncode == 0, result.stderr
    assert "2 completions: passed 0.500" in result.stdout
    assert "format 0.500" in result.stdout and "correct 0.500" in result.stdout


def test_score_json_gives_one_verdict_per_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"seed": 0, "difficulty": 1, "completion": "x"}) + "\n")
    result = posttrain("score", "--domain", "list/sort-v1", str(path), "--json")
    assert result.returncode == 0, result.stderr
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["line"], record["passed"], record["reward"]) == (1, False, 0.0)


def test_score_a_bad_line_exits_2_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"seed": 0, "difficulty": 1, "completion": "1"}\n{"seed": 0}\n')
    result = posttrain("score", "--domain", "list/sort-v1", str(path))
    assert result.returncode == 2
    assert "c.jsonl:2" in result.stderr and "difficulty" in result.stderr


def test_score_a_directory_exits_2_saying_it_is_a_directory(tmp_path: Path) -> None:
    result = posttrain("score", "--domain", "list/sort-v1", str(tmp_path))
    assert result.returncode == 2
    assert f"completions file {str(tmp_path)!r} is a directory, not a file" in result.stderr


def test_score_an_unknown_domain_exits_2_with_the_nearest(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"seed": 0, "difficulty": 1, "completion": "1"}\n')
    result = posttrain("score", "--domain", "list/sort-v9", str(path))
    assert result.returncode == 2 and "list/sort-v1" in result.stderr


def test_score_a_recipe_dataset_domain_by_row(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"p{i}", "answer": f"a{i}"}) + "\n" for i in range(4)))  # fmt: skip
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"datasets:\n  - id: mine/rows-v1\n    path: {data}\n    verifier: exact\n"
        "domains: [mine/rows-v1]\n"
    )
    completions = tmp_path / "c.jsonl"
    completions.write_text('{"row": 2, "completion": "a2"}\n{"row": 3, "completion": "a2"}\n')
    result = posttrain("score", "--domain", "mine/rows-v1", "--recipe", str(recipe), str(completions))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "2 completions: passed 0.500" in result.stdout


def test_score_a_recipe_with_a_bad_dataset_exits_2(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"datasets:\n  - id: mine/rows-v1\n    path: {tmp_path / 'none.jsonl'}\n    verifier: exact\n"
        "domains: [mine/rows-v1]\n"
    )
    completions = tmp_path / "c.jsonl"
    completions.write_text('{"row": 0, "completion": "x"}\n')
    result = posttrain("score", "--domain", "mine/rows-v1", "--recipe", str(recipe), str(completions))  # fmt: skip
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_domains_list_names_a_broken_plugin_and_goes_on(tmp_path: Path) -> None:
    dist = tmp_path / "brokenplug-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[posttrain.domains]\nbroken = brokenplug_mod:X\n")
    (tmp_path / "brokenplug_mod.py").write_text("raise ImportError('boom at import')\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    result = subprocess.run(
        [sys.executable, "-m", "posttrain", "domains", "list", "--family", "arith"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "arith/addition-v1" in result.stdout
    assert "'broken'" in result.stderr and "boom at import" in result.stderr
