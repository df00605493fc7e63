"""The shared multi-turn body: scripted user, violations, verdict, replayed failures."""

from __future__ import annotations

from posttrain.domains.agents import DOMAINS
from posttrain.domains.agents.episode_tasks import YES, AgentTaskDomain, reply_value, same_value
from posttrain.tools import parse_tool_calls
from posttrain.types import Message, Rollout, Turn, Verdict
from tests.domains.agents.play import play, tool

TRANSFER = next(d for d in DOMAINS if d.id == "agent/bank-transfer-v1")
assert isinstance(TRANSFER, AgentTaskDomain)


def _gold_reads_and_ids(seed: int) -> tuple[list[str], str, str]:
    task = TRANSFER.generate(seed, 1)
    reads = [tool(c["name"], **c["arguments"]) for c in task.meta["plan"]["reads"]]
    write = task.meta["plan"]["writes"][0]["arguments"]
    return reads, write["from_account_id"], write["to_account_id"]


def test_the_reference_passes_when_played_turn_by_turn() -> None:
    for domain in DOMAINS[:9]:
        task = domain.generate(4, 10)
        verdict, _ = play(domain, task, [m.content for m in domain.reference(task).turns])
        assert verdict.passed, (domain.id, verdict.reason)


def test_the_reference_recovers_from_the_failures_it_meets() -> None:
    task = TRANSFER.generate(3, 10)
    texts = [m.content for m in TRANSFER.reference(task).turns]
    assert len(texts) > len(set(texts))  # some call was repeated after a failure
    verdict, session = play(TRANSFER, task, texts)
    assert verdict.passed
    assert verdict.components == {"state": 1.0, "reply": 1.0, "policy": 1.0, "grounded": 1.0}


def test_a_right_guess_without_reading_the_records_does_not_pass() -> None:
    dispute = next(d for d in DOMAINS if d.id == "agent/bank-dispute-v1")
    task = next(t for t in (dispute.generate(s, 1) for s in range(200))
                if not t.meta["plan"]["writes"])  # fmt: skip
    guess = "ANSWER: " + task.answer["reply"]
    verdict, _ = play(dispute, task, [guess])
    assert not verdict.passed and "never read" in verdict.reason
    assert verdict.components == {"state": 1.0, "reply": 1.0, "policy": 1.0, "grounded": 0.0}
    reads = [tool(c["name"], **c["arguments"]) for c in task.meta["plan"]["reads"]]
    assert play(dispute, task, [*reads, guess])[0].passed


def test_a_policy_violating_write_is_recorded_and_fails() -> None:
    for seed in range(50):
        task = TRANSFER.generate(seed, 1)
        reads, source, target = _gold_reads_and_ids(seed)
        if task.meta["db"]["accounts"][source]["balance_cents"] < 260_000:
            continue  # the bank itself would refuse: insufficient funds
        big = tool("transfer", from_account_id=source, to_account_id=target, amount=2600.0)
        verdict, session = play(TRANSFER, task, [*reads, "Shall I?", big, "ANSWER: 1.00"])
        assert len(session.violations) == 1 and "limited to $2,500.00" in session.violations[0]
        assert verdict.components["policy"] == 0.0 and not verdict.passed and verdict.reward == 0.0
        return
    raise AssertionError("no seed with a rich enough source account")


def test_a_write_before_the_user_confirms_is_a_violation() -> None:
    task = TRANSFER.generate(0, 1)
    reference = [m.content for m in TRANSFER.reference(task).turns]
    confirm = next(i for i, t in enumerate(reference) if "<tool_call>" not in t)
    reordered = reference[:confirm] + reference[confirm + 1 :]  # writes, then the answer, no yes
    verdict, session = play(TRANSFER, task, reordered)
    assert session.violations == [session.violations[0]] and "confirmed" in session.violations[0]
    assert verdict.components == {"state": 1.0, "reply": 1.0, "policy": 0.0, "grounded": 1.0}
    assert not verdict.passed


def test_the_scripted_user_says_yes_once_and_stops_at_the_answer() -> None:
    session = TRANSFER.open(TRANSFER.generate(0, 1))
    assert session.user_turn(Message("assistant", "May I?")) == Message("user", YES)
    assert session.user_turn(Message("assistant", "Done, anything else?")) is None
    fresh = TRANSFER.open(TRANSFER.generate(0, 1))
    assert fresh.user_turn(Message("assistant", "ANSWER: 12.00")) is None


def test_the_reply_must_be_exactly_one_answer_line() -> None:
    assert reply_value("ANSWER: 12.50") == "12.50"
    assert reply_value("  ANSWER:T-1, T-2 \n") == "T-1, T-2"
    assert reply_value("Sure. ANSWER: 12.50") is None
    assert reply_value("ANSWER: 12.50\nBye") is None
    assert reply_value("ANSWER:") is None


def test_values_compare_numbers_to_the_cent_and_lists_up_to_spacing() -> None:
    assert same_value("$1,234.5", "1234.50") and not same_value("1234.51", "1234.50")
    assert same_value("t-1,T-2", "T-1, T-2") and not same_value("T-2, T-1", "T-1, T-2")
    assert same_value("none", "NONE")


def test_verify_without_a_session_replays_the_rollout() -> None:
    task = TRANSFER.generate(2, 6)
    texts = [m.content for m in TRANSFER.reference(task).turns]
    live, _ = play(TRANSFER, task, texts)
    turns = [Turn(t, [], [], "stop", parse_tool_calls(t).calls) for t in texts]
    rollout = Rollout(
        "r", task.id, task.domain, 6, [], [], [], [], [], turns, Verdict(0.0, False, "-")
    )
    assert TRANSFER.verify(task, rollout, None) == live


def test_snapshot_and_restore_rewind_the_session() -> None:
    task = TRANSFER.generate(1, 9)
    calls = [c for m in TRANSFER.reference(task).turns for c in parse_tool_calls(m.content).calls]
    session = TRANSFER.open(task)
    snap = session.snapshot()
    first = [session.call(c).content for c in calls]
    session.restore(snap)
    assert [session.call(c).content for c in calls] == first


def test_an_amount_the_bank_refuses_is_an_error_observation_not_an_exception() -> None:
    task = TRANSFER.generate(0, 1)
    _, source, target = _gold_reads_and_ids(0)
    session = TRANSFER.open(task)
    for amount in (-5.0, 0, 2e9):
        call = parse_tool_calls(tool("transfer", from_account_id=source, to_account_id=target, amount=amount)).calls[0]  # fmt: skip
        observation = session.call(call)
        assert observation.error and "positive number" in observation.content
    assert session.violations == []
