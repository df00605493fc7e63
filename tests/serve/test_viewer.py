"""The trace viewer: list, filters, detail page, escaping, 404s, read-only access, errors."""

from __future__ import annotations

import html
import json
import re
import sqlite3
from pathlib import Path

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from posttrain.cli_view import view
from posttrain.serve.viewer import (
    RolloutFilter,
    TraceViewerError,
    cell_name,
    create_viewer,
    open_traces_readonly,
)
from posttrain.store.run_dir import RunDir
from posttrain.store.traces import TraceStore
from posttrain.types import Message, Rollout, ToolCall, Turn, Verdict

AGENT = "agent/bank-transfer-v1"  # registered, multi-turn, simulated API
ADD = "arith/addition-v1"
XSS = "<script>alert(1)</script>"


def rollout(
    rid: str,
    domain: str,
    passed: bool,
    reason: str,
    version: int,
    turns: list[Turn] | None = None,
    text: str = "4",
) -> Rollout:
    turns = turns or [
        Turn(text=text, token_ids=[1, 2], logprobs=[-0.1, -0.2], finish_reason="stop")
    ]
    messages = [Message("system", "be brief"), Message("user", f"task of {rid}")]
    for t in turns:
        messages += [Message("assistant", t.text, tool_calls=t.tool_calls), *t.observations]
    reward = 1.0 if passed else 0.0
    return Rollout(
        id=rid,
        task_id=f"task-{rid}",
        domain=domain,
        difficulty=3,
        prompt_ids=[7, 8, 9],
        completion_ids=[1, 2],
        loss_mask=[1, 1],
        logprobs=[-0.1, -0.2],
        messages=messages,
        turns=turns,
        verdict=Verdict(reward, passed, reason, components={"exact": reward, "format": 1.0}),
        policy_version=version,
        timings={"episode_s": 0.25},
    )


def agent_turns() -> list[Turn]:
    call = ToolCall("transfer", {"to": "alice", "amount": 30}, id="c1")
    return [
        Turn(
            text='<tool_call>{"name": "transfer"}</tool_call>',
            token_ids=[3],
            logprobs=[-0.3],
            finish_reason="stop",
            tool_calls=[call],
            observations=[Message("tool", "OBS: transfer of 30 to alice queued", name="transfer")],
        ),
        Turn(
            text="Done, the money is on its way.",
            token_ids=[4],
            logprobs=[-0.4],
            finish_reason="stop",
            observations=[Message("user", "USER: and what is my balance now?")],
        ),
        Turn(text="Your balance is 70.", token_ids=[5], logprobs=[-0.5], finish_reason="length"),
    ]


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    run = RunDir.create(tmp_path / "runs", name="r1")
    with TraceStore(run.traces_path) as traces:
        traces.record(
            [
                rollout("add-ok", ADD, True, "exact match", 0),
                rollout("add-bad", ADD, False, "expected 5, got 4", 1),
            ],
            stage="sft",
        )
        traces.record(
            [
                rollout("agent-bad", AGENT, False, "balance is wrong", 2, turns=agent_turns()),
                rollout("xss", ADD, True, "odd but right", 3, text=XSS),
                rollout("custom", "custom/thing-v1", False, "custom says no", 4),
            ],
            stage="grpo",
        )
    return run


@pytest.fixture
def client(run: RunDir) -> TestClient:
    return TestClient(create_viewer(run.path))


def shown(client: TestClient, query: str = "") -> list[str]:
    response = client.get("/" + query)
    assert response.status_code == 200, response.text
    return re.findall(r'<tr class="rollout [a-z]+" data-id="([^"]+)"', response.text)


def test_list_shows_every_rollout_newest_first(client: TestClient) -> None:
    assert shown(client) == ["custom", "xss", "agent-bad", "add-bad", "add-ok"]


def test_list_shows_counts_matching_and_total(client: TestClient) -> None:
    text = client.get("/?passed=0").text
    assert '<span id="matching">3</span>' in text
    assert '<span id="total">5</span>' in text


def test_list_row_shows_reason_cell_and_step(client: TestClient) -> None:
    text = client.get("/?domain=agent/bank-transfer-v1").text
    assert '<td class="reason">balance is wrong</td>' in text
    assert f'<td class="cell">{cell_name(AGENT)}</td>' in text
    assert '<td class="step">2</td>' in text


def test_domain_filter_keeps_only_that_domain(client: TestClient) -> None:
    assert shown(client, f"?domain={ADD}") == ["xss", "add-bad", "add-ok"]


def test_passed_filter_splits_passed_and_failed(client: TestClient) -> None:
    assert shown(client, "?passed=0") == ["custom", "agent-bad", "add-bad"]
    assert shown(client, "?passed=1") == ["xss", "add-ok"]
    assert len(shown(client, "?passed=all")) == 5


def test_stage_filter_keeps_only_that_stage(client: TestClient) -> None:
    assert shown(client, "?stage=sft") == ["add-bad", "add-ok"]


def test_step_range_is_inclusive(client: TestClient) -> None:
    assert shown(client, "?step_min=1&step_max=3") == ["xss", "agent-bad", "add-bad"]


