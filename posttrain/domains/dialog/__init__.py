"""The `dialog` family: multi-turn games without tools against a scripted, deterministic user.

Importing this package builds `DOMAINS`, one instance of each domain of the family:

    from posttrain.domains.dialog import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)
    session = DOMAINS[0].open(task)  # session.user_turn(message) gives the user's feedback

Modules: `framework` (the session, the `DialogDomain` base, the verdict), `guessing`
(guess-number, mastermind), `wordle`, `questions` (twenty questions), `delivery`
(a delivery slot under revealed constraints) and `tally` (a dictated running total).

Not guaranteed: nothing here is registered with `posttrain.domains`; the package only
exposes `DOMAINS` for the registry to pick up.
"""

from posttrain.domains.dialog import delivery, guessing, questions, tally, wordle
from posttrain.domains.dialog.framework import DialogDomain

DOMAINS: tuple[DialogDomain, ...] = (
    *guessing.DOMAINS,
    *wordle.DOMAINS,
    *questions.DOMAINS,
    *delivery.DOMAINS,
    *tally.DOMAINS,
)

__all__ = ["DOMAINS", "DialogDomain"]
