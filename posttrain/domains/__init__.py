"""The domain matrix: the `Domain` contract, the registry and the built-in domains.

Importing this package registers the starter domains (`STARTER_DOMAINS`), the ones
the tiny built-in model learns on a CPU, and `code/function-synthesis-v1` (verified
by hidden unit tests in the sandbox), the native families (`num/`, `agent/`, `extract/`, `tools_api/`, `text_ops/`, `list_ops/`, `table/`, `pytool/`, `docqa/`, `dialog/`, `codeqa/`, `geo/`, `coding/`, `documents/`, `cad/`, `longctx/`, `longctx-search/`: one package
each, listed below), and the reasoning-gym generators as
`rg/<name>-v1` (`reasoning_gym_adapter.py`); `load_entry_points()` adds third-party
domains. Look domains up by versioned id:

    from posttrain.domains import get_domain
    domain = get_domain("arith/addition-v1")
    task = domain.generate(seed=0, difficulty=3)
"""

from posttrain.domains.agents import DOMAINS as _AGENTS
from posttrain.domains.arithmetic import AdditionDomain
from posttrain.domains.base import Axes, Domain, Session
from posttrain.domains.cad import DOMAINS as _CAD
from posttrain.domains.calculator import CalculatorDomain
from posttrain.domains.code_synthesis import FunctionSynthesisDomain
from posttrain.domains.codeqa import DOMAINS as _CODEQA
from posttrain.domains.coding import DOMAINS as _CODING
from posttrain.domains.dialog import DOMAINS as _DIALOG
from posttrain.domains.docqa import DOMAINS as _DOCQA
from posttrain.domains.documents import DOMAINS as _DOCUMENTS
from posttrain.domains.extract import DOMAINS as _EXTRACT
from posttrain.domains.geo import DOMAINS as _GEO
from posttrain.domains.list_ops import DOMAINS as _LIST_OPS
from posttrain.domains.longctx import DOMAINS as _LONGCTX
from posttrain.domains.longctx_search import DOMAINS as _LONGCTX_SEARCH
from posttrain.domains.num import DOMAINS as _NUM
from posttrain.domains.pytool import DOMAINS as _PYTOOL
from posttrain.domains.reasoning_gym_adapter import all_generators
from posttrain.domains.registry import (
    all_domains,
    domain_ids,
    get_domain,
    load_entry_points,
    register,
)
from posttrain.domains.rg_pools import all_pooled
from posttrain.domains.sorting import SortDomain
from posttrain.domains.strings import ReverseDomain
from posttrain.domains.table import DOMAINS as _TABLE
from posttrain.domains.text_ops import DOMAINS as _TEXT_OPS
from posttrain.domains.tools_api import DOMAINS as _TOOLS_API

_STARTERS: tuple[Domain, ...] = (
    register(AdditionDomain()),
    register(ReverseDomain()),
    register(SortDomain()),
    register(CalculatorDomain()),
)
STARTER_DOMAINS: tuple[str, ...] = tuple(domain.id for domain in _STARTERS)
register(FunctionSynthesisDomain())  # verified in the sandbox; beyond the tiny model for now
# Our native families, one package each (docs/domains.md has the coverage table).
_NATIVE: tuple[Domain, ...] = (
    *_NUM,
    *_AGENTS,
    *_EXTRACT,
    *_TOOLS_API,
    *_TEXT_OPS,
    *_LIST_OPS,
    *_TABLE,
    *_PYTOOL,
    *_DOCQA,
    *_DIALOG,
    *_CODEQA,
    *_GEO,
    *_CODING,
    *_DOCUMENTS,
    *_CAD,
    *_LONGCTX,
    *_LONGCTX_SEARCH,
)
for _domain in _NATIVE:
    register(_domain)
for _generator in all_generators():  # rg/<name>-v1: reasoning-gym, imported on first use
    register(_generator)
for _pooled in all_pooled():  # rg/<name>-v1 of slow generators, from pre-generated pools
    register(_pooled)

__all__ = [
    "STARTER_DOMAINS",
    "Axes",
    "Domain",
    "Session",
    "all_domains",
    "domain_ids",
    "get_domain",
    "load_entry_points",
    "register",
]
