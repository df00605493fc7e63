"""YAML as posttrain reads it: recipes, `key=value` overrides and a run's config.yaml.

    data = load_yaml(text_or_open_file)   # like yaml.safe_load; YAMLInputError when refused

`yaml.safe_load` with three refusals a settings file never needs, and one-line errors:

- a key given twice in one mapping (`grpo: {steps: 1, steps: 2}` would keep the last,
  silently), named with its line;
- aliases that expand to more than `MAX_ALIAS_VALUES` values, or into themselves. An
  alias is a pointer, so loading is cheap, but everything that walks the result (the
  validation, an error message showing the value) walks it expanded: ten lines of
  `*a` aliases nested nine deep expand to 9⁹ strings;
- nesting too deep for PyYAML's recursive parser (`YAMLTooDeepError`, not a
  RecursionError), and an integer too long for Python to read (over 4300 digits).

Every refusal and every syntax error is a `YAMLInputError` (a `yaml.YAMLError`, so a
reader's handling of bad YAML covers it) whose message is one line: the problem and its
line and column. The refusals of well-formed YAML are `YAMLRefusedError`s, so a reader
can tell them from text that is not YAML at all (an override value taken as a string).
This module imports nothing of posttrain's: `config` and `store` both read YAML through
it.
"""

from __future__ import annotations

from typing import IO, Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

__all__ = [
    "MAX_ALIAS_VALUES",
    "YAMLInputError",
    "YAMLRefusedError",
    "YAMLTooDeepError",
    "load_yaml",
]

# Values (scalars, lists, mappings) the aliases of one document may add when expanded.
MAX_ALIAS_VALUES = 10_000
_MERGE = "tag:yaml.org,2002:merge"  # `<<: *base` merges a mapping: not a duplicate key


class YAMLInputError(yaml.YAMLError):
    """YAML that posttrain does not read; the message is one line saying why and where."""


class YAMLRefusedError(YAMLInputError):
    """Well-formed YAML refused: a duplicate key, an alias expansion too large, nesting
    too deep, a value Python cannot make (see the module doc)."""


class YAMLTooDeepError(YAMLRefusedError):
    """YAML nested too deeply for PyYAML, which composes [ ] and { } recursively."""

    def __init__(self) -> None:
        super().__init__("it nests lists or mappings too deeply to parse")


def load_yaml(text: str | IO[str]) -> Any:
    """The data of one YAML document (None when empty), safe types only; YAMLInputError
    for bad syntax, a duplicate key, an alias expansion past `MAX_ALIAS_VALUES`, nesting
    too deep or an integer too long (see the module doc)."""
    try:
        loader = _Loader(text)  # reads the first characters: a ReaderError already
    except yaml.YAMLError as exc:
        raise YAMLInputError(" ".join(str(exc).split())) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except _Refusal as exc:
        raise YAMLRefusedError(_one_line(exc)) from None
    except yaml.MarkedYAMLError as exc:
        raise YAMLInputError(_one_line(exc)) from None
    except YAMLInputError:
        raise
    except yaml.YAMLError as exc:  # a character YAML does not allow (ReaderError): no mark
        raise YAMLInputError(" ".join(str(exc).split())) from None
    except RecursionError:
        raise YAMLTooDeepError() from None
    finally:
        loader.dispose()


class _Loader(yaml.SafeLoader):
    """SafeLoader refusing a key that one mapping gives twice, and saying where a value
    could not be made (an integer over Python's 4300 digits, a date like 2024-13-01)."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except ValueError as exc:
            why = str(exc).split(";")[0]
            problem = f"cannot read the value {_short(node.value)}: {why}"
            raise _Refusal(None, None, problem, node.start_mark) from None

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    if key in seen:
                        problem = f"duplicate key {_short(key)}"
                        raise _Refusal(None, None, problem, key_node.start_mark)
                    seen.add(key)
                except TypeError:  # unhashable: the constructor names it below
                    break
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return, arg-type]


class _Refusal(ConstructorError):
    """A value the loader refuses, with where it is (turned into YAMLRefusedError)."""


def _check_expansion(root: Node) -> None:
    """Refuse a document whose aliases expand to more than MAX_ALIAS_VALUES values beyond
    the ones written, or one that holds itself (an alias inside its own anchor).

    Counts each node once per path that reaches it, from the sizes of its children
    (memoized, so the walk is linear in the nodes written)."""
    size: dict[int, int] = {}  # id(node) -> values it stands for, expanded
    distinct = 0
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
            if size[key] - distinct > MAX_ALIAS_VALUES:
                raise YAMLRefusedError(
                    f"its aliases (*name) expand to more than {MAX_ALIAS_VALUES} values "
                    f"(at line {node.start_mark.line + 1}); write the settings out instead"
                )
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise YAMLRefusedError(
                f"an alias refers to the value it sits in (anchored at line "
                f"{node.start_mark.line + 1}), which would expand forever"
            )
        open_nodes.add(key)
        distinct += 1
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node))


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}...{text[-1]}"


def _one_line(exc: yaml.MarkedYAMLError) -> str:
    """`problem at line L, column C (context at line L', column C')`, from PyYAML's
    four-line message."""

    def at(mark: Any) -> str:
        return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""

    text = f"{exc.problem or exc.context}{at(exc.problem_mark or exc.context_mark)}"
    if exc.problem and exc.context:
        text += f" ({exc.context}{at(exc.context_mark)})"
    return " ".join(text.split())
