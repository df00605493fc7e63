"""Look-up families: find stated facts among look-alikes in a long document.

- `longctx/needle-v1` — one access code ("The access code for the Juniper vault is
  4821.") among look-alike codes (the Junipero vault, the Juniper vaults, the Juniper
  locker, other vaults); the answer is the four-digit code. The needle's depth is
  drawn from the rng and kept in `task.meta["depth"]`.
- `longctx/multi-needle-v1` — the codes of every vault in one wing (2 at d1 to 5 at
  d10) among vaults of other wings; the answer is a JSON list of codes, scored by
  set F1 (a partial set earns partial reward, only the exact set passes).
- `longctx/count-mentions-v1` — how many safety reports one inspector filed, among
  look-alike inspectors and other actions by the same inspector; the answer is the
  integer.

Usage: `NeedleDomain().generate(seed, difficulty)`, or `NeedleDomain().with_span(64, 512)`
for short prompts. The look-alike count grows with the prompt's length.

Not guaranteed: names are drawn from fixed lists, so a look-alike spelling can
coincide with another real-looking word; codes are distinct within a task but not
across tasks.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.longctx.framework import Case, DocumentDomain, depths, json_list
from posttrain.domains.longctx.haystack import length_scale
from posttrain.types import Task, Verdict
from posttrain.verify import set_f1, strict_integer

_NAMES = (
    "Juniper", "Alder", "Cobalt", "Heron", "Marlow", "Saffron", "Tamarack", "Osprey",
    "Quartz", "Bramble", "Cinder", "Falcon", "Garnet", "Hazel", "Indigo", "Jasper",
    "Kestrel", "Larch", "Mistral", "Nettle", "Onyx", "Pewter", "Rowan", "Sorrel",
    "Thistle", "Umber", "Verbena", "Willow", "Yarrow", "Zephyr", "Basalt", "Cypress",
)  # fmt: skip
_KINDS = ("vault", "locker", "archive", "cellar", "strongroom")
_WINGS = ("north", "south", "east", "west")
_INSPECTORS = (
    "Harlan", "Brenner", "Castell", "Dorsey", "Ellison", "Fairley", "Gorman", "Holloway",
    "Ingram", "Jessop", "Kendrick", "Lasker", "Merriman", "Norwood", "Oakley", "Pennant",
    "Quill", "Radley", "Stanton", "Tolliver", "Underhill", "Vance", "Whitlock", "Yardley",
)  # fmt: skip
_PLACES = ("boiler room", "east stairwell", "loading dock", "roof access", "print shop",
           "cold store", "server closet", "rear gate", "paint store", "canteen")  # fmt: skip
_OTHER_ACTIONS = ("read a safety report on", "signed a visitor log at", "inspected the lights in")
_EXAMPLE_CODES = (1111, 2222)
_CODES = tuple(c for c in range(1000, 10000) if c not in _EXAMPLE_CODES)


def look_alikes(name: str) -> list[str]:
    """Spellings one letter away from `name`, all different from it.

    >>> look_alikes("Juniper")
    ['Junipero', 'Junipers', 'Junipe', 'Jinuper']
    """
    swapped = name[0] + name[3] + name[2] + name[1] + name[4:] if len(name) > 4 else name + "a"
    out = [name + "o", name + "s", name[:-1], swapped]
    return [v for v in out if v != name]


def _code_sentence(name: str, kind: str, code: int) -> str:
    return f"The access code for the {name} {kind} is {code}."


class NeedleDomain(DocumentDomain):
    """One access code hidden among look-alike codes; the answer is the code."""

    base_id = "longctx/needle-v1"
    axes = Axes("document", "none", "single", "exact")

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        name, kind = rng.choice(_NAMES), rng.choice(_KINDS)
        others = [n for n in _NAMES if n != name]
        decoys = [(v, kind) for v in look_alikes(name)] + [(name, k) for k in _KINDS if k != kind]
        rng.shuffle(decoys)
        count = 2 + length_scale(tokens)
        chosen = decoys[: min(count, 3)]
        while len(chosen) < count:  # the rest: other names, either kind
            chosen.append((rng.choice(others), rng.choice(_KINDS)))
        codes = rng.sample(_CODES, count + 1)
        needle = _code_sentence(name, kind, codes[0])
        depth = rng.random()
        facts = [(depth, needle)]
        facts += [(d, _code_sentence(n, k, c)) for (n, k), c, d in zip(chosen, codes[1:], depths(rng, count), strict=True)]  # fmt: skip
        question = (
            f"What is the access code for the {name} {kind}? Answer with the four-digit code only."
        )
        meta = {"depth": depth, "decoy_codes": codes[1:], "key": f"{name} {kind}"}
        return Case(facts, question, str(codes[0]), [needle], meta)

    def score(self, task: Task, text: str) -> Verdict:
        return verdict(text == task.answer, f"the four-digit code {task.answer}", why=f"got {text[:20]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        code = task.answer
        flipped = code[::-1] if code[::-1] != code else str(int(code) - 1)
        return [str(int(code) + 1), str(task.meta["decoy_codes"][0]), code[:3], flipped]


class MultiNeedleDomain(DocumentDomain):
    """The codes of every vault in one wing, among other wings' vaults; a JSON list."""

    base_id = "longctx/multi-needle-v1"
    axes = Axes("document", "none", "single", "set_match")
    max_answer_chars = 200

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        wing = rng.choice(_WINGS)
        other_wings = [w for w in _WINGS if w != wing]
        k = 2 + (difficulty - 1) // 3
        decoys = 2 + length_scale(tokens)
        names = rng.sample(_NAMES, k + decoys)
        codes = rng.sample(_CODES, k + decoys)
        sentences = [
            f"The access code for the {n} vault in the {wing} wing is {c}."
            for n, c in zip(names[:k], codes[:k], strict=True)
        ]
        # The first decoys reuse a target's name in another wing: the look-alikes.
        decoy_names = [names[i % k] if i < k else names[k + i] for i in range(decoys)]
        decoy_sentences = [
            f"The access code for the {n} vault in the {rng.choice(other_wings)} wing is {c}."
            for n, c in zip(decoy_names, codes[k:], strict=True)
        ]
        facts = list(zip(depths(rng, k + decoys), sentences + decoy_sentences, strict=True))
        question = (
            f"List the access codes of all vaults in the {wing} wing. Answer with a JSON list "
            "of the four-digit codes in any order, for example [1111, 2222], and nothing else."
        )
        meta = {"codes": codes[:k], "decoy_codes": codes[k:], "wing": wing}
        return Case(facts, question, _json_ints(codes[:k]), sentences, meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = json_list(text, int)
        if got is None:
            return Verdict(0.0, False, "Wrong format: not a JSON list of integers.", {"format": 0.0, "f1": 0.0})  # fmt: skip
        gold = [str(c) for c in task.meta["codes"]]
        f1 = set_f1([str(v) for v in got], gold)
        exact = set(map(str, got)) == set(gold)
        return verdict(exact, f"the {len(gold)} codes of the {task.meta['wing']} wing",
                       components={"format": 1.0, "f1": f1}, reward=f1, why=f"set F1 {f1:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        codes, decoys = task.meta["codes"], task.meta["decoy_codes"]
        return [_json_ints(codes[:-1]), _json_ints(codes + decoys[:1]), _json_ints(decoys), "[]"]


def _json_ints(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


class CountMentionsDomain(DocumentDomain):
    """How many safety reports one inspector filed, among look-alike inspectors."""

    base_id = "longctx/count-mentions-v1"
    axes = Axes("document", "none", "single", "exact")

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        name = rng.choice(_INSPECTORS)
        alike = rng.choice(look_alikes(name))
        other = rng.choice([n for n in _INSPECTORS if n != name])
        scale = length_scale(tokens)
        count = rng.randint(1, 3 + scale // 3)
        alike_count = rng.randint(2, 3 + scale // 4)

        def filed(who: str) -> str:
            return f"Inspector {who} filed a safety report on the {rng.choice(_PLACES)}."

        evidence = [filed(name) for _ in range(count)]
        decoys = [filed(alike) for _ in range(alike_count)]
        decoys += [filed(other) for _ in range(1 + scale // 3)]
        decoys += [f"Inspector {name} {rng.choice(_OTHER_ACTIONS)} the {rng.choice(_PLACES)}." for _ in range(1 + scale // 3)]  # fmt: skip
        sentences = evidence + decoys
        facts = list(zip(depths(rng, len(sentences)), sentences, strict=True))
        question = (
            f"How many safety reports did Inspector {name} file, according to the document? "
            "Count only reports filed by exactly that name. Answer with the integer only."
        )
        meta = {"lookalike_count": alike_count, "name": name}
        return Case(facts, question, str(count), evidence, meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = strict_integer(text)
        return verdict(got == int(task.answer), f"the count {task.answer}", why=f"got {text[:20]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        count = int(task.answer)
        return [str(count + 1), str(count - 1), str(count + task.meta["lookalike_count"])]


DOMAINS: tuple[DocumentDomain, ...] = (NeedleDomain(), MultiNeedleDomain(), CountMentionsDomain())
