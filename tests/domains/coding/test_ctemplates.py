"""The C templates' Python twins print exactly what gcc-compiled C prints, bugs included."""

from __future__ import annotations

import random

import pytest

from posttrain.domains.coding.bugs import inject
from posttrain.domains.coding.ctemplates import C_TEMPLATES
from posttrain.domains.coding.runner import load_module
from posttrain.sandbox import Sandbox, layers

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")


@pytest.mark.parametrize("template", C_TEMPLATES, ids=[t.name for t in C_TEMPLATES])
def test_twin_and_c_agree_for_the_program_and_every_bug(template) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    inputs = [template.args(rng, 5) for _ in range(12)]
    versions = [(template.source, template.model)]
    versions += [(inject(template.source, [(s.c_old, s.c_new)]), inject(template.model, [(s.py_old, s.py_new)])) for s in template.sites]  # fmt: skip
    with Sandbox() as sandbox:
        for number, (c_source, model) in enumerate(versions):
            sandbox.write_file("p.c", c_source)
            assert (
                sandbox.exec("gcc -std=c11 -O0 -Wall -Werror -o p p.c", timeout=60).exit_code == 0
            )
            twin = load_module(model, f"twin{number}")
            for args in inputs:
                run = sandbox.exec(["./p", *args], timeout=5)
                assert [run.stdout, run.exit_code] == twin.run(list(args)), (number, args)
