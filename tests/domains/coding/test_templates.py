"""Every Python template's bug site applies once and changes some output; sources are valid."""

from __future__ import annotations

import random

import pytest

from posttrain.domains.coding.bugs import KINDS, inject
from posttrain.domains.coding.runner import load_module, run_case, same
from posttrain.domains.coding.templates_more import TEMPLATES
from posttrain.domains.coding.typed import SETTINGS

SITES = [(t, s) for t in (*TEMPLATES, SETTINGS) for s in t.sites]


@pytest.mark.parametrize(("template", "site"), SITES, ids=[f"{t.module}-{s.function}-{s.kind}" for t, s in SITES])  # fmt: skip
def test_every_site_applies_and_shows_on_some_input(template, site) -> None:  # type: ignore[no-untyped-def]
    assert site.kind in KINDS
    buggy = inject(template.source, [(site.old, site.new)])
    rng = random.Random(0)
    for _ in range(300):
        good, bad = load_module(template.source, "m"), load_module(buggy, "m")
        fn = rng.choice(template.functions)
        args = fn.args(rng, 5)
        if not same(run_case(getattr(bad, fn.name), list(args), fn.capture), run_case(getattr(good, fn.name), list(args), fn.capture)):  # fmt: skip
            return
    pytest.fail(f"{site.kind} in {template.module} never changes an output")


def test_module_names_are_unique() -> None:
    names = [t.module for t in TEMPLATES]
    assert len(names) == len(set(names))


def test_inject_refuses_a_site_that_is_not_unique() -> None:
    with pytest.raises(ValueError, match="occurs 2 times"):
        inject("x = 1\nx = 1\n", [("x = 1", "x = 2")])
