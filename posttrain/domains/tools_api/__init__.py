"""The `tools` family: tool use against simulated APIs and generated fact bases.

Importing this package builds `DOMAINS`, one instance of each domain of the family
(besides `tools/calculator-v1`, which lives in `posttrain/domains/calculator.py`):

    from posttrain.domains.tools_api import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Modules: `framework` (tool specs, the session, the `ApiDomain` base), `services`
(the simulated backends), `conversion`, `retrieval`, `markets`, `schedule`, `dialogue` and
`records` (the domains).

Not guaranteed: nothing here is registered with `posttrain.domains`; the package
only exposes `DOMAINS` for the registry to pick up.
"""

from posttrain.domains.tools_api import conversion, dialogue, markets, records, retrieval, schedule
from posttrain.domains.tools_api.framework import ApiDomain

DOMAINS: tuple[ApiDomain, ...] = (
    *conversion.DOMAINS,
    *retrieval.DOMAINS,
    *markets.DOMAINS,
    *schedule.DOMAINS,
    *dialogue.DOMAINS,
    *records.DOMAINS,
)

__all__ = ["DOMAINS", "ApiDomain"]
