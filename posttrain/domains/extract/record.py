"""The shared body of the `extract/*` domains: field specs, the JSON Schema they make,
and two bases that score a model's JSON record field by field.

A domain lists its `fields` (a tuple of `Field`), names its document `kind` and writes
`document(rng, difficulty) -> Doc` (the text, the gold record, the distractors and the
measure). `ExtractDomain` turns that into the prompt (document + JSON Schema + format
rules), the reference (the gold record as JSON) and the verdict:

- the final text must be exactly one JSON value (a single ```json fence is allowed;
  prose around it scores 0) and valid against the schema (every key required, no other
  keys, types and formats; else 0);
- then each top-level field scores 1 or 0 by its kind: `text` fuzzy (ratio ≥ 0.9 after
  whitespace and case folding) with the same runs of digits (a house number, a floor, a
  quantity in a description is a fact, not a slip: v2), `code`/`email` exact after case
  folding and removing spaces, `phone` by its digits (exactly ten, after dropping a leading country code 1
  from eleven), `number` equal to three decimals (`values_close`), `date`
  (YYYY-MM-DD), `month` (YYYY-MM or "present"), `time` (HH:MM), `integer`, `choice`
  and `boolean` exactly; a `list` field scores matched items / max(gold, predicted)
  items, matched in order or as a set as the field says, an item matching when every
  sub-field does;
- reward = mean field score; `passed` only when every field scores 1.

`CitedDomain` wraps every field as `{"value": ..., "quote": ...}`: a field scores 1 only
when the value matches and the quote (≤ 100 characters) occurs verbatim within one
line of the document (whitespace collapsed) and contains one of the ways the document
writes the value (`Doc.surfaces`, case folded) together with context: at least two
other words, or the whole line when the line holds only one ("Tenant: Ada Lee"). A
right value with a fabricated quote, or with the bare value as its quote, fails.

Not guaranteed: list items are matched greedily (an item close to two gold items may
take the wrong one); fuzzy text matching forgives small slips, so "Jon" passes for
"John" in a long name; the quote check accepts any verbatim span holding the value's
surface form and two other words, even one from an unrelated sentence that repeats it,
and the two words may be as empty as "and the".
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.types import Task, Verdict
from posttrain.verify.fuzzy import field_score
from posttrain.verify.numeric import values_close
from posttrain.verify.structure import parse_json, schema_errors

Kind = Literal["text", "code", "email", "phone", "number", "integer", "date", "month",
               "time", "choice", "boolean", "list"]  # fmt: skip

_FORMATS: dict[str, dict[str, Any]] = {
    "text": {"type": "string"},
    "code": {"type": "string"},
    "email": {"type": "string"},
    "phone": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
    "month": {"type": "string", "pattern": "^([0-9]{4}-[0-9]{2}|present)$"},
    "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    "boolean": {"type": "boolean"},
}
MAX_QUOTE = 100
CONTEXT_WORDS = 2  # words a quote holds besides the value, unless it is the whole line
RULES = (
    "Write dates as YYYY-MM-DD, times as HH:MM on the 24-hour clock, and amounts as plain "
    "JSON numbers (no currency sign, no thousands separator, no 'k'). Copy names and other "
    "text exactly as the document writes them."
)


@dataclass(frozen=True)
class Field:
    """One key of the record: its `kind`, a one-line `about` shown in the schema, and for
    lists the `items` (one unnamed field for a list of scalars) and whether order counts."""

    name: str
    kind: Kind
    about: str
    items: tuple[Field, ...] = ()
    ordered: bool = False
    choices: tuple[str, ...] = ()


@dataclass
class Doc:
    """What a generator returns: the document, the gold record, wrong values the document
    also holds (field → value, for corruptions), the measure and, for cited domains,
    field → every way the document writes the value."""

    text: str
    gold: dict[str, Any]
    measure: float
    distractors: dict[str, Any] = field(default_factory=dict)
    surfaces: dict[str, list[str]] = field(default_factory=dict)


def _property(f: Field) -> dict[str, Any]:
    if f.kind == "choice":
        return {"enum": list(f.choices), "description": f.about}
    if f.kind != "list":
        return {**_FORMATS[f.kind], "description": f.about}
    if len(f.items) == 1 and not f.items[0].name:
        item = {k: v for k, v in _property(f.items[0]).items() if k != "description"}
    else:
        item = object_schema(f.items)
    order = "in the order the document gives them" if f.ordered else "in any order"
    return {"type": "array", "items": item, "description": f"{f.about} ({order})"}


def object_schema(fields: tuple[Field, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f.name: _property(f) for f in fields},
        "required": [f.name for f in fields],
        "additionalProperties": False,
    }


def cited_schema(fields: tuple[Field, ...]) -> dict[str, Any]:
    quote = {"type": "string", "minLength": 1, "maxLength": MAX_QUOTE}
    return {
        "type": "object",
        "properties": {
            f.name: {
                "type": "object",
                "description": f.about,
                "required": ["value", "quote"],
                "additionalProperties": False,
                "properties": {
                    "value": {k: v for k, v in _property(f).items() if k != "description"},
                    "quote": quote,
                },
            }  # fmt: skip
            for f in fields
        },
        "required": [f.name for f in fields],
        "additionalProperties": False,
    }


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as JSON with one line per top-level property, for the prompt."""
    props = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                        for k, v in schema["properties"].items())  # fmt: skip
    rest = {k: v for k, v in schema.items() if k != "properties"}
    tail = json.dumps(rest, ensure_ascii=False)[1:-1]
    return '{"properties": {\n' + props + "\n },\n " + tail + "}"