def test_cell_filter_maps_domains_through_the_registry(client: TestClient) -> None:
    assert shown(client, RolloutFilter(cell=cell_name(AGENT)).query_string()) == ["agent-bad"]
    assert shown(client, "?cell=unregistered") == ["custom"]


def test_filters_combine(client: TestClient) -> None:
    assert shown(client, f"?domain={ADD}&passed=1&stage=grpo") == ["xss"]


def test_empty_form_fields_mean_any(client: TestClient) -> None:
    query = "?domain=&cell=&passed=all&stage=&step_min=&step_max="
    assert len(shown(client, query)) == 5


def test_bad_step_is_a_400_naming_the_parameter(client: TestClient) -> None:
    response = client.get("/?step_min=abc")
    assert response.status_code == 400
    assert "step_min must be an integer" in response.text


@pytest.mark.parametrize("query", ["step_min", "step_max", "page"])
def test_an_integer_beyond_64_bits_is_a_400(client: TestClient, query: str) -> None:
    response = client.get(f"/?{query}=99999999999999999999")
    assert response.status_code == 400
    assert f"{query} is out of range" in response.text


def test_a_page_whose_offset_overflows_is_a_400(client: TestClient) -> None:
    response = client.get(f"/?page={2**62}")  # × 100 rows a page: past 64 bits
    assert response.status_code == 400
    assert "page is out of range" in response.text


def test_pagination_splits_the_list(run: RunDir) -> None:
    client = TestClient(create_viewer(run.path, page_size=2))
    assert shown(client) == ["custom", "xss"]
    assert shown(client, "?page=3") == ["add-ok"]
    assert 'id="next"' in client.get("/?page=2").text
    assert 'id="next"' not in client.get("/?page=3").text


def test_filter_form_keeps_the_chosen_values(client: TestClient) -> None:
    text = client.get("/?passed=0&stage=grpo&step_min=2").text
    assert '<option value="0" selected>failed</option>' in text
    assert '<option value="grpo" selected>grpo</option>' in text
    assert 'id="step_min" name="step_min" type="number" size="5" value="2"' in text


def test_detail_shows_turns_tool_calls_observations_and_user_turns(client: TestClient) -> None:
    text = client.get("/rollout/agent-bad").text
    assert text.count('<section class="turn"') == 3
    assert '<span class="tool-name">transfer</span>' in text
    assert "&quot;amount&quot;: 30" in text
    assert "OBS: transfer of 30 to alice queued" in text
    assert 'class="message user-turn" data-role="user"' in text
    assert "USER: and what is my balance now?" in text
    assert '<span class="finish-reason">length</span>' in text


def test_detail_shows_prompt_verdict_components_and_timings(client: TestClient) -> None:
    text = client.get("/rollout/agent-bad").text
    assert "task of agent-bad" in text and "be brief" in text
    assert '<td class="reason">balance is wrong</td>' in text
    assert "<tr><th>format</th><td>1.0</td></tr>" in text
    assert "<tr><th>episode_s</th><td>0.25</td></tr>" in text


def test_detail_links_back_with_the_filters_kept(client: TestClient) -> None:
    text = client.get("/rollout/add-bad?passed=0&stage=sft").text
    assert '<a id="back" href="/?passed=0&amp;stage=sft">' in text


def test_list_links_to_detail_with_the_filters_kept(client: TestClient) -> None:
    text = client.get("/?passed=0").text
    assert 'href="/rollout/add-bad?passed=0"' in text


def test_a_rollout_whose_id_holds_a_slash_opens_from_its_link(run: RunDir) -> None:
    # The link quotes "/" as %2F, which the server decodes before routing: a 404.
    with TraceStore(run.traces_path) as traces:
        traces.record([rollout("import/run-1?#x", ADD, True, "ok", 0)], stage="sft")
    client = TestClient(create_viewer(run.path))
    link = re.search(r'href="(/rollout/import[^"]*)"', client.get("/").text)
    assert link is not None and link.group(1) == "/rollout/import%2Frun-1%3F%23x"
    page = client.get(html.unescape(link.group(1)))
    assert page.status_code == 200 and "import/run-1?#x</code>" in page.text
    one = client.get("/api/rollouts/import%2Frun-1%3F%23x")
    assert one.status_code == 200 and one.json()["rollout"]["id"] == "import/run-1?#x"


def test_model_text_is_escaped(client: TestClient) -> None:
    text = client.get("/rollout/xss").text
    assert XSS not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_unknown_id_is_a_404_page(client: TestClient) -> None:
    response = client.get("/rollout/nope")
    assert response.status_code == 404
    assert "no rollout with id &#x27;nope&#x27;" in response.text


def test_api_lists_with_the_same_filters(client: TestClient) -> None:
    data = client.get("/api/rollouts", params={"passed": "0", "stage": "grpo"}).json()
    assert [r["id"] for r in data["rows"]] == ["custom", "agent-bad"]
    assert (data["matching"], data["total"]) == (2, 5)


def test_api_returns_one_rollout_that_round_trips(client: TestClient) -> None:
    data = client.get("/api/rollouts/agent-bad").json()
    assert data["stage"] == "grpo"
    assert Rollout.from_dict(data["rollout"]).turns[0].tool_calls[0].name == "transfer"


