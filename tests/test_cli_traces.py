"""`posttrain traces list|show`, `rescore` and `export` on a hand-made run, and TRL
loading what `export` writes.

The run holds real tasks of `arith/addition-v1` (single turn) and `tools/calculator-v1`
(a tool call, then the answer), one rollout whose stored verdict is stale, one crashed
episode, and a held-out evaluation stage.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import datasets
import pytest
from click.testing import Result
from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer
from trl.data_utils import apply_chat_template, is_conversational
from typer.testing import CliRunner

from posttrain.cli import app
from posttrain.store.run_dir import RunDir
from posttrain.store.traces import TraceStore
from posttrain.types import Rollout, ToolCall, Verdict
from tests.store.test_export import ARITH, CALC, answer, calc_texts, play

STALE = Verdict(0.0, False, "an old verifier bug")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run_dir = RunDir.create(tmp_path / "runs", name="r1")
    with TraceStore(run_dir.traces_path) as store:
        store.record([
            play(ARITH, [answer(0)], rollout_id="abc123aa-pass", policy_version=1),
            play(ARITH, [answer(0, 1)], rollout_id="abc123bb-fail", policy_version=1),
            play(ARITH, [answer(1)], seed=1, rollout_id="5ta1e-0001", verdict=STALE),
            play(CALC, calc_texts(0), rollout_id="ca1c-pass-01", policy_version=2),
            play(CALC, calc_texts(0, 1), rollout_id="ca1c-fail-02", policy_version=2),
            play(ARITH, [answer(2)], seed=2, rollout_id="crash-0001", error="session failed: boom",
                 verdict=Verdict(0.0, False, "session failed: boom")),
        ], stage="grpo")  # fmt: skip
        store.record([play(ARITH, [answer(3)], seed=3, rollout_id="held-0001")], "eval/untrained")
    return run_dir.path


def posttrain(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def ok_json(*args: str | Path) -> Any:
    result = posttrain(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_list_prints_a_table_and_a_count(run: Path) -> None:
    result = posttrain("traces", "list", run)
    assert result.exit_code == 0, result.output
    assert "abc123aa-pas" in result.stdout and "held-0001" in result.stdout
    assert "7 rollouts: 3 passed, 1 with an error" in result.stdout


def test_list_filters_by_family_outcome_stage_and_limit(run: Path) -> None:
    rows = ok_json("traces", "list", run, "--domain", "arith", "--failed", "--stage", "grpo")
    assert [r["id"] for r in rows] == ["abc123bb-fail", "5ta1e-0001", "crash-0001"]
    assert rows[2]["error"] == "session failed: boom"
    assert [r["id"] for r in ok_json("traces", "list", run, "--domain", CALC, "--limit", "1")] == ["ca1c-pass-01"]  # fmt: skip


def test_a_long_list_prints_the_first_rows_and_counts_them_all(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --limit the table stops at TABLE_ROWS (128k rows took rich 90 s); the count
    line covers every match, and --limit or --json show more."""
    import posttrain.cli_traces as cli_traces

    monkeypatch.setattr(cli_traces, "TABLE_ROWS", 2)
    result = posttrain("traces", "list", run)
    assert result.exit_code == 0, result.output
    assert "abc123aa-pas" in result.stdout and "held-0001" not in result.stdout
    assert "7 rollouts: 3 passed, 1 with an error" in result.stdout
    assert "the table shows the first 2: --limit N shows N, --json all" in result.stdout
    full = posttrain("traces", "list", run, "--limit", "7")
    assert "held-0001" in full.stdout and "the table shows" not in full.stdout
    assert len(ok_json("traces", "list", run)) == 7


def test_list_a_bad_limit_exits_2_naming_it(run: Path) -> None:
    result = posttrain("traces", "list", run, "--limit", "0")
    assert result.exit_code == 2
    assert "limit must be a positive integer, got 0" in result.output


def test_show_prints_turns_tool_calls_tokens_and_verdict(run: Path) -> None:
    result = posttrain("traces", "show", run, "ca1c-pass")
    assert result.exit_code == 0, result.output
    text, rollout = result.stdout, play(CALC, calc_texts(0))
    assert f"task {CALC}@0.d2" in text and "policy version 2" in text
    assert "user: calc 58*2" in text
    assert 'tool call calculator({"expression": "58*2"})' in text
    assert "tool[calculator]: 116" in text and "turn 2 (3 tokens, stop) assistant: 116" in text
    sampled = sum(rollout.loss_mask)
    assert f"tokens: prompt {len(rollout.prompt_ids)}, completion {len(rollout.completion_ids)}, sampled {sampled}, environment 3" in text  # fmt: skip
    assert "verdict: pass, reward 1" in text and "components: correct 1, format 1, used_tool 1" in text  # fmt: skip
    assert "timings: episode_s 0.5" in text