# ----------------------------------------------------------------------------- scoring


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def _digit_runs(value: Any) -> list[str]:
    """The runs of digits in a text value ("516 Mill Lane, Level 2" -> ["516", "2"])."""
    return re.findall(r"\d+", value if isinstance(value, str) else str(value))


def _phone_digits(text: str) -> str:
    """The ten digits of one North American number ("+1 (415) 555-0134" -> "4155550134"),
    or "" when the text holds any other count of digits (two numbers, a short one)."""
    digits = re.sub(r"\D", "", text)
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    return digits if len(digits) == 10 else ""


def scalar_ok(kind: Kind, predicted: Any, gold: Any) -> bool:
    """Whether one schema-valid predicted value matches the gold value of its kind."""
    if kind == "text":
        return field_score(predicted, gold) > 0.0 and _digit_runs(predicted) == _digit_runs(gold)
    if kind in ("code", "email"):
        return _squash(predicted) == _squash(gold)
    if kind == "phone":
        return _phone_digits(predicted) == _phone_digits(gold) != ""
    if kind == "number":  # to a tenth of a cent: a ten-cent slip on $1,234.50 is wrong
        try:
            return values_close(float(predicted), float(gold), rel_tol=1e-7, decimals=3)
        except OverflowError:  # a JSON integer too large for a float
            return False
    return bool(predicted == gold)


def _item_ok(f: Field, predicted: Any, gold: Any) -> bool:
    if len(f.items) == 1 and not f.items[0].name:
        return scalar_ok(f.items[0].kind, predicted, gold)
    return all(scalar_ok(sub.kind, predicted[sub.name], gold[sub.name]) for sub in f.items)


def field_value_score(f: Field, predicted: Any, gold: Any) -> float:
    """1.0 or 0.0 for a scalar field; the share of matched items for a list field."""
    if f.kind != "list":
        return float(scalar_ok(f.kind, predicted, gold))
    if not gold and not predicted:
        return 1.0
    matched = 0
    if f.ordered:
        matched = sum(_item_ok(f, p, g) for p, g in zip(predicted, gold, strict=False))
    else:
        free = list(range(len(predicted)))
        for g in gold:
            hit = next((j for j in free if _item_ok(f, predicted[j], g)), None)
            if hit is not None:
                free.remove(hit)
                matched += 1
    return matched / max(len(gold), len(predicted))


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> int:
    """How many words (runs holding a letter or digit) the text has."""
    return sum(1 for w in text.split() if any(ch.isalnum() for ch in w))