def test_api_gives_a_nan_or_infinity_in_a_rollout_as_null(run: RunDir) -> None:
    # Strict JSON has no NaN: such a rollout's JSON page was a 500, not the rollout.
    odd = rollout("add-nan", ADD, False, "scorer gave nan", 3)
    odd.verdict.components["exact"] = float("nan")
    odd.logprobs[0] = float("-inf")
    with TraceStore(run.traces_path) as traces:
        traces.record([odd], stage="grpo")
    response = TestClient(create_viewer(run.path)).get("/api/rollouts/add-nan")
    assert response.status_code == 200, response.text
    data = json.loads(response.text, parse_constant=lambda name: pytest.fail(name))
    assert data["rollout"]["verdict"]["components"] == {"exact": None, "format": 1.0}
    assert data["rollout"]["logprobs"] == [None, -0.2]


def test_viewer_leaves_the_store_file_unchanged(run: RunDir) -> None:
    before = run.traces_path.stat()
    client = TestClient(create_viewer(run.path))
    for path in ["/", "/?cell=unregistered&passed=0", "/rollout/agent-bad", "/api/rollouts"]:
        assert client.get(path).status_code == 200
    after = run.traces_path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_readonly_connection_refuses_writes(run: RunDir) -> None:
    conn = open_traces_readonly(run.traces_path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM rollouts")
    conn.close()


def test_missing_store_is_a_clear_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(TraceViewerError, match=re.escape(str(tmp_path / "traces.sqlite"))):
        create_viewer(tmp_path)


def test_corrupt_store_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "traces.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(TraceViewerError, match="not a readable trace store"):
        create_viewer(tmp_path)


def test_cli_view_of_a_run_without_traces_fails_with_exit_2(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(view)
    result = CliRunner().invoke(app, [str(tmp_path)])
    assert result.exit_code == 2
    assert "no trace store" in result.output


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_cli_view_with_a_port_out_of_range_fails_with_exit_2(run: RunDir, port: str) -> None:
    app = typer.Typer()
    app.command()(view)
    result = CliRunner().invoke(app, [str(run.path), "--port", port])
    assert result.exit_code == 2, result.output
    assert f"--port must be in 0..65535, got {port}" in result.output


def test_rollouts_recorded_while_viewing_show_up(run: RunDir) -> None:
    client = TestClient(create_viewer(run.path))
    with TraceStore(run.traces_path) as traces:  # a live run keeps its writer open
        traces.record([rollout("late", ADD, True, "late but right", 5)], stage="grpo")
        assert shown(client)[0] == "late"


def test_counts_grow_with_rollouts_recorded_after_a_page_load(run: RunDir) -> None:
    client = TestClient(create_viewer(run.path))
    assert '<span id="matching">2</span>' in client.get("/?passed=1").text
    with TraceStore(run.traces_path) as traces:
        traces.record([rollout("late", "custom/new-v1", True, "late", 5)], stage="dpo")
    text = client.get("/?passed=1").text
    assert '<span id="matching">3</span>' in text and '<span id="total">6</span>' in text
    assert '<option value="dpo">dpo</option>' in text


def test_missing_run_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceViewerError, match="run directory .* does not exist"):
        create_viewer(tmp_path / "no-such-run")


def test_pages_and_json_show_rollouts_stored_with_lone_surrogates(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "runs", name="r1")
    bad = rollout("surr", ADD, False, "expected 5, got 4\ud800", 0, text="4\ud800")
    bad.error = "session failed on \udfff"
    with TraceStore(run.traces_path) as traces:
        traces.record([bad, rollout("add-ok", ADD, True, "exact match", 1)], stage="grpo")
    client = TestClient(create_viewer(run.path))
    assert shown(client) == ["add-ok", "surr"]
    page = client.get("/rollout/surr")
    assert page.status_code == 200 and "got 4\\ud800" in page.text
    listed = client.get("/api/rollouts")
    assert listed.status_code == 200
    assert [r["error"] for r in listed.json()["rows"]] == [None, "session failed on \udfff"]
    one = client.get("/api/rollouts/surr")
    assert one.status_code == 200 and Rollout.from_dict(one.json()["rollout"]) == bad


def test_a_row_whose_json_is_not_a_rollout_is_named_not_a_bare_500(run: RunDir) -> None:
    import sqlite3

    with sqlite3.connect(run.traces_path) as conn:  # written by other code
        conn.execute(
            "INSERT INTO rollouts VALUES ('bad', 't', 'arith/addition-v1', 'grpo', 1, 0.0, 0, ?, 0.0)",
            ('{"id": "bad", "verdict": {"reason": "x"}, "difficulty": 1}',),
        )
    client = TestClient(create_viewer(run.path))
    page = client.get("/rollout/bad")
    assert page.status_code == 500 and "unreadable JSON" in page.text
    api = client.get("/api/rollouts/bad")
    assert api.status_code == 500 and "unreadable JSON" in api.json()["error"]
    assert client.get("/").status_code == 200  # the list still shows the rest
