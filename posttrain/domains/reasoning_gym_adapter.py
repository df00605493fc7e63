"""reasoning-gym as a breadth layer: each of its generators as a domain `rg/<name>-vN`
(v1 unless `VERSIONS` bumped it).

    from posttrain.domains import get_domain
    domain = get_domain("rg/basic_arithmetic-v1")
    task = domain.generate(seed=0, difficulty=4)

Generation: one entry of the generator's dataset, seeded from (id, seed, difficulty)
through `task_rng`. Difficulty 1..10 maps onto the generator's curriculum: every
attribute at level round((d - 1) / 9 * its top level), in reasoning-gym's inclusive
mode (a range up to that level). The few generators without a curriculum ignore
difficulty. Verification: the generator's own `score_answer` on the final text
(its scale, in [0, 1]; passed only at 1.0; below `NOISE_FLOOR` counted as 0, since
several scorers give 0.01 to any non-empty wrong answer and similarity scorers a
trace to an echoed prompt), with the entry regenerated from the task's seed, so
nothing the scorer needs travels through JSON. A generator that rejects its own top
curriculum levels gets all levels stepped down together until it accepts them.

The generator list is pinned to reasoning-gym 0.1.25 (`GENERATORS`, by category; the
category decides the matrix cell); a test checks it against the installed package.
Excluded, with the reason: `EXCLUDED`. Five scorers evaluate the answer as code; the
answer must first pass a syntax check (`ANSWER_GATES`, `verify/safe_expr.py`: no names
where the scorer evals, bounded exponents and degree where SymPy evaluates); so must
complex_arithmetic's (no NaN, which its scorer rewards: `NAN_GATED`), and three scorers that build
the number written get no 4+ digit exponent in scientific notation (`HUGE_NUMBER_GATED`).
coin_flip is scored here, not by its scorer, whose prefix credit passes "0" (`EXACT_NUMBER`);
four scorers that read the first answer and ignore the rest get exactly one (`FORMAT_GATES`).

Not guaranteed: corruptions are generic (empty text, the answer changed by one
character, another seed's answer), kept only when the generator's scorer rejects
them — a tautology for a generic adapter, stated here; `accepts_prose` is True
because each generator's scorer defines its own format.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.domains.rg_guards import guard_generators
from posttrain.types import Message, Reference, Rollout, Task, Verdict
from posttrain.verify.safe_expr import MATH_FUNCTIONS, is_arithmetic, is_literal

VERSION = "0.1.25"
MAX_REDRAWS = 8  # seeds tried for one task when a generator gives up on one
NOISE_FLOOR = 0.05  # scores below are 0: several scorers give 0.01 to any wrong answer
GENERATORS: dict[str, tuple[str, ...]] = {
    "algebra": (
        "complex_arithmetic", "intermediate_integration", "polynomial_equations",
        "polynomial_multiplication", "simple_equations", "simple_integration",
    ),
    "algorithmic": (
        "ab", "base_conversion", "binary_alternation", "binary_matrix", "caesar_cipher",
        "count_primes", "cryptarithm", "game_of_life", "game_of_life_halting", "graph_color",
        "group_anagrams", "isomorphic_strings", "jugs", "letter_counting", "letter_jumble",
        "manipulate_matrix", "number_filtering", "number_sorting", "palindrome_generation",
        "palindrome_partitioning", "pool_matrix", "ransom_note", "rotate_matrix",
        "rotten_oranges", "sentence_reordering", "spell_backward", "spiral_matrix",
        "string_insertion", "string_manipulation", "string_splitting", "string_synthesis",
        "word_ladder", "word_sequence_reversal", "word_sorting",
    ),
    "arc": (
        "arc_1d", "arc_agi", "rearc",
    ),
    "arithmetic": (
        "basic_arithmetic", "bitwise_arithmetic", "calendar_arithmetic", "chain_sum",
        "count_bits", "decimal_arithmetic", "decimal_chain_sum", "dice",
        "fraction_simplification", "gcd", "gsm_symbolic", "lcm", "leg_counting",
        "number_format", "power_function", "prime_factorization", "products", "time_intervals",
    ),
    "code": (
        "bf", "codeio",
    ),
    "cognition": (
        "color_cube_rotation", "figlet_font", "modulo_grid", "needle_haystack",
        "number_sequence", "rectangle_count", "rubiks_cube",
    ),
    "games": (
        "boxnet", "countdown", "emoji_mystery", "futoshiki", "kakurasu", "knight_swap",
        "mahjong_puzzle", "maze", "mini_sudoku", "n_queens", "puzzle24", "rush_hour",
        "sokoban", "sudoku", "survo", "tower_of_hanoi", "tsumego",
    ),
    "geometry": (
        "advanced_geometry", "simple_geometry",
    ),
    "graphs": (
        "course_schedule", "family_relationships", "largest_island", "path_star",
        "quantum_lock", "shortest_path",
    ),
    "induction": (
        "acre", "list_functions",
    ),
    "logic": (
        "aiw", "circuit_logic", "knights_knaves", "propositional_logic", "self_reference",
        "syllogism", "zebra_puzzles",
    ),
    "probability": (
        "coin_flip",
    ),
}  # fmt: skip
EXCLUDED = {
    "composite": "a meta-dataset mixing the others, not a generator of its own",
    "boxnet": "no gold answer (many plans are valid) and no reference its scorer accepts",
    "graph_color": "no gold answer (any proper colouring is valid)",
    "propositional_logic": "no gold answer (any valid derivation is accepted)",
    "rubiks_cube": "no gold answer (any solving move sequence is valid)",
    "rush_hour": "no gold answer (any solving move sequence is valid)",
    # Measured here (2 cores): generation over 1 s per task at some difficulty; these
    # need pre-generated pools before they can join (issue 3: "pre-generate where slow").
    "jugs": "generation slow (minutes at high difficulty, then fails)",
    "sokoban": "generation slow (51 s for 6 tasks)",
    "zebra_puzzles": "generation slow (19 s for 6 tasks)",
    "n_queens": "generation slow; pooled, another task's board passes its scorer (d=3)",
    "arc_agi": "generation slow (3 s for 6 tasks)",
    "group_anagrams": "generation slow: served from a pre-generated pool instead (rg_pools.py)",
    "word_ladder": "generation slow: served from a pre-generated pool instead (rg_pools.py)",
    "figlet_font": "its scorer gives 0.1 to the echoed prompt (d=1; found on its pool)",
    "bf": "generation slow: served from a pre-generated pool instead (rg_pools.py)",
    "puzzle24": "many seeds share solutions: another seed's answer is often right too",
    # Found by `posttrain domains check` (difficulties 1 and 5):
    "polynomial_multiplication": "not deterministic: tasks change with PYTHONHASHSEED",
    "isomorphic_strings": "not deterministic: tasks change with PYTHONHASHSEED",
    "ransom_note": "not deterministic: tasks change with PYTHONHASHSEED",
    "codeio": "not deterministic: tasks change with PYTHONHASHSEED",
    "game_of_life_halting": "its scorer passes 100 KB of junk and another task's answer",
    "rotate_matrix": "its scorer gives 0.53 to the echoed prompt",
    "sentence_reordering": "its scorer gives partial credit to 100 KB of junk",
    "knight_swap": "its curriculum's lowest level is rejected by its own config (min_nodes)",
    # ... and at difficulties 1..10:
    "gsm_symbolic": "its scorer reads the last number, so an echoed prompt can pass (d=7)",
    "list_functions": "not deterministic at d=7: tasks change with PYTHONHASHSEED",
    "spell_backward": "its scorer gives 0.4 to the echoed prompt (d=4)",
    "string_manipulation": "its scorer gives 0.08 to the echoed prompt (d=4)",
    "intermediate_integration": "not deterministic (d=5, seen in a fresh clone's install)",
    "time_intervals": "another task's answer passes (d=3): different tasks share durations",
    "word_sorting": "its scorer gives 0.09 to the echoed prompt (d=8)",
}
# The category's matrix cell: modality, verification.
CELLS: dict[str, tuple[str, str]] = {
    "algebra": ("text", "math"),
    "algorithmic": ("text", "exact"),
    "arc": ("geometry", "exact"),
    "arithmetic": ("text", "numeric"),
    "code": ("code", "exact"),
    "cognition": ("text", "exact"),
    "games": ("text", "validity"),
    "geometry": ("geometry", "math"),
    "graphs": ("text", "exact"),
    "induction": ("text", "exact"),
    "logic": ("text", "exact"),
    "probability": ("text", "numeric"),
}


def _plain_arithmetic(text: str, item: dict[str, Any]) -> bool:
    return is_arithmetic(text)  # countdown: + − × ÷ of the given numbers, nothing else


def _antiderivative(text: str, item: dict[str, Any]) -> bool:
    variable = str(item["metadata"]["variable"])
    return len(text) <= MAX_EXPRESSION_CHARS and is_arithmetic(
        text, {variable, "C"}, MATH_FUNCTIONS, power=True, max_degree=MAX_ANTIDERIVATIVE_DEGREE
    )


def _literal(text: str, item: dict[str, Any]) -> bool:
    # The gold text itself goes through: each of these scorers compares it before its
    # eval, and string_insertion's answers are letters ("ABCDE"), which parse as a name.
    return text == item["answer"] or is_literal(text)


# Scorers that evaluate the answer text as code (reasoning-gym 0.1.25: `parse_expr` in
# countdown and simple_integration, `eval` in the other three) and the check the text
# passes first; anything else scores 0 without reaching the scorer. Without it one
# answer could run code in the trainer and, e.g., patch a scorer to pass every later
# answer, or answer `Integral(f, X)` and have SymPy integrate for it.
ANSWER_GATES: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "countdown": _plain_arithmetic,
    "simple_integration": _antiderivative,
    "spiral_matrix": _literal,
    "binary_matrix": _literal,
    "string_insertion": _literal,
}
# Scorers that build the number an answer writes (Fraction, SymPy): "1e999999999" would
# hang them, so a 4+ digit exponent in scientific notation scores 0 before reaching them.
# Powers ("9**9**9**9", "9**(9)**8") are bounded on the syntax tree by `is_arithmetic`.
HUGE_NUMBER_GATED = frozenset({"coin_flip", "countdown", "simple_integration"})
_HUGE_NUMBER = re.compile(r"[0-9.][eE][+-]?[0-9]{4,}")
# complex_arithmetic scores min(1, exp(-distance)): a NaN distance would give 1.
NAN_GATED = frozenset({"complex_arithmetic"})
_NAN = re.compile("nan|inf", re.IGNORECASE)


def _same_grid(text: str, item: dict[str, Any]) -> bool:
    try:
        got, gold = json.loads(text), json.loads(str(item["answer"]))
    except (ValueError, RecursionError):
        return False
    shape = [len(row) if isinstance(row, list) else -1 for row in gold]
    return isinstance(got, list) and [len(r) if isinstance(r, list) else -1 for r in got] == shape


def _same_word_count(text: str, item: dict[str, Any]) -> bool:
    return len(text.split()) == len(str(item["answer"]).split())


def _one_fraction(text: str, item: dict[str, Any]) -> bool:
    return len(_FRACTION.findall(text)) == 1


def _numbers_only(text: str, item: dict[str, Any]) -> bool:
    return all(_NUMBER.fullmatch(part.strip()) for part in text.split(","))


_FRACTION = re.compile(r"\\d?frac\s*\{|\d+\s*/\s*\d+")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
# Scorers that read the first answer and ignore what follows ("$22/149$ or $1/2$" passes
# fraction_simplification): the reply must be exactly one answer in the generator's form.
FORMAT_GATES: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "fraction_simplification": _one_fraction,
    "letter_jumble": _same_word_count,
    "game_of_life": _same_grid,
    "polynomial_equations": _numbers_only,
}

# Scorers whose partial credit rewards a wrong number: coin_flip's gives a prefix of the
# answer's digits credit over the *shorter* string, so "0" (or any truncation) scores 1.0
# on every probability below 1. Here the written number (a decimal or a fraction) passes
# within the tolerance, with reward 1, and anything else scores 0.
EXACT_NUMBER = {"coin_flip": 1e-4}
# Generators whose domain changed after v1 (an id is bumped when its rewards change).
VERSIONS = {
    "complex_arithmetic": 2,  # v2: NaN answers no longer pass
    "coin_flip": 2,  # v2: only the right probability passes (`EXACT_NUMBER`)
    **{name: 2 for name in FORMAT_GATES},  # v2: one answer, nothing after it
    # v2: a name is no literal (`oracle_answer` read the scorer's gold answer: 0.1)
    **{name: 2 for name, gate in ANSWER_GATES.items() if gate is _literal},
    "simple_integration": 2,  # v2: bounded exponents, numbers and degree (towers hung SymPy)
}
MAX_EXPRESSION_CHARS = 2000  # SymPy's simplify takes seconds on 2,000 characters of products
# References reach degree 11; simplify expands products: 32 distinct linear factors take
# it 2 s, 64 take 8 s, and 2,000 characters hold 300.
MAX_ANTIDERIVATIVE_DEGREE = 16


class ReasoningGymDomain:
    """One reasoning-gym generator behind the `Domain` contract."""

    max_turns = 1
    accepts_prose = True

    def __init__(self, name: str, category: str) -> None:
        self.name = name
        self.category = category
        self.id = f"rg/{name}-v{VERSIONS.get(name, 1)}"
        modality, verification = CELLS[category]
        self.axes = Axes(modality, "none", "single", verification)  # type: ignore[arg-type]

    def __reduce__(self) -> tuple[Any, ...]:  # picklable for the self-check's fresh processes
        return (ReasoningGymDomain, (self.name, self.category))

    def _levels(self, difficulty: int) -> dict[str, int]:
        curriculum = _curriculum(self.name)
        if curriculum is None:
            return {}
        levels = {}
        for attr_name, attr in curriculum.attributes.items():
            top = len(attr.levels) - 1
            levels[attr_name] = round((difficulty - 1) / 9 * top)
        return levels

    def entry(self, seed: int, difficulty: int) -> tuple[Any, dict[str, Any]]:
        """(the generator's dataset, its entry) for this task: the scorer needs both."""
        return _entry(
            self.name, self.id, seed, difficulty, tuple(sorted(self._levels(difficulty).items()))
        )

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        _, item = self.entry(seed, difficulty)
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", str(item["question"]))],
            answer=str(item["answer"]),
            difficulty=difficulty,
            seed=seed,
            meta={"generator": self.name, "levels": self._levels(difficulty)},
        )

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text if isinstance(rollout.final_text, str) else ""
        score, failure = self._score(task, text)
        if failure:
            reason = f"The answer could not be scored ({failure})."
            return Verdict(0.0, False, reason, {"score": 0.0})
        passed = score >= 1.0
        reason = "The generator's scorer accepts the answer." if passed else (
            f"The generator's scorer gives {score:.2f}." if text.strip() else "The final text is empty.")  # fmt: skip
        return Verdict(score if passed else min(score, 0.99), passed, reason, {"score": score})

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """Generic wrong answers that this generator's scorer rejects (see module docstring)."""
        answer = task.answer
        candidates = ["", _nudge(answer)]
        for offset in range(1, 6):
            other = self.generate(task.seed + 7919 * offset, task.difficulty).answer
            if other != answer:
                candidates.append(other)
                break
        return [Reference.single(text) for text in candidates if self._score(task, text)[0] < 1.0]

    def _score(self, task: Task, text: str) -> tuple[float, str | None]:
        """The generator's score of `text` in [0, 1] (under `NOISE_FLOOR`: 0), and the
        exception's name if its scorer raised (reasoning-gym scorers can, on junk)."""
        if not text.strip():
            return 0.0, None
        dataset, item = self.entry(task.seed, task.difficulty)
        if self.name in HUGE_NUMBER_GATED and _HUGE_NUMBER.search(text):
            return 0.0, "a 4+ digit exponent; its scorer would hang on it"
        if self.name in NAN_GATED and _NAN.search(text):
            return 0.0, "NaN or infinity, which its scorer would reward"
        gate = ANSWER_GATES.get(self.name)
        if gate is not None and not gate(text, item):
            return 0.0, "not a plain expression of bounded size; its scorer would run it as code"
        shape = FORMAT_GATES.get(self.name)
        if shape is not None and not shape(text.strip(), item):
            return 0.0, "not exactly one answer in the generator's form (text after it?)"
        if self.name in EXACT_NUMBER:
            return _exact_number(text, str(item["answer"]), EXACT_NUMBER[self.name]), None
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # some scorers print as they go
                score = min(max(float(dataset.score_answer(text, item)), 0.0), 1.0)
        except Exception as exc:
            return 0.0, type(exc).__name__
        return (0.0 if score < NOISE_FLOOR else score), None

    def difficulty_measure(self, task: Task) -> float:
        """The sum of the curriculum levels the task was generated at."""
        return float(sum(task.meta["levels"].values()))


