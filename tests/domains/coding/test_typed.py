"""`coding/fix-type-error-v1`: the prompt's mypy messages are mypy's; silencing does not pass."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.bugs import inject
from posttrain.domains.coding.typed import MESSAGES, MYPY, SETTINGS, FixTypeErrorDomain
from posttrain.sandbox import Sandbox, layers

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")


def test_every_site_gets_exactly_the_message_the_prompt_shows() -> None:
    with Sandbox() as sandbox:
        names = []
        for number, site in enumerate(SETTINGS.sites):
            sandbox.write_file(f"m{number}.py", inject(SETTINGS.source, [(site.old, site.new)]))
            names.append(f"m{number}.py")
        sandbox.write_file("clean.py", SETTINGS.source)
        out = sandbox.exec(f"{MYPY} {' '.join(names)} clean.py", timeout=60).stdout
    for number, site in enumerate(SETTINGS.sites):
        found = [x for x in out.splitlines() if x.startswith(f"m{number}.py:")]
        assert len(found) == 1 and found[0].endswith(MESSAGES[site.function][1]), out
    assert "clean.py" not in out


@pytest.mark.parametrize(
    "comment",
    ["  # type: ignore", "  #type:ignore", "  # type:ignore[assignment]", "  #  mypy: ignore"],
)
def test_a_fix_that_silences_another_error_does_not_pass(comment: str) -> None:
    domain = FixTypeErrorDomain()
    task = domain.generate(2, 3)
    ((path, fixed),) = task.meta["fixed"].items()
    silenced = fixed + f'\nBAD: int = "not an int"{comment}\n'
    files = {p: t.encode() for p, t in task.files.items()} | {path: silenced.encode()}
    verdict = domain.judge(task, files)
    assert not verdict.passed and verdict.error is None
    assert verdict.components["no_ignores"] == 0.0, verdict.reason


def test_a_type_ignore_on_the_buggy_line_does_not_pass() -> None:
    domain = FixTypeErrorDomain()
    task = domain.generate(2, 3)
    bug = task.meta["bugs"][0]
    marker = MESSAGES[bug["function"]][0]
    source = task.files[bug["path"]]
    silenced = "\n".join(x + "  # type: ignore" if marker in x else x for x in source.splitlines()) + "\n"  # fmt: skip
    files = {p: t.encode() for p, t in task.files.items()} | {bug["path"]: silenced.encode()}
    verdict = domain.judge(task, files)
    assert not verdict.passed and verdict.error is None