def test_show_json_is_the_stored_rollout(run: Path) -> None:
    shown = Rollout.from_dict(ok_json("traces", "show", run, "5ta1e-0001"))
    assert shown == play(ARITH, [answer(1)], seed=1, rollout_id="5ta1e-0001", verdict=STALE)


@pytest.mark.parametrize(
    ("rollout_id", "message"),
    [("nope-nope", "no rollout 'nope-nope' in"), ("abc12", "a prefix needs 6+ characters"),
     ("abc123", "matches more than one rollout (abc123aa-pass, abc123bb-fail, ...)")],
)  # fmt: skip
def test_show_a_bad_id_exits_2_with_one_line(run: Path, rollout_id: str, message: str) -> None:
    result = posttrain("traces", "show", run, rollout_id)
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_a_missing_run_or_trace_store_exits_2(tmp_path: Path) -> None:
    missing = posttrain("traces", "list", tmp_path / "nope")
    assert missing.exit_code == 2 and "does not exist or is not a directory" in missing.output
    empty = posttrain("rescore", tmp_path)
    assert empty.exit_code == 2 and "traces.sqlite does not exist" in empty.output


def test_rescore_reports_the_stale_verdict_and_writes_rescore_json(run: Path) -> None:
    result = posttrain("rescore", run)
    assert result.exit_code == 0, result.output
    assert "1 changed; report:" in result.stdout and "0.000 → 1.000" in result.stdout
    doc = json.loads((run / "rescore.json").read_text())
    assert doc["per_domain"][ARITH] == {
        "reverified": 4, "changed": 1,
        "not_reverifiable": {"the episode itself failed, so there is no answer to verify": 1}}  # fmt: skip
    assert doc["per_domain"][CALC] == {"reverified": 2, "changed": 0, "not_reverifiable": {}}
    [change] = doc["changes"]
    assert (change["id"], change["old_reason"], change["new_passed"]) == ("5ta1e-0001", STALE.reason, True)  # fmt: skip


def test_rescore_leaves_the_stored_rollouts_alone(run: Path) -> None:
    path = RunDir(run).traces_path
    with TraceStore(path) as store:
        before = [r.to_json() for r in store.select()]
    doc = ok_json("rescore", run, "--domain", "arith", "--stage", "grpo")
    assert set(doc["per_domain"]) == {ARITH} and len(doc["changes"]) == 1
    with TraceStore(path) as store:
        assert [r.to_json() for r in store.select()] == before


@pytest.mark.parametrize(
    ("filters", "named"),
    [(["--domain", "arith/additon-v1"], "--domain 'arith/additon-v1'"),
     (["--stage", "nope"], "--stage 'nope'"),
     (["--domain", "arith", "--stage", "eval/sft"], "--domain 'arith' --stage 'eval/sft'")],
)  # fmt: skip
def test_rescore_filters_matching_nothing_exit_2_and_keep_the_last_report(
    run: Path, filters: list[str], named: str
) -> None:
    """A misspelled filter exited 0 with "0 changed" and wrote over rescore.json."""
    assert posttrain("rescore", run).exit_code == 0
    report = (run / "rescore.json").read_text()
    result = posttrain("rescore", run, *filters)
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"error: {named} matches no stored rollout; the store holds domains: "
        f"{ARITH}, {CALC}; stages: eval/untrained, grpo\n"
    )
    assert (run / "rescore.json").read_text() == report


def test_export_writes_each_format_and_prints_counts(run: Path, tmp_path: Path) -> None:
    for fmt, out, line in [("sft", "sft.jsonl", "3 conversations from 7 rollouts"),
                           ("dpo", "dpo.parquet", "2 preference pairs from 7 rollouts"),
                           ("rl", "rl.jsonl", "5 task prompts from 7 rollouts")]:  # fmt: skip
        result = posttrain("export", run, "--format", fmt, "--out", tmp_path / out)
        assert result.exit_code == 0, result.output
        assert line in result.stdout and (tmp_path / out).is_file()
    default = posttrain("export", run, "--format", "sft", "--stage", "eval/untrained")
    assert "1 conversations from 1 rollouts" in default.stdout
    assert (run / "export-sft.jsonl").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--format", "kto"], "--format must be one of sft, dpo, rl, got 'kto'"),
     (["--format", "rl", "--min-reward", "1"], "--min-reward applies to sft and dpo"),
     (["--format", "sft", "--out", "x.csv"], "--out must end in .jsonl or .parquet"),
     (["--format", "dpo", "--stage", "sft"], "nothing to write")],
)  # fmt: skip
def test_export_bad_input_exits_2_naming_it(run: Path, args: list[str], message: str) -> None:
    result = posttrain("export", run, *args)
    assert result.exit_code == 2
    assert message in result.output


