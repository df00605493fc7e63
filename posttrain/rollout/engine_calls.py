"""Engine calls for the episode loops: one batched call, taken apart when it fails for
one request's sake, so that one bad request does not fail its whole batch.

    outcomes = generate_apart(engine, requests)       # per request: completions or an error
    outcomes = generate_apart(engine, requests, call)  # `call`: the scheduler's, with retries

A call that raises something that may be one request's doing (a ValueError, a
LookupError or an `EndpointError`: a prompt the server refuses as too long, a key a
replay engine has no script for, a token id the model lacks) is split in halves and each half called again, down to single requests: only
the requests the engine still refuses alone fail, the others keep their completions.
One such request among N costs about 2·log2(N) more calls; a batch the engine refuses
whole, 2N − 1.

Not split (`shared_failure`), since every request would fail again, only slower: a
transient error (`OSError`; the scheduler retries it first), an `EngineUnavailable`
(a server down, the engine closed) and a result of the wrong shape
(`EngineResultError`, an engine bug), and any other error (an AttributeError is a
bug in the engine, not a request's fault). Not guaranteed: the halves of a split batch are
sampled in calls of their own, so what a fixed seed samples differs from the unsplit
call; an engine that keeps KV caches between turns may have dropped those the failed
call took (its next turn prefills again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from posttrain.engines.base import Completion, EngineUnavailable, GenerationRequest
from posttrain.engines.openai import EndpointError

Outcome = list[Completion] | Exception  # a request's completions, or why it has none
Call = Callable[[list[GenerationRequest]], list[list[Completion]]]


class EngineResultError(RuntimeError):
    """An engine's result does not have the shape of its requests: an engine bug."""


def generate_apart(
    engine: Any, requests: list[GenerationRequest], call: Call | None = None
) -> list[Outcome]:
    """Per request, its completions from `call` (default `engine.generate`), or the
    exception that failed it; a failing batch of several requests is split as the
    module says. BaseExceptions that are not Exceptions (KeyboardInterrupt) go on up."""
    call = call or engine.generate
    try:
        results = call(requests)
    except Exception as exc:
        if len(requests) == 1 or shared_failure(exc):
            return [exc] * len(requests)
        mid = len(requests) // 2
        halves = (requests[:mid], requests[mid:])
        return [out for half in halves for out in generate_apart(engine, half, call)]
    problem = misshapen(engine, results, requests)
    if problem is not None:  # checked before any result is used: each request fails once
        return [EngineResultError(problem)] * len(requests)
    return list(results)


def shared_failure(exc: BaseException) -> bool:
    """Whether splitting cannot help: `exc` is not a refusal that may be one request's.
    Those are a ValueError or LookupError (a prompt too long, a key a replay engine
    has no script for, an id outside the vocabulary) and an endpoint's refusal of a
    request (`EndpointError`, 400/413/422 or a malformed reply); an `EngineUnavailable`,
    an `OSError`, a result of the wrong shape and any other error (a bug in an engine:
    STYLE, programming errors raise) fail the call whole."""
    if isinstance(exc, OSError | EngineUnavailable | EngineResultError):
        return True
    return not isinstance(exc, ValueError | LookupError | EndpointError)


def misshapen(engine: Any, results: Any, requests: Sequence[GenerationRequest]) -> str | None:
    """What is wrong with the shape of `engine`'s `results` for `requests`, if anything:
    one list per request, with as many completions as the request asked for."""
    name = type(engine).__name__
    try:
        counts = [len(r) for r in results]
    except TypeError:
        return f"engine {name} returned {type(results).__name__}, not a list of completion lists"
    if len(counts) != len(requests):
        return f"engine {name} returned {len(counts)} results for {len(requests)} requests"
    for i, (count, r) in enumerate(zip(counts, requests, strict=True)):
        if count != r.params.n:
            return (
                f"engine {name} returned {count} completions for request {i} "
                f"(task {r.key}), which asked for {r.params.n}"
            )
    return None


def describe(exc: BaseException) -> str:
    """`Type: message (notes)` on one line, for a rollout's `error`."""
    notes = "; ".join(getattr(exc, "__notes__", ()))
    return f"{type(exc).__name__}: {exc}" + (f" ({notes})" if notes else "")
