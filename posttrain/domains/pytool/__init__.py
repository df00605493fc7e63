"""The `pytool` family: tasks that need a sandboxed `python` tool to compute the answer.

`DOMAINS` holds every domain of the family: `pytool/list-stats-v1`,
`pytool/csv-aggregate-v1`, `pytool/log-filter-v1` (`data_tasks.py`) and
`pytool/function-count-v1` (`program_tasks.py`); the tool, its session and the
shared base class live in `tool.py`.
"""

from posttrain.domains.pytool.data_tasks import DOMAINS as _DATA
from posttrain.domains.pytool.program_tasks import DOMAINS as _PROGRAMS
from posttrain.domains.pytool.tool import PytoolDomain, PytoolSession

DOMAINS = (*_DATA, *_PROGRAMS)

__all__ = ["DOMAINS", "PytoolDomain", "PytoolSession"]