def quote_ok(quote: str, document: str, surfaces: list[str]) -> bool:
    """The quote occurs verbatim within one line of the document and holds one of the
    value's surfaces with context: `CONTEXT_WORDS` other words, or the whole line when
    that line holds fewer (but at least one). The bare value is no quote."""
    said = _collapse(quote)
    if not said or len(quote) > MAX_QUOTE:
        return False
    lines = [_collapse(line) for line in document.splitlines()]
    if not any(said in line for line in lines):
        return False
    folded = said.casefold()
    for surface in surfaces:
        value = _collapse(surface).casefold()
        at = folded.find(value) if value else -1
        if at < 0:
            continue
        context = _words(folded[:at] + " " + folded[at + len(value) :])
        if context >= CONTEXT_WORDS or (context >= 1 and said in lines):
            return True
    return False


def reference_quote(document: str, surface: str) -> str:
    """A verbatim span of at most `MAX_QUOTE` characters holding `surface`: its line, or
    as many whole words of the line on either side of it as fit."""
    at = document.index(surface)
    start = document.rfind("\n", 0, at) + 1
    end = document.find("\n", at)
    line = document[start : end if end >= 0 else len(document)]
    if len(line.strip()) <= MAX_QUOTE:
        return line.strip()
    left, right = at - start, at - start + len(surface)
    leftwards = True  # alternate sides so the value sits near the middle
    while True:
        grow_left = line.rfind(" ", 0, max(0, left - 1)) + 1 if left > 0 else left
        grow_right = line.find(" ", right + 1) if right < len(line) else right
        grow_right = len(line) if grow_right < 0 else grow_right
        can_left = grow_left < left and right - grow_left <= MAX_QUOTE
        can_right = grow_right > right and grow_right - left <= MAX_QUOTE
        if can_left and (leftwards or not can_right):
            left = grow_left
        elif can_right:
            right = grow_right
        else:
            return line[left:right].strip()
        leftwards = not leftwards


# ----------------------------------------------------------------------------- domains


def _perturbed(f: Field, value: Any) -> Any:
    """A wrong value of the field's kind, or None when this kind has no easy one."""
    if f.kind == "number":
        return round(value + max(1.0, abs(value) * 0.1), 2)
    if f.kind == "integer":
        return value + 1
    if f.kind == "date":
        return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
    if f.kind == "time":
        return f"{(int(value[:2]) + 1) % 24:02d}{value[2:]}"
    return None


