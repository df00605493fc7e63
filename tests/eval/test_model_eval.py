"""`posttrain eval` and `posttrain compare`: domain selection, the results document,
pass@k, the files written, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from posttrain.cli import app
from posttrain.cli_eval import _slug
from posttrain.eval.model_eval import EvalSpec, EvalSpecError, run_eval, select_domains

runner = CliRunner()


def test_selectors_add_ids_and_families_then_narrow_by_axis() -> None:
    ids = [d.id for d in select_domains(["arith/addition-v1", "tools"])]
    assert "arith/addition-v1" in ids and "tools/calculator-v1" in ids
    assert all(i == "arith/addition-v1" or i.startswith("tools/") for i in ids)
    narrowed = select_domains(["tools", "rounds=multi"])
    assert narrowed and all(d.axes.rounds == "multi" for d in narrowed)


@pytest.mark.parametrize(
    ("selectors", "needle"),
    [
        (["nosuchfamily"], "not a domain id, a family or an axis filter"),
        (["arith/nope-v1"], "arith/nope-v1"),
        (["modality=smell"], "smell"),
    ],
)
def test_bad_selectors_name_themselves(selectors: list[str], needle: str) -> None:
    with pytest.raises(EvalSpecError, match=needle):
        select_domains(selectors)


def test_run_eval_scores_every_task_once_greedy_and_samples_for_pass_at_k() -> None:
    doc = run_eval(EvalSpec("tiny", ["arith/addition-v1", "tools/calculator-v1"], n=3, k=2))
    assert [t["domain"] for t in doc["tasks"]] == ["arith/addition-v1"] * 3 + [
        "tools/calculator-v1"
    ] * 3
    assert all(t["samples"] == 2 for t in doc["tasks"])
    assert doc["pass_at_k"]["k"] == 2 and 0 <= doc["pass_at_k"]["overall"] <= 1
    assert doc["settings"]["seed_offset"] == 10**9 and doc["settings"]["n"] == 3
    assert doc["per_domain"]["tools/calculator-v1"]["cell"][2] == "multi"


def test_run_eval_closes_the_engine_it_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    """An `openai:` engine holds connections and an event-loop thread; run_eval left it open."""
    import posttrain.eval.model_eval as model_eval

    opened = []

    class Closable:
        def __init__(self, engine: Any) -> None:
            self.engine, self.closed = engine, False

        def generate(self, requests: Any) -> Any:
            return self.engine.generate(requests)

        def update_weights(self, state_dict: Any) -> None:
            self.engine.update_weights(state_dict)

        def close(self) -> None:
            self.closed = True

    real = model_eval.load_engine

    def load(spec: EvalSpec) -> tuple[Any, Any, str]:
        engine, tokenizer, described = real(spec)
        opened.append(Closable(engine))
        return opened[-1], tokenizer, described

    monkeypatch.setattr(model_eval, "load_engine", load)
    run_eval(EvalSpec("tiny", ["arith/addition-v1"], n=2))
    assert len(opened) == 1 and opened[0].closed


def test_the_seed_picks_a_disjoint_task_set() -> None:
    a = run_eval(EvalSpec("tiny", ["arith/addition-v1"], n=3))
    b = run_eval(EvalSpec("tiny", ["arith/addition-v1"], n=3, seed=1))
    assert not {t["id"] for t in a["tasks"]} & {t["id"] for t in b["tasks"]}


def test_a_negative_seed_is_refused_before_it_reaches_the_training_streams() -> None:
    # seed -1000 would put the held-out offset at 0, the first seed of the SFT stream.
    with pytest.raises(EvalSpecError, match="--seed must be >= 0, got -1000"):
        run_eval(EvalSpec("tiny", ["arith/addition-v1"], n=3, seed=-1000))


def test_the_command_writes_results_and_a_report_then_compare_reads_them(tmp_path: Path) -> None:
    for name in ("a", "b"):
        res = runner.invoke(app, ["eval", "tiny", "--domains", "arith,text/reverse-v1",
                                  "--n", "2", "--out", str(tmp_path / name)])  # fmt: skip
        assert res.exit_code == 0, res.output
        assert "per matrix cell" in res.output
        assert (tmp_path / name / "report.html").is_file()
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert len(doc["tasks"]) == 2 * len(doc["per_domain"])
    res = runner.invoke(app, ["compare", str(tmp_path / "a" / "results.json"),
                              str(tmp_path / "b" / "results.json"), "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["rows"]
    assert rows[0]["scope"] == "all" and rows[0]["delta"] == 0.0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["eval", "tiny", "--domains", "nosuch"], "not a domain id"),
        (["eval", "no-such-model"], "no-such-model"),
        (["eval", "tiny", "--difficulties", "1,x"], "--difficulties"),
        (["eval", "tiny", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (["eval", "tiny", "--max-tokens", "0"], "--max-tokens must be >= 1, got 0"),
        (["eval", "tiny", "--concurrency", "0"], "--concurrency must be >= 1, got 0"),
        (["eval", "tiny", "--k", "2", "--temperature", "-1"], "--temperature must be >= 0"),
        # inf ran the whole evaluation, then failed writing results.json (not JSON)
        (
            ["eval", "tiny", "--k", "2", "--temperature", "inf"],
            "--temperature must be >= 0 and finite, got inf",
        ),
        (
            ["eval", "tiny", "--k", "2", "--temperature", "nan"],
            "--temperature must be >= 0 and finite, got nan",
        ),
        (["eval", "tiny", "--seed", "99999999999999999999"], "--seed must be below 2**31"),
        (["eval", "openai:ftp://x"], "needs an http(s) URL"),
        (["compare", "nope-a", "nope-b"], "neither a results file nor a run directory"),
        (["compare", "nope-a", "nope-b", "--alpha", "5"], "--alpha must be in (0, 1), got 5"),
        (["compare", "nope-a", "nope-b", "--alpha", "0"], "--alpha must be in (0, 1), got 0"),
        (["report", "no-such-run"], "no-such-run"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], needle: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("max_tokens", ["99999999999999999999", "window"])
def test_max_tokens_not_below_the_context_window_is_refused_before_any_task_runs(
    monkeypatch: pytest.MonkeyPatch, max_tokens: str
) -> None:
    """Every episode failed (its prompt left no room), and the evaluation ran to the end."""
    import posttrain.eval.evaluate
    from posttrain.models.loading import context_window, load_policy

    window = context_window(load_policy("tiny").model)
    assert window is not None
    given = str(window) if max_tokens == "window" else max_tokens

    def tripwire(*args: object, **kwargs: object) -> None:
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(posttrain.eval.evaluate, "evaluate", tripwire)
    res = runner.invoke(app, ["eval", "tiny", "--domains", "arith/addition-v1", "--n", "1",
                              "--max-tokens", given])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert f"--max-tokens {given} leaves no room for a prompt in the model's context window of {window} tokens" in res.output  # fmt: skip


def test_more_tasks_than_a_domain_has_prompts_is_refused_naming_n() -> None:
    with pytest.raises(EvalSpecError, match=r"--n 5000 with --difficulties \[1\]: .*too few"):
        run_eval(EvalSpec("tiny", ["arith/addition-v1"], n=5000, difficulties=[1]))


def test_an_unreachable_endpoint_exits_2_with_one_line() -> None:
    import socket

    with socket.socket() as s:  # a loopback port that was ours and is closed now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = runner.invoke(app, ["eval", f"openai:http://127.0.0.1:{port}/v1", "--n", "1"])
    assert res.exit_code == 2, res.output
    assert "cannot reach" in res.output and "Traceback" not in res.output


def test_a_malformed_results_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    res = runner.invoke(app, ["compare", str(bad), str(bad)])
    assert res.exit_code == 2 and "not a posttrain results file" in res.output


def test_a_run_directory_without_a_checkpoint_is_named_so(tmp_path: Path) -> None:
    from posttrain.store.run_dir import RunDir

    run = RunDir.create(tmp_path, "crashed")  # checkpoints/ made, none finished
    with pytest.raises(EvalSpecError, match="has no complete checkpoint"):
        run_eval(EvalSpec(str(run.path), ["arith/addition-v1"], n=1))
    with pytest.raises(EvalSpecError, match="it does not exist"):
        run_eval(EvalSpec(str(tmp_path / "nope"), ["arith/addition-v1"], n=1))


@pytest.mark.parametrize(
    "text", ["domains: [a\n", "- a list\n", "eval: 5\n", "domains: " + "[" * 20000]
)
def test_a_run_directory_with_a_broken_config_yaml_is_named(tmp_path: Path, text: str) -> None:
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(EvalSpecError, match=r"config\.yaml (cannot be read as|is not) a run's"):
        run_eval(EvalSpec(str(tmp_path), n=1))


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("domains: arith/addition-v1\n", "domains must be a list of domain ids"),
        ("eval: {seed_offset: abc}\n", "eval.seed_offset must be an integer"),
        ("eval: {seed_offset: null}\n", "eval.seed_offset must be an integer, got None"),
        ("eval: {tasks_per_domain: true}\n", "eval.tasks_per_domain must be an integer"),
        ("eval: {difficulties: [1, x]}\n", "eval.difficulties must be a list of integers"),
        ("max_new_tokens: 2.5\n", "max_new_tokens must be an integer"),
    ],
)
def test_a_hand_edited_config_yaml_of_the_wrong_type_is_named(
    tmp_path: Path, text: str, named: str
) -> None:
    """A string of domains was read letter by letter and a bad seed offset was a traceback."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(EvalSpecError, match=named):
        run_eval(EvalSpec(str(tmp_path)))  # every setting from the run's config