def test_export_never_overwrites_a_file_of_the_run(run: Path) -> None:
    metrics = RunDir(run).metrics_path
    metrics.write_text('{"stage": "sft", "step": 1, "time": 0.0, "values": {}}\n')
    before = metrics.read_text()
    result = posttrain("export", run, "--format", "sft", "--out", metrics)
    assert result.exit_code == 2 and "is one of the run's own files" in result.output
    assert len(result.output.strip().splitlines()) == 1 and metrics.read_text() == before
    for _ in range(2):  # an earlier export, or a new file, may be written
        assert posttrain("export", run, "--format", "sft").exit_code == 0
    assert posttrain("export", run, "--format", "sft", "--out", run / "mine.jsonl").exit_code == 0


@pytest.mark.parametrize(
    "command",
    [["traces", "show", "{run}", "abc123bb-fail"], ["rescore", "{run}"],
     ["export", "{run}", "--format", "sft"], ["export", "{run}", "--format", "dpo"]],
)  # fmt: skip
def test_a_malformed_stored_row_exits_2_naming_it(run: Path, command: list[str]) -> None:
    with sqlite3.connect(RunDir(run).traces_path) as db:  # edited by hand, say
        db.execute("UPDATE rollouts SET json = '{\"id\": ' WHERE id = 'abc123bb-fail'")
    result = posttrain(*[a.format(run=run) for a in command])
    assert result.exit_code == 2, result.output
    assert "trace store row 2 (id 'abc123bb-fail') is not a readable rollout" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_list_and_rescore_print_markup_in_domains_and_stages_as_text(tmp_path: Path) -> None:
    run_dir = RunDir.create(tmp_path / "runs", name="markup")
    wrong = play(ARITH, [answer(0, 1)], rollout_id="mk-0001")
    with TraceStore(run_dir.traces_path) as store:
        store.record([dataclasses.replace(wrong, domain="[/]a"),
                      dataclasses.replace(wrong, id="mk-0002", domain="[red]b")], "[/]s")  # fmt: skip
    listed = posttrain("traces", "list", run_dir.path)
    assert listed.exit_code == 0, listed.output
    assert "[/]a" in listed.stdout and "[red]b" in listed.stdout and "[/]s" in listed.stdout
    rescored = posttrain("rescore", run_dir.path)
    assert rescored.exit_code == 0, rescored.output
    assert "[/]a" in rescored.stdout and "[red]b" in rescored.stdout
    with TraceStore(run_dir.traces_path) as store:  # a foreign id: show had raised MarkupError
        store.record([dataclasses.replace(wrong, id="mk[/x]3", timings={"[/y]": 1.0})], "s")
    shown = posttrain("traces", "show", run_dir.path, "mk[/x]3")
    assert shown.exit_code == 0, shown.output
    assert "mk[/x]3" in shown.stdout and "[/y]" in shown.stdout


@pytest.fixture
def degraded_run(tmp_path: Path) -> Path:
    """A run whose store holds rollouts with lone surrogates (stored escaped) and one too
    deep to serialize (a placeholder), next to clean ones."""
    run_dir = RunDir.create(tmp_path / "runs", name="r2")
    single = play(ARITH, [answer(0)], rollout_id="surr-single")
    single.turns[0].text += "\ud800"
    single.messages[-1].content += "\ud800"
    in_prompt = play(ARITH, [answer(3)], seed=3, rollout_id="surr-prompt")
    in_prompt.messages[0].content += "\ud800"  # the domain's task text
    multi = play(CALC, calc_texts(0), rollout_id="surr-multi")
    multi.turns[-1].text += "\ud800"
    multi.messages[-1].content += "\ud800"
    multi.verdict.reason += " \udfff"
    deep = play(ARITH, [answer(1)], seed=1, rollout_id="deep-0001")
    nested: Any = []
    for _ in range(100_000):
        nested = [nested]
    deep.turns[0].tool_calls = [ToolCall("calc", {"expr": nested})]
    with TraceStore(run_dir.traces_path) as store:
        clean = [play(ARITH, [answer(2)], seed=2, rollout_id="clean-0001"),
                 play(CALC, calc_texts(1), seed=1, rollout_id="clean-0002")]  # fmt: skip
        assert store.record([*clean, single, in_prompt, multi, deep], "grpo") == 6
        assert store.degraded == {"escaped": 3, "placeholder": 1}
    return run_dir.path


