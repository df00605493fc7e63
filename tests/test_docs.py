"""README.md and docs/ stay true to the tree: links resolve, the file tree is complete."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_relative_links_resolve() -> None:
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            path = target.split("#", 1)[0]
            if not path or "://" in target:
                continue
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to missing files: " + ", ".join(broken)


def _tree_entries() -> set[str]:
    tree = ROOT.joinpath("README.md").read_text().split("## File tree", 1)[1]
    block = tree.split("```", 2)[1]
    entries, prefix = set(), ""
    for line in block.splitlines():
        match = re.match(r"^(\s*)(\S+)", line)
        if not match:
            continue
        indent, name = match.groups()
        if name == "posttrain/":
            prefix = "posttrain/"
        elif indent:
            entries.add(prefix + name)
        else:
            entries.add(name)
    return entries


def test_readme_file_tree_lists_every_module_and_nothing_gone() -> None:
    entries = _tree_entries()
    folders = [e for e in entries if e.endswith("/")]
    modules = [
        p.relative_to(ROOT).as_posix()
        for base in ("posttrain", "bench")
        for p in (ROOT / base).rglob("*.py")
        if p.name != "__init__.py"
    ]
    missing = [m for m in modules if m not in entries and not any(m.startswith(f) for f in folders)]
    gone = [e for e in entries if not (ROOT / e).exists()]
    assert not missing, f"modules the README file tree does not list: {sorted(missing)}"
    assert not gone, f"README file tree entries that do not exist: {sorted(gone)}"
