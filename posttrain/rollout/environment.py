"""The environment's reply to an assistant turn, for `rollout/episode.py`.

`environment_reply` serves the turn's tool calls through `tools.guarded_call` (parse
errors answered as error observations), or, when the turn has none, asks the session's
scripted user for its turn. Tool calls run on a `ResumingSession`: a call whose sandbox
died (`SandboxError`) is served again on a fresh session (`domain.open` + `restore` of
the snapshot taken after the previous environment turn), with the turn's earlier calls
replayed first, up to `MAX_RESUMES` times per episode.

Not guaranteed: a replayed call is assumed to do what it did the first time (sessions
are deterministic given their snapshot); `domain.open`, `restore` and `Session.close` are
not bounded here; a scripted user abandoned at its timeout keeps running on its thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from posttrain.domains.base import Session
from posttrain.sandbox.results import SandboxError
from posttrain.tools import count_parse_errors, guarded_call, run_with_timeout
from posttrain.types import Message, Observation, ToolCall

if TYPE_CHECKING:
    from posttrain.rollout.episode import EpisodeState

MAX_RESUMES = 3  # fresh sessions per episode after sandbox failures


def take_snapshot(session: Session | None) -> Any:
    """The session's state now, for resuming on a fresh one; None if it cannot say."""
    take = getattr(session, "snapshot", None)
    if take is None:
        return None
    try:
        return take()
    except Exception:  # no snapshot: a later sandbox failure ends the episode instead
        return None


class ResumingSession:
    """The episode's session as the tool guard sees it: a call whose sandbox died
    (`SandboxError`) is served again on a fresh session restored from the snapshot
    after the previous turn, with this turn's earlier calls replayed first, up to
    `MAX_RESUMES` times per episode."""

    def __init__(self, ep: EpisodeState) -> None:
        self.ep = ep
        self.served: list[ToolCall] = []  # this turn's calls so far

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(getattr(self.ep.session, "tools", []))

    def call(self, tool_call: ToolCall) -> Observation:
        ep = self.ep
        while True:
            assert ep.session is not None
            try:
                observation = ep.session.call(tool_call)
                break
            except SandboxError:
                if ep.snapshot is None or ep.resumes >= MAX_RESUMES:
                    raise  # the guard retries, then answers with an error observation
            resume(ep)
            for earlier in self.served:
                ep.session.call(earlier)
        self.served.append(tool_call)
        return observation


def resume(ep: EpisodeState) -> None:
    """Replace the episode's session by a fresh one restored from `ep.snapshot`."""
    old = ep.session
    try:
        if old is not None:
            old.close()
    except Exception:  # the dead session may not close cleanly; it is dropped either way
        pass
    opener = getattr(ep.domain, "open", None)
    if opener is None:  # only domains with sessions reach here
        raise RuntimeError(f"domain {ep.task.domain} cannot open a fresh session")
    fresh = opener(ep.task, None)
    fresh.restore(ep.snapshot)
    ep.session = fresh
    ep.resumes += 1


def environment_reply(ep: EpisodeState, calls: list[Any], errors: list[str]) -> list[Message]:
    """Tool observations for the calls (and parse errors), else the scripted user's turn."""
    assert ep.session is not None
    if calls or errors:
        count_parse_errors(ep.tool_counters, errors)
        session = ResumingSession(ep)
        replies = [guarded_call(session, c, ep.tool_policy, ep.tool_counters).message for c in calls]  # fmt: skip
        replies += [Message("tool", f"error: {e}") for e in errors]
        return replies
    live, last, limit = ep.session, ep.messages[-1], ep.tool_policy.user_turn_timeout()
    finished, user = run_with_timeout(lambda: live.user_turn(last), limit)
    if not finished:  # the worker thread is abandoned; the episode ends as a session failure
        raise TimeoutError(f"the scripted user did not answer within {limit:g}s")
    if isinstance(user, Exception):
        raise user
    if isinstance(user, BaseException):  # raised on the guard's thread: no Ctrl-C lands there
        raise RuntimeError(f"the scripted user raised {type(user).__name__}: {user}") from user
    return [] if user is None else [user]  # type: ignore[list-item]