def test_list_and_show_print_rollouts_stored_degraded(degraded_run: Path) -> None:
    listed = posttrain("traces", "list", degraded_run)
    assert listed.exit_code == 0, listed.output
    assert "6 rollouts: 6 passed, 1 with an error" in listed.stdout
    errors = {r["id"]: r["error"] for r in ok_json("traces", "list", degraded_run)}
    assert errors["deep-0001"].startswith("trace not stored: cannot be serialized (Recursion")
    for rollout_id, seen in [("surr-multi", "\\ud800"), ("deep-0001", "RecursionError")]:
        shown = posttrain("traces", "show", degraded_run, rollout_id)
        assert shown.exit_code == 0, shown.output
        assert seen in shown.stdout
    as_json = ok_json("traces", "show", degraded_run, "surr-multi")
    assert as_json["turns"][-1]["text"].endswith("\ud800")


def test_rescore_skips_placeholders_and_replays_it_cannot_tokenize(degraded_run: Path) -> None:
    doc = ok_json("rescore", degraded_run)
    assert doc["per_domain"][ARITH] == {
        "reverified": 2, "changed": 1,  # its answer, verified clean, now ends in a surrogate
        "not_reverifiable": {"the episode itself failed, so there is no answer to verify": 1,
                             "the domain now makes a different task for this id": 1}}  # fmt: skip
    assert [c["id"] for c in doc["changes"]] == ["surr-single"]
    assert doc["per_domain"][CALC] == {
        "reverified": 1, "changed": 0,
        "not_reverifiable": {"a turn holds a lone surrogate, which no tokenizer replays": 1}}  # fmt: skip
    assert json.loads((degraded_run / "rescore.json").read_text()) == doc | {
        "rescored_at": doc["rescored_at"]
    }


@pytest.mark.parametrize(
    ("out", "n"), [("sft.jsonl", 2), ("sft.parquet", 2), ("rl.jsonl", 4), ("rl.parquet", 4)]
)
def test_export_leaves_out_texts_with_lone_surrogates(
    degraded_run: Path, tmp_path: Path, out: str, n: int
) -> None:
    rows = exported(degraded_run, out.split(".")[0], tmp_path / out)
    assert len(rows) == n and "\\ud800" not in json.dumps(rows.to_list())


def exported(run: Path, fmt: str, path: Path) -> datasets.Dataset:
    result = posttrain("export", run, "--format", fmt, "--out", path)
    assert result.exit_code == 0, result.output
    kind = "json" if path.suffix == ".jsonl" else "parquet"
    return datasets.load_dataset(kind, data_files=str(path), split="train")


def test_exported_rows_pass_trls_own_format_checks(run: Path, tmp_path: Path, tokenizer: Any) -> None:  # fmt: skip
    sft = exported(run, "sft", tmp_path / "sft.parquet")
    dpo = exported(run, "dpo", tmp_path / "dpo.jsonl")
    rl = exported(run, "rl", tmp_path / "rl.jsonl")
    for example in [*sft, *dpo, *rl]:
        assert is_conversational(example)
    text = apply_chat_template(sft[1], tokenizer)["text"]
    assert "<|tool|>116<|end|><|assistant|>116<|end|>" in text  # the calculator's reply
    pair = apply_chat_template(dpo[0], tokenizer)
    assert pair["prompt"].endswith("<|assistant|>") and pair["chosen"] == f"{answer(0)}<|end|>"
    assert apply_chat_template(rl[0], tokenizer)["prompt"] == "<|user|>95+5<|end|><|assistant|>"
    assert sft[1]["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"expression": "58*2"}  # fmt: skip


def test_trl_trains_one_sft_and_one_dpo_step_on_the_exports(
    run: Path, tmp_path: Path, tokenizer: Any, tiny_model: Any
) -> None:
    start = time.perf_counter()
    tiny_model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    model = str(tmp_path / "model")
    common: dict[str, Any] = dict(max_steps=1, per_device_train_batch_size=2, use_cpu=True,
                                  report_to=[], max_length=64, save_strategy="no",
                                  dataloader_num_workers=0)  # fmt: skip
    sft = SFTTrainer(model=model, args=SFTConfig(output_dir=str(tmp_path / "sft"), **common),
                     train_dataset=exported(run, "sft", tmp_path / "sft.jsonl"))  # fmt: skip
    assert sft.train().training_loss > 0
    dpo = DPOTrainer(model=model, args=DPOConfig(output_dir=str(tmp_path / "dpo"), **common),
                     train_dataset=exported(run, "dpo", tmp_path / "dpo.parquet"))  # fmt: skip
    assert dpo.train().training_loss > 0
    assert time.perf_counter() - start < 60