class ExtractDomain(AnswerDomain):
    """Base of the plain extraction domains; see the module docstring."""

    axes = Axes("document", "none", "single", "structure")
    instructions = "Reply with the JSON object only (one ```json fence around it is allowed), with no other text."  # fmt: skip
    kind: ClassVar[str]
    fields: ClassVar[tuple[Field, ...]]
    cited: ClassVar[bool] = False

    @abstractmethod
    def document(self, rng: random.Random, difficulty: int) -> Doc:
        """Written by each subclass."""

    def schema(self) -> dict[str, Any]:
        return object_schema(self.fields)

    def shape(self, doc: Doc) -> dict[str, Any]:
        """The reference record for `doc` in this domain's answer shape."""
        return doc.gold

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        doc = self.document(rng, difficulty)
        schema = schema_text(self.schema())
        prompt = (
            f"Extract the fields below from this {self.kind} into one JSON object.\n\n"
            f"<document>\n{doc.text}\n</document>\n\n"
            f"The answer must be valid against this JSON Schema (every key required, no other keys):\n"
            f"{schema}\n\n{RULES}"
        )
        meta: dict[str, Any] = {"distractors": doc.distractors}
        if self.cited:
            meta |= {"document": doc.text, "surfaces": doc.surfaces}
        answer = json.dumps(self.shape(doc), ensure_ascii=False)
        return Problem(prompt, answer, meta, measure=doc.measure)

    def gold(self, task: Task) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(task.answer)
        return record

    def scores(self, task: Task, value: dict[str, Any]) -> dict[str, float]:
        gold = self.gold(task)
        return {f.name: field_value_score(f, value[f.name], gold[f.name]) for f in self.fields}

    def judge(self, task: Task, text: str) -> Verdict:
        what = f"a JSON record of the {self.kind} whose every field matches the document"
        value = parse_json(text)
        if not isinstance(value, dict):
            return verdict(False, what, components={"schema": 0.0}, why="the answer is not one JSON object")  # fmt: skip
        errors = schema_errors(value, self.schema())
        if errors:
            return verdict(False, what, components={"schema": 0.0}, why=f"schema: {errors[0]}")
        scores = self.scores(task, value)
        wrong = [name for name, s in scores.items() if s < 1.0]
        reward = sum(scores.values()) / len(scores)
        return verdict(not wrong, what, components={"schema": 1.0, **scores}, reward=reward,
                       why=f"wrong field(s): {', '.join(wrong)}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        """A distractor's value, one field off, a list item dropped, a field missing
        (schema-invalid) and truncated JSON."""
        gold = self.gold(task)
        out = []
        for name, value in task.meta["distractors"].items():
            if value != self._value(gold[name]):
                out.append({**gold, name: self._swap(gold[name], value)})
                break
        for f in self.fields:
            bad = _perturbed(f, self._value(gold[f.name]))
            if bad is not None:
                out.append({**gold, f.name: self._swap(gold[f.name], bad)})
                break
        for f in self.fields:
            if f.kind == "list" and gold[f.name]:
                out.append({**gold, f.name: gold[f.name][:-1]})
                break
        out.append({k: v for k, v in gold.items() if k != self.fields[-1].name})
        texts = [json.dumps(record, ensure_ascii=False) for record in out]
        return texts + [task.answer[:-1]]

    def _value(self, slot: Any) -> Any:
        return slot

    def _swap(self, slot: Any, value: Any) -> Any:
        return value


class CitedDomain(ExtractDomain):
    """Base of the cited extraction domains: every field is `{"value", "quote"}`."""

    axes = Axes("document", "none", "single", "fields_citations")
    cited = True

    def schema(self) -> dict[str, Any]:
        return cited_schema(self.fields)

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        problem = super().make(rng, difficulty)
        note = (
            '\n\nGive every field as an object {"value": ..., "quote": ...}: the value in '
            "the format above, and the quote a verbatim span of one line of the document (at "
            f"most {MAX_QUOTE} characters) that contains the value as the document writes it "
            "and at least two more words of that line (or the whole line), not the value alone."
        )
        return Problem(problem.prompt + note, problem.answer, problem.meta, problem.measure)

    def shape(self, doc: Doc) -> dict[str, Any]:
        return {
            f.name: {
                "value": doc.gold[f.name],
                "quote": reference_quote(doc.text, doc.surfaces[f.name][0]),
            }  # fmt: skip
            for f in self.fields
        }

    def scores(self, task: Task, value: dict[str, Any]) -> dict[str, float]:
        gold, document = self.gold(task), task.meta["document"]
        surfaces = task.meta["surfaces"]
        return {
            f.name: float(
                scalar_ok(f.kind, value[f.name]["value"], gold[f.name]["value"])
                and quote_ok(value[f.name]["quote"], document, surfaces[f.name])
            )  # fmt: skip
            for f in self.fields
        }

    def wrong(self, task: Task) -> list[str]:
        """The plain corruptions plus a right value whose quote is not in the document."""
        gold = self.gold(task)
        first = self.fields[0].name
        fabricated = f"As confirmed by phone: {task.meta['surfaces'][first][0]}"
        forged = {**gold, first: {"value": gold[first]["value"], "quote": fabricated}}
        return [*super().wrong(task), json.dumps(forged, ensure_ascii=False)]

    def _value(self, slot: Any) -> Any:
        return slot["value"]

    def _swap(self, slot: Any, value: Any) -> Any:
        return {"value": value, "quote": slot["quote"]}
