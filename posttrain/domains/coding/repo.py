"""Repository assembly: templates + injected bugs -> a small Python project with tests.

`build_repo(rng, plan)` picks `plan.modules` templates, injects `plan.bugs` bugs (one
per module, subtlety at most `plan.subtlety`), draws visible and hidden test inputs,
computes every expected value by running the correct modules on the host, and
classifies each case as fail-to-pass (fails on the buggy code) or pass-to-pass. Every
injected bug is seen by at least one visible and one hidden case (inputs differ).

    repo = build_repo(task_rng(domain_id, seed, difficulty), Plan(modules=3, bugs=1))
    repo.files      # the buggy repository: package, tests/ (when plan.tests), README.md
    repo.patch      # the true fix as a unified diff

Not guaranteed: case inputs are random draws, so a bug that only rare inputs show is
found by searching up to `_SEARCH` draws; a plan whose bugs cannot be shown raises
`ValueError` (no template in `TEMPLATES` does).
"""

from __future__ import annotations

import json
import random
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from posttrain.domains.coding.bugs import inject, unified_diff
from posttrain.domains.coding.runner import load_module, run_on_host, same
from posttrain.domains.coding.templates import Site, Template
from posttrain.domains.coding.templates_more import TEMPLATES

_ADJECTIVES = ("amber", "brisk", "cedar", "dusky", "ember", "fable", "gusty", "hazel", "ivory", "jolly", "kelpy", "lunar", "mossy", "noble", "olive", "pearl")  # fmt: skip
_NOUNS = ("atlas", "badger", "comet", "dune", "falcon", "grove", "harbor", "inlet", "jetty", "kiln", "ledger", "meadow", "nimbus", "orchard", "quarry", "ridge")  # fmt: skip
_SEARCH = 150


@dataclass(frozen=True)
class Plan:
    modules: int = 2
    bugs: int = 1
    subtlety: int = 3
    visible: int = 2  # visible cases per function
    hidden: int = 3  # hidden cases per function
    tests: bool = True  # write tests/ into the repository
    sites: Callable[[Site], bool] = lambda site: True  # which bug sites are allowed
    templates: Sequence[Template] = TEMPLATES
    raising: bool = False  # the shown failing case must raise under the bug
    cli: bool = False  # the failing cases must be command-line runs (capture functions)
    bug_templates: Sequence[Template] = ()  # where bugs go (default: any of `templates`)


@dataclass
class Repo:
    package: str
    files: dict[str, str]  # the buggy repository as the agent gets it
    fixed: dict[str, str]  # the editable files the true fix changes, fixed
    editable: list[str]
    cases: list[dict[str, Any]]
    bugs: list[dict[str, Any]]
    modules: list[str] = field(default_factory=list)

    @property
    def patch(self) -> str:
        return unified_diff({p: self.files[p] for p in self.fixed}, self.fixed)


def path_of(package: str, module: str) -> str:
    return f"{package}/{module}.py"


def _load_all(package: str, sources: dict[str, str]) -> dict[str, types.ModuleType]:
    return {f"{package}.{m}": load_module(src, f"{package}.{m}") for m, src in sources.items()}


def _case(package: str, template: Template, index: int, args: list[Any]) -> dict[str, Any]:
    fn = template.functions[index]
    return {"module": f"{package}.{template.module}", "call": fn.name, "args": json.loads(json.dumps(args)), "capture": fn.capture}  # fmt: skip


def _failing(rng: random.Random, package: str, template: Template, correct: str, buggy: str,
             size: int, avoid: set[str], cli: bool = False, raising: bool = False) -> dict[str, Any] | None:  # fmt: skip
    """A case (of any allowed function of the module) whose outcome differs under the bug."""
    name = f"{package}.{template.module}"
    good, bad = load_module(correct, name), load_module(buggy, name)
    allowed = [
        i
        for i, fn in enumerate(template.functions)
        if (fn.capture or not cli) and not (fn.capture and raising)
    ]
    for attempt in range(_SEARCH if allowed else 0):
        index = allowed[attempt % len(allowed)]
        case = _case(package, template, index, template.functions[index].args(rng, size))
        key = json.dumps([case["call"], case["args"]])
        if key in avoid:
            continue
        got, want = run_on_host({name: bad}, case), run_on_host({name: good}, case)
        if raising and ("raises" not in got or "raises" in want):
            continue
        if not same(got, want):
            avoid.add(key)
            return case
        if attempt % 10 == 9:  # a mutable default leaks between calls: start both afresh
            good, bad = load_module(correct, name), load_module(buggy, name)
    return None


