"""`apply_patch`: unified diffs apply where their context matches, or fail with a reason."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.bugs import unified_diff
from posttrain.domains.coding.patch import PatchError, apply_patch

FILES = {"pkg/m.py": "a = 1\nb = 2\nc = 3\nd = 4\n"}


def test_a_diff_from_unified_diff_round_trips() -> None:
    after = {"pkg/m.py": "a = 1\nb = 20\nc = 3\nd = 4\n", "pkg/new.py": "x = 1\n"}
    assert apply_patch(FILES, unified_diff(FILES, after)) == after


def test_stale_line_numbers_still_apply() -> None:
    patch = "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -40,2 +40,2 @@\n c = 3\n-d = 4\n+d = 5\n"
    assert apply_patch(FILES, patch)["pkg/m.py"].endswith("d = 5\n")


def test_deleting_a_file() -> None:
    patch = unified_diff(FILES, {})
    assert apply_patch(FILES, patch) == {}


def test_context_that_does_not_match_fails_whole() -> None:
    patch = "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 9\n+b = 3\n"
    with pytest.raises(PatchError, match="does not match"):
        apply_patch(FILES, patch)


@pytest.mark.parametrize(
    "bad", ["", "no headers here", "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"]
)
def test_malformed_or_escaping_patches_fail(bad: str) -> None:
    with pytest.raises(PatchError):
        apply_patch(FILES, bad)


def test_a_missing_file_fails() -> None:
    with pytest.raises(PatchError, match="no such file"):
        apply_patch(FILES, "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n")