def _exact_number(text: str, gold: str, tolerance: float) -> float:
    """1.0 when `text` is one number (a decimal or a fraction; commas ignored) within
    `tolerance` of `gold`, else 0.0."""
    try:
        value = float(Fraction(text.strip().replace(",", "")))
        target = float(Fraction(gold.replace(",", "")))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0
    return 1.0 if abs(value - target) <= tolerance else 0.0


def _nudge(answer: str) -> str:
    """The answer changed in one place: a digit bumped, else a character dropped or added."""
    for i in range(len(answer) - 1, -1, -1):
        if answer[i].isdigit():
            return answer[:i] + str((int(answer[i]) + 1) % 10) + answer[i + 1 :]
    return answer[:-1] if len(answer) > 1 else answer + "x"


@functools.cache
def _curriculum(name: str) -> Any:
    from reasoning_gym import factory

    return factory.create_curriculum(name) if factory.has_curriculum(name) else None


@functools.lru_cache(maxsize=4096)
def _entry(name: str, domain_id: str, seed: int, difficulty: int, levels: tuple[tuple[str, int], ...]) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    """The generator's (dataset, entry) for this task. A generator that gives up on its
    seed (tsumego raises RuntimeError on some) gets the next seed drawn from the same
    task rng, so the task stays deterministic; the first draw is unchanged."""
    rng = task_rng(domain_id, seed, difficulty)
    for attempt in range(MAX_REDRAWS):
        try:
            return _entry_at(name, rng.getrandbits(31), dict(levels))
        except RuntimeError:
            if attempt == MAX_REDRAWS - 1:
                raise
    raise AssertionError("unreachable")


def _entry_at(name: str, rg_seed: int, wanted: dict[str, int]) -> tuple[Any, dict[str, Any]]:
    from reasoning_gym import factory

    guard_generators()  # generators that could run without end on some seeds
    curriculum = _curriculum(name)
    if curriculum is None:
        dataset = factory.create_dataset(name, seed=rg_seed, size=1)
        return dataset, dataset[0]
    for step in range(
        12
    ):  # some generators reject their own top levels: step down, deterministically
        for attr_name, level in wanted.items():
            curriculum.set_attr_level(attr_name, max(0, level - step))
        try:
            config = curriculum.generate_configuration({"seed": rg_seed, "size": 1})
            dataset = factory.create_dataset(name, **vars(config))
            return dataset, dataset[0]
        except (AssertionError, ValueError):
            if step == 11:
                raise
    raise AssertionError("unreachable")


def all_generators() -> list[ReasoningGymDomain]:
    """One domain per generator in `GENERATORS`, minus `EXCLUDED`."""
    return [
        ReasoningGymDomain(name, category)
        for category, names in GENERATORS.items()
        for name in names
        if name not in EXCLUDED
    ]