def build_repo(rng: random.Random, plan: Plan) -> Repo:
    package = f"{rng.choice(_ADJECTIVES)}_{rng.choice(_NOUNS)}"
    eligible = [
        t for t in plan.bug_templates or plan.templates if any(_allowed(plan, s) for s in t.sites)
    ]
    chosen: list[Template] = []
    buggy: dict[str, str] = {}
    avoid: set[str] = set()
    bugs: list[dict[str, Any]] = []
    seeded: list[dict[str, Any]] = []  # the cases that show each bug, visible then hidden
    for template in rng.sample(eligible, len(eligible)):
        if len(bugs) == plan.bugs:
            break
        sites = [s for s in template.sites if _allowed(plan, s)]
        rng.shuffle(sites)
        for site in sites:
            source = inject(template.source, [(site.old, site.new)])
            shown = _failing(rng, package, template, template.source, source, 3, avoid, plan.cli, plan.raising)  # fmt: skip
            hidden = _failing(rng, package, template, template.source, source, 6, avoid, plan.cli)
            if shown is None or hidden is None:
                continue
            chosen.append(template)
            buggy[template.module] = source
            bugs.append({"kind": site.kind, "module": template.module, "function": site.function,
                         "path": path_of(package, template.module), "subtlety": site.subtlety})  # fmt: skip
            seeded += [{**shown, "visible": True}, {**hidden, "visible": False}]
            break
    if len(bugs) < plan.bugs:
        raise ValueError(f"could not place {plan.bugs} bugs with {plan}")
    chosen += rng.sample([t for t in plan.templates if t not in chosen], plan.modules - len(chosen))
    correct = {t.module: t.source for t in chosen}
    buggy = correct | buggy
    cases = list(seeded)
    for template in chosen:
        for index, fn in enumerate(template.functions):
            for visible, count, size in ((True, plan.visible, 3), (False, plan.hidden, 6)):
                for _ in range(count * 4):
                    if sum(c["call"] == fn.name and c["visible"] == visible and c["module"].endswith("." + template.module) for c in cases) >= count:  # fmt: skip
                        break
                    case = _case(package, template, index, fn.args(rng, size))
                    key = json.dumps([case["call"], case["args"]])
                    if key not in avoid:
                        avoid.add(key)
                        cases.append({**case, "visible": visible})
    cases.sort(key=lambda c: (not c["visible"], c["module"], c["call"]))
    good, bad = _load_all(package, correct), _load_all(package, buggy)
    counters: dict[str, int] = {}
    for case in cases:
        prefix = "test" if case["visible"] else "hidden"
        stem = f"{prefix}_{case['call']}"
        counters[stem] = counters.get(stem, 0) + 1
        case["name"] = f"{stem}_{counters[stem]}"
        case["expected"] = run_on_host(good, case)
        case["buggy"] = run_on_host(bad, case)
        case["f2p"] = not same(case["buggy"], case["expected"])
    files = {f"{package}/__init__.py": f'"""The {package} package."""\n'}
    files |= {path_of(package, m): src for m, src in buggy.items()}
    editable = sorted(path_of(package, t.module) for t in chosen)
    files["README.md"] = readme(package, chosen, plan.tests)
    if plan.tests:
        for template in chosen:
            mine = [c for c in cases if c["visible"] and c["module"] == f"{package}.{template.module}"]  # fmt: skip
            files[f"tests/test_{template.module}.py"] = render_tests(package, template.module, mine)  # fmt: skip
    fixed = {path_of(package, b["module"]): correct[b["module"]] for b in bugs}
    return Repo(package, files, fixed, editable, cases, bugs, [t.module for t in chosen])


def _allowed(plan: Plan, site: Site) -> bool:
    return site.subtlety <= plan.subtlety and plan.sites(site)


def readme(package: str, chosen: Sequence[Template], tests: bool) -> str:
    lines = [f"# {package}", "", "A small Python package. Modules:", ""]
    lines += [f"- `{path_of(package, t.module)}`: {t.topic}" for t in chosen]
    if tests:
        lines += ["", "Run the tests with `python3 -m pytest -q` from the repository root."]
    return "\n".join(lines) + "\n"


def call_text(case: dict[str, Any]) -> str:
    module = case["module"].rsplit(".", 1)[-1]
    return f"{module}.{case['call']}({', '.join(repr(a) for a in case['args'])})"


def outcome_text(outcome: dict[str, Any]) -> str:
    if "raises" in outcome:
        return f"raises {outcome['raises']}"
    return repr(outcome["value"])


def render_tests(package: str, module: str, cases: Sequence[dict[str, Any]]) -> str:
    out = [f'"""Tests for {package}.{module}."""', "", "import pytest", "", f"from {package} import {module}", ""]  # fmt: skip
    for case in cases:
        expected, call = case["expected"], call_text(case)
        if "raises" in expected:
            body = [f"    with pytest.raises({expected['raises']}):", f"        {call}"]
        elif case["capture"]:
            ret, printed = expected["value"]
            body = [f"    result = {call}", f"    assert [result, capsys.readouterr().out] == {[ret, printed]!r}"]  # fmt: skip
        else:
            body = [f"    assert {call} == {expected['value']!r}"]
        signature = "capsys" if case["capture"] and "raises" not in expected else ""
        out += ["", f"def {case['name']}({signature}):", *body, ""]
    return "\n".join(out).rstrip() + "\n"


def first_failure(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The first visible fail-to-pass case (generation guarantees one)."""
    return next(c for c in cases if c["visible"] and c["f2p"])
