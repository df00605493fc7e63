"""The episode loop: tasks in, verified token-exact `Rollout`s out, single- or multi-turn.

`run_episodes` steps every episode of a batch in lockstep so each model call is
one batched `Engine.generate`: the first turn asks for `n` samples per task (one
shared prefill), later turns continue each episode on its own. After an assistant
turn, tool calls (`<tool_call>{json}</tool_call>`) go to the domain's `Session`;
the observations, and any scripted user turn, are rendered with the tokenizer's
chat template and appended as environment tokens (loss mask 0). Sampled tokens
are kept exactly as the engine produced them (never re-tokenized).

Tool calls go through `tools.guarded_call`: a tool that raises, times out or is not
declared answers with an error observation the model sees (and a counter in
`Rollout.tool_stats`). A crash of the session itself (its scripted user raising, or not
answering within `ToolPolicy.user_turn_timeout()`: it runs on the guard's worker threads),
a session that cannot open (its sandbox did not start) or a verifier that raises ends
that episode as a recorded failure (`Rollout.error` or `Verdict.error`, reward 0); the
batch goes on. So does a `sys.exit()` in a domain's code (`EPISODE_CRASHES`); a
KeyboardInterrupt stops `run_episodes` (after it closes its sessions). An engine error
that is one request's fails that request's episodes only (`rollout/engine_calls.py`
splits the batch to find it); one that fails every request raises, the sessions
closed and the engine's kept KV caches released first. Not bounded here: an engine
call, `domain.open`, `Session.close`, a snapshot or restore, and the verifier (the
scheduler's engine retries and the sandbox's own limits bound some of these); an
abandoned user turn's thread runs on. A session whose
sandbox dies (`SandboxError`) is not a crash: the session's snapshot after each
environment turn lets the episode resume on a fresh session (`domain.open` +
`restore`), which serves the interrupted turn again (`timings["sandbox_resumes"]`).
Serving a turn (tool calls, resumes, the scripted user) is `rollout/environment.py`.

The step functions (`open_group`, `record_turn`, `environment_step`, `finish`) are
what `rollout/scheduler.py` runs concurrently; `run_episodes` runs them in lockstep.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from posttrain.domains.base import Domain, Session
from posttrain.engines.base import Completion, Engine, GenerationRequest, SamplingParams
from posttrain.engines.prefix_cache import sample_episode
from posttrain.rollout.context_strategy import OverLongPolicy, PromptTooLongError, fit_prompt
from posttrain.rollout.engine_calls import Outcome, describe, generate_apart, shared_failure
from posttrain.rollout.environment import environment_reply, take_snapshot
from posttrain.rollout.rendering import encode, render
from posttrain.tools import (
    ParsedCalls,
    ToolCounters,
    ToolPolicy,
    detect_tool_format,
    parse_for_format,
)
from posttrain.types import Message, Rollout, Task, Turn, Verdict

# What a domain's code (a session, a scripted user, a verifier) may raise that ends its
# episode as a recorded failure: any error, and SystemExit (a plug-in's `sys.exit()`:
# nothing in posttrain turns a signal into one during rollouts, `train/preemption.py`
# polls). A KeyboardInterrupt goes on up: on the caller's thread it may be Ctrl-C. The
# scheduler's worker threads, where no Ctrl-C arrives, record every BaseException.
EPISODE_CRASHES = (Exception, SystemExit)


def prompt_ids(tokenizer: Any, task: Task) -> list[int]:
    return encode(tokenizer, render(tokenizer, task.prompt, add_generation_prompt=True))


def plain_prompt_ids(tokenizer: Any, task: Task) -> list[int]:
    """The prompt as plain `role: content` text, for a failure recorded because the
    chat template refused it: the trace keeps it, and trainers need a prompt token."""
    return encode(tokenizer, "\n\n".join(f"{m.role}: {m.content}" for m in task.prompt))


def env_token_ids(
    tokenizer: Any,
    history: list[Message],
    new: list[Message],
    sampled: list[int] | None = None,
    next_turn: bool = True,
) -> list[int]:
    """Tokens that the template puts between the last assistant turn in `history`
    and the next assistant turn, after `new` (tool or user messages) is appended;
    with `next_turn=False` (no model turn follows), without the next turn's header.

    With the turn's `sampled` ids, the split point is what the model actually
    produced (prompt + sampled tokens, end-of-turn token included), so text the
    template adds after that token (ChatML's newline after `<|im_end|>`) lands in
    the environment tokens instead of being lost."""
    after = render(tokenizer, history + new, add_generation_prompt=next_turn)
    if sampled is not None:
        consumed = render(tokenizer, history[:-1], add_generation_prompt=True) + str(
            tokenizer.decode(sampled, skip_special_tokens=False)
        )
        if after.startswith(consumed):
            return encode(tokenizer, after[len(consumed) :])
    before = render(tokenizer, history, add_generation_prompt=False)
    if not after.startswith(before):
        raise ValueError("chat template is not prefix-stable; cannot append environment turns")
    return encode(tokenizer, after[len(before) :])


@dataclass(eq=False)
class EpisodeState:
    task: Task
    domain: Domain | None  # None only when the lookup failed (the episode is done at open)
    session: Session | None
    prompt_ids: list[int]
    messages: list[Message]
    completion_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    policy_failed: bool = False  # the error is the policy's doing (a full context)
    started: float = field(default_factory=time.perf_counter)
    model_seconds: float = 0.0
    queue_s: float = 0.0  # waiting for the engine (the scheduler's)
    snapshot: Any = None  # the session's state after the last environment turn
    tool_format: str = "tool_call"  # how the model writes tool calls (`tools/formats.py`)
    tool_policy: ToolPolicy = field(default_factory=ToolPolicy)
    tool_counters: ToolCounters = field(default_factory=ToolCounters)
    group_key: str = ""  # the engine's KV-cache key of the group's first turn
    cache_key: str = ""  # ... and of this episode's later turns
    resumes: int = 0  # sessions replaced after their sandbox died


def run_episodes(
    tasks: Sequence[Task],
    engine: Engine,
    tokenizer: Any,
    params: SamplingParams,
    get_domain: Callable[[str], Domain],
    policy_version: int = 0,
    max_context: int | None = None,
    over_long: OverLongPolicy | None = None,
    tool_policy: ToolPolicy | None = None,
) -> list[list[Rollout]]:
    """Run `params.n` episodes per task; returns, per task, its `n` verified rollouts.
    Tool calls go through `tools.guarded_call` under `tool_policy` (default `ToolPolicy()`).

    With `max_context` (the model's window), a prompt that leaves fewer than
    `params.max_tokens` tokens free is handled by `over_long` (default: `error`).

    An engine error that is one request's (`engine_calls`: found by splitting the
    batch) is a recorded failure of that request's episodes; one that fails every
    request, or is a bug in the engine (`engine_calls.shared_failure`), raises, as
    does a KeyboardInterrupt: either way the sessions opened are closed and the
    engine's kept KV caches released first."""
    episodes: list[list[EpisodeState]] = []
    try:
        for task in tasks:
            episodes.append(
                open_group(task, params.n, get_domain, tokenizer, params, max_context,
                           over_long or OverLongPolicy(), tool_policy)
            )  # fmt: skip
        _run_turns(episodes, engine, tokenizer, params, max_context)
        release_caches(engine, [e for group in episodes for e in group])
        return [[finish(e, policy_version) for e in group] for group in episodes]
    except BaseException:
        with contextlib.suppress(Exception):  # the error that got us here matters more
            release_caches(engine, [e for group in episodes for e in group])
        raise
    finally:  # sessions `finish` did not reach: an engine error, an interrupt
        close_sessions([e for group in episodes for e in group])


def _run_turns(
    episodes: list[list[EpisodeState]],
    engine: Engine,
    tokenizer: Any,
    params: SamplingParams,
    max_context: int | None,
) -> None:
    """Every turn of every episode, in lockstep: one batched engine call per turn."""
    one = SamplingParams(params.max_tokens, params.temperature, params.top_p, 1, params.stop)
    # First turn: one request per task with n samples sharing the prompt's prefill. A
    # group whose prompt cannot start (too long, say) never reaches the model.
    fitting = [g for g in episodes if not all(e.done for e in g)]
    start = time.perf_counter()
    outcomes = _generate(engine, [first_request(g, params) for g in fitting])
    elapsed = (time.perf_counter() - start) / max(1, sum(len(g) for g in episodes))
    for group, outcome in zip(fitting, outcomes, strict=True):
        for k, ep in enumerate(group):
            if ep.done:  # its session did not open: already a failure; its sample is dropped
                continue
            if isinstance(outcome, Exception):
                ep.error, ep.done = f"engine failed: {describe(outcome)}", True
                continue
            ep.model_seconds += elapsed
            _advance(ep, outcome[k], tokenizer, max_context, params.max_tokens)

    while active := [e for group in episodes for e in group if not e.done]:
        start = time.perf_counter()
        outcomes = _generate(engine, [next_request(e, one) for e in active])
        elapsed = (time.perf_counter() - start) / len(active)
        for ep, outcome in zip(active, outcomes, strict=True):
            if isinstance(outcome, Exception):
                ep.error, ep.done = f"engine failed: {describe(outcome)}", True
                continue
            ep.model_seconds += elapsed
            _advance(ep, outcome[0], tokenizer, max_context, params.max_tokens)


def _generate(engine: Engine, requests: list[GenerationRequest]) -> list[Outcome]:
    """Per request, its completions or the error that is its own; an error that fails
    every request (`engine_calls.shared_failure`) raises."""
    if not requests:
        return []
    outcomes = generate_apart(engine, requests)
    for outcome in outcomes:
        if isinstance(outcome, Exception) and shared_failure(outcome):
            raise outcome
    return outcomes


def first_request(group: list[EpisodeState], params: SamplingParams) -> GenerationRequest:
    """A group's first turn: one request, `params.n` samples sharing the prefill. Only
    a multi-turn domain's group names its cache key: a single-turn episode has no next
    turn to reuse a kept KV cache, so the engine keeps none (copying every row's K/V
    to CPU for nothing)."""
    ep = group[0]
    multi_turn = ep.domain is not None and ep.domain.max_turns > 1
    return GenerationRequest(
        ep.prompt_ids, params, key=ep.task.id, turn=0, messages=list(ep.messages),
        episode=ep.group_key if multi_turn else None,
    )  # fmt: skip


def next_request(ep: EpisodeState, one: SamplingParams) -> GenerationRequest:
    """An episode's next turn: its whole sequence so far, whose prefix the engine may
    still hold in its KV cache under the episode's key."""
    return GenerationRequest(
        ep.prompt_ids + ep.completion_ids, one, key=ep.task.id, turn=len(ep.turns),
        messages=list(ep.messages), episode=ep.cache_key,
    )  # fmt: skip


def close_sessions(episodes: Sequence[EpisodeState]) -> None:
    """Close the sessions still open among `episodes` (abandoned or unfinished: a
    session may hold a sandbox); best effort, as the episodes end either way."""
    for ep in episodes:
        session, ep.session = ep.session, None
        try:
            if session is not None:
                session.close()
        except EPISODE_CRASHES:
            pass


def release_caches(engine: Any, episodes: Sequence[EpisodeState]) -> None:
    """Let the engine drop the KV caches it keeps for `episodes` (if it keeps any)."""
    release = getattr(engine, "release", None)
    if release is not None and episodes:
        release([e.cache_key for e in episodes])


def open_group(
    task: Task,
    n: int,
    get_domain: Callable[[str], Domain],
    tokenizer: Any,
    params: SamplingParams,
    max_context: int | None,
    policy: OverLongPolicy,
    tool_policy: ToolPolicy | None = None,
) -> list[EpisodeState]:
    """`n` fresh episodes of `task`, its prompt fitted to `max_context` by `policy`.
    An episode that cannot start is returned already done, with the reason as its error
    and no session: all `n` when the prompt cannot fit, the chat template refuses it or
    the domain lookup raises, each one whose `domain.open` raises. So a group may mix
    done and running episodes."""
    problem = None
    try:
        ids = prompt_ids(tokenizer, task)  # rendered and encoded once for the group
    except Exception as exc:  # a template refusing this prompt (a role it lacks): task fails
        problem = f"chat template refused the prompt: {type(exc).__name__}: {exc}"
        ids = plain_prompt_ids(tokenizer, task)
    if problem is None and max_context is not None:
        try:
            fitted = fit_prompt(task, tokenizer, max_context, params.max_tokens, policy)
        except PromptTooLongError as exc:
            problem = str(exc)
        else:
            if fitted is not task:
                task, ids = fitted, prompt_ids(tokenizer, fitted)
    domain: Domain | None = None
    try:
        domain = get_domain(task.domain)
    except Exception as exc:  # e.g. a worker that lacks a plug-in domain: this task fails
        problem = problem or f"domain lookup failed: {type(exc).__name__}: {exc}"
    group = [_open(task, domain, list(ids), problem) for _ in range(n)]
    fmt = detect_tool_format(tokenizer)
    group_key = uuid.uuid4().hex
    for k, ep in enumerate(group):
        ep.tool_format, ep.tool_policy = fmt, tool_policy or ep.tool_policy
        ep.group_key, ep.cache_key = group_key, sample_episode(group_key, k, n)
    return group


def _open(task: Task, domain: Domain | None, ids: list[int], problem: str | None) -> EpisodeState:
    """One episode of `task`, whose prompt encodes to `ids`; done at once, with
    `problem` as its error, when there is one or when its session cannot open. No
    session is opened for an episode that cannot run (a session may hold a sandbox)."""
    ep = EpisodeState(task, domain, None, ids, list(task.prompt))
    opener = getattr(domain, "open", None)
    if problem is None and opener is not None:
        try:
            ep.session = opener(task, None)
        except EPISODE_CRASHES as exc:  # a sandbox that did not start fails this episode only
            problem = f"session open failed: {type(exc).__name__}: {exc}"
    ep.error, ep.done = problem, problem is not None
    ep.snapshot = take_snapshot(ep.session)
    return ep


def _advance(
    ep: EpisodeState,
    completion: Completion,
    tokenizer: Any,
    max_context: int | None,
    max_tokens: int,
) -> None:
    """Record one sampled assistant turn; serve its tool calls or end the episode."""
    parsed = record_turn(ep, completion)
    if not ep.done:
        environment_step(ep, parsed, tokenizer, max_context, max_tokens)


def record_turn(ep: EpisodeState, completion: Completion) -> ParsedCalls:
    """Append one sampled assistant turn (its exact ids and logprobs) to the episode;
    the episode is done unless the turn stopped normally and a session can reply."""
    parsed = parse_for_format(completion.text, ep.tool_format)
    turn = Turn(
        text=completion.text,
        token_ids=list(completion.token_ids),
        logprobs=list(completion.logprobs),
        finish_reason=completion.finish_reason,
        tool_calls=parsed.calls,
    )
    ep.turns.append(turn)
    ep.completion_ids += turn.token_ids
    ep.loss_mask += [1] * len(turn.token_ids)
    ep.logprobs += turn.logprobs
    ep.messages.append(Message("assistant", completion.text, tool_calls=parsed.calls))
    if completion.finish_reason != "stop" or ep.session is None:
        ep.done = True
    return parsed


def environment_step(
    ep: EpisodeState,
    parsed: ParsedCalls,
    tokenizer: Any,
    max_context: int | None,
    max_tokens: int,
) -> None:
    """The environment's reply to the last assistant turn (tool observations or the
    scripted user), appended as environment tokens; ends the episode when there is
    none, at `max_turns`, when the context is full, or when the session fails.

    At `max_turns` the turn's tool calls still run (they change the state a verifier
    judges), so their observations are recorded like any turn's, closed without a next
    turn's header; a scripted user's turn there is asked for (it may update the
    session) but not recorded, as no model turn answers it. No context check there."""
    turn = ep.turns[-1]
    assert ep.domain is not None  # an episode without one ended at open
    last = len(ep.turns) >= ep.domain.max_turns
    try:
        new = environment_reply(ep, parsed.calls, parsed.errors)
        unanswered_user = last and not (parsed.calls or parsed.errors)  # no turn follows it
        if not new or unanswered_user:
            ep.done = True
            return
        env = env_token_ids(tokenizer, ep.messages, new, turn.token_ids, next_turn=not last)
    except EPISODE_CRASHES as exc:  # a crashed session is a recorded failure, not a dead batch
        ep.error = f"session failed: {type(exc).__name__}: {exc}"
        ep.done = True
        return
    turn.observations = new
    turn.env_token_ids = env
    ep.messages += new
    ep.completion_ids += env
    ep.loss_mask += [0] * len(env)
    ep.logprobs += [0.0] * len(env)
    if last:
        ep.done = True
        return
    ep.snapshot = take_snapshot(ep.session)
    used = len(ep.prompt_ids) + len(ep.completion_ids)
    if max_context is not None and used + max_tokens > max_context:
        ep.error = f"context full: {used} tokens used of {max_context}"
        ep.done = ep.policy_failed = True


def finish(ep: EpisodeState, policy_version: int) -> Rollout:
    rollout = Rollout(
        id=uuid.uuid4().hex,
        task_id=ep.task.id,
        domain=ep.task.domain,
        difficulty=ep.task.difficulty,
        prompt_ids=ep.prompt_ids,
        completion_ids=ep.completion_ids,
        loss_mask=ep.loss_mask,
        logprobs=ep.logprobs,
        messages=ep.messages,
        turns=ep.turns,
        verdict=Verdict(0.0, False, "not verified"),
        policy_version=policy_version,
        error=ep.error,
        judged=ep.error is None or ep.policy_failed,
    )
    if ep.error is None:
        assert ep.domain is not None  # an episode without one ended at open, with an error
        start = time.perf_counter()
        try:
            rollout.verdict = ep.domain.verify(ep.task, rollout, ep.session)
        except EPISODE_CRASHES as exc:  # the verifier failed: never count it as a wrong answer
            rollout.verdict = Verdict(
                0.0, False, "the verifier raised", error=f"{type(exc).__name__}: {exc}"
            )
        rollout.timings["verify_s"] = time.perf_counter() - start
    else:
        rollout.verdict = Verdict(0.0, False, ep.error)
    session, ep.session = ep.session, None  # closed once, here, whatever happens
    if session is not None:
        try:
            session.close()
        except EPISODE_CRASHES as exc:
            rollout.timings["close_failed"] = 1.0
            rollout.error = rollout.error or f"session close failed: {exc}"
    rollout.tool_stats = (
        ep.tool_counters.as_metrics()
        if ep.tool_counters.calls or ep.tool_counters.malformed
        else {}
    )
    rollout.timings["model_s"] = ep.model_seconds
    if ep.resumes:
        rollout.timings["sandbox_resumes"] = float(ep.resumes)
    rollout.timings["episode_s"] = time.perf_counter() - ep.started
    return rollout


def replay_references(
    tasks: Sequence[Task], tokenizer: Any, get_domain: Callable[[str], Domain]
) -> list[Rollout]:
    """Each task's reference played through the real episode loop (SFT data, checks)."""
    from posttrain.engines.replay import ReplayEngine

    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, get_domain(task.domain).reference(task))
    params = SamplingParams(max_tokens=1 << 16, temperature=0.0)
    return [group[0] for group in run_episodes(tasks, engine, tokenizer, params, get_domain)]
