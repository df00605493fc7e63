"""`list/sort-v1`: sort a short list of integers in ascending order.

The prompt is one user message, `"sort 4,7,7,0"`, holding `1 + (difficulty + 1) // 2`
(2..6) digits 0..9 (duplicates allowed); the answer is the sorted list,
comma-joined without spaces (`"0,4,7,7"`).

The verdict has two components: `format` (the final text is exactly a
comma-separated integer list; spaces after commas are tolerated) and `correct`
(the last comma-separated run of integers in the final text is the sorted list);
the reward is 1 only when both hold.
"""

from __future__ import annotations

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.types import Message, Reference, Rollout, Task, Verdict
from posttrain.verify.answers import last_int_list, parse_int_list


def _joined(numbers: list[int]) -> str:
    return ",".join(str(n) for n in numbers)


class SortDomain:
    """Sort the prompt's integers in ascending order."""

    id = "list/sort-v1"
    axes = Axes("text", "none", "single", "exact")
    max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        numbers = [rng.randint(0, 9) for _ in range(1 + (difficulty + 1) // 2)]
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", f"sort {_joined(numbers)}")],
            answer=_joined(sorted(numbers)),
            difficulty=difficulty,
            seed=seed,
            meta={"numbers": numbers},
        )

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text if isinstance(rollout.final_text, str) else ""
        expected = sorted(task.meta["numbers"])
        well_formed = parse_int_list(text) is not None
        correct = last_int_list(text) == expected
        components = {"format": float(well_formed), "correct": float(correct)}
        if well_formed and correct:
            reason = "The list is correctly sorted."
        elif not text.strip():
            reason = "The final text is empty."
        elif well_formed:
            reason = f"The list is not the sorted input; expected {_joined(expected)}."
        elif correct:
            reason = "The sorted list appears, but the final text is not just the list."
        else:
            reason = "The final text is not an integer list and does not end with the answer."
        passed = well_formed and correct
        return Verdict(float(passed), passed, reason, components)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """The input unsorted, the sorted list less one element, and the list descending."""
        numbers: list[int] = list(task.meta["numbers"])
        ascending = sorted(numbers)
        descending = ascending[::-1]
        if numbers != ascending:
            unsorted = numbers
        elif descending != ascending:
            unsorted = descending
        else:  # every element equal: nothing reorders, so change one value
            unsorted = ascending[:-1] + [ascending[-1] + 1]
        if descending == ascending:
            descending = [ascending[0] + 1] + ascending[1:]
        wrong = [unsorted, ascending[:-1], descending]
        return [Reference.single(_joined(values)) for values in wrong]

    def difficulty_measure(self, task: Task) -> float:
        """The number of integers to sort."""
        return float(len(task.meta["numbers"]))