@pytest.mark.parametrize(
    ("model", "slug"),
    [
        ("openai:http://127.0.0.1:8000/v1", "openai-127.0.0.1-8000"),
        ("openai:http://127.0.0.1:8000/v1#tiny", "openai-127.0.0.1-8000-tiny"),
        ("openai:https://api.example.org/v1#org/model:7b", "openai-api.example.org-org-model-7b"),
        ("runs/20261201-003956/", "20261201-003956"),
        ("smollm2-135m", "smollm2-135m"),
    ],
)
def test_results_folders_are_named_for_the_model_and_endpoint(model: str, slug: str) -> None:
    assert _slug(model) == slug


def test_a_damaged_checkpoint_is_named_in_one_line(tmp_path: Path) -> None:
    from posttrain.store.atomic import COMPLETE_MARKER
    from posttrain.store.run_dir import RunDir

    run = RunDir.create(tmp_path, "damaged")
    checkpoint = run.checkpoint_path("grpo")
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{not json")
    (checkpoint / COMPLETE_MARKER).touch()
    res = runner.invoke(app, ["eval", str(run.path), "--domains", "arith/addition-v1", "--n", "1"])
    assert res.exit_code == 2 and f"cannot load checkpoint {checkpoint}" in res.output


def test_an_out_path_that_is_a_file_is_refused_before_evaluating(tmp_path: Path) -> None:
    taken = tmp_path / "results"
    taken.write_text("")
    args = ["eval", "tiny", "--domains", "arith/addition-v1", "--n", "1", "--out", str(taken)]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "is a file" in res.output
