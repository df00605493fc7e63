"""Where a recipe's progress goes: the CLI shows rich progress bars, tests and benches
pass `QuietReporter` (warnings still reach the `posttrain` logger)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from posttrain.eval.evaluate import EvalResult


class Reporter(Protocol):
    """Where progress goes (the CLI shows rich progress bars; tests pass `QuietReporter`)."""

    def stage(self, name: str, total: float) -> None: ...

    def update(self, done: float, stats: dict[str, float]) -> None: ...

    def evaluated(self, result: EvalResult) -> None: ...

    def warn(self, message: str) -> None: ...


class QuietReporter:
    def stage(self, name: str, total: float) -> None:
        pass

    def update(self, done: float, stats: dict[str, float]) -> None:
        pass

    def evaluated(self, result: EvalResult) -> None:
        pass

    def warn(self, message: str) -> None:
        logging.getLogger("posttrain").warning(message)
