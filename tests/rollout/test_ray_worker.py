"""The Ray worker's helpers that run on the driver: the recorded failures of a chunk."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray")

from posttrain.rollout.backends.ray_worker import failed_groups  # noqa: E402
from posttrain.train.batches import check_prompts  # noqa: E402
from tests.rollout.test_scheduler import addition  # noqa: E402


class RefusingTemplate:
    """A tokenizer whose chat template rejects every prompt (a role it does not know)."""

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
        raise ValueError("unknown role")

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [ord(c) for c in text]


def test_a_chunk_failed_by_its_prompt_still_becomes_recorded_failures() -> None:
    # The worker raised rendering the prompt; rendering it again for the record must
    # not raise on the gathering thread (which would leave every caller waiting).
    task = addition(0, 1)
    [[a, b]] = failed_groups([(task, 3)], 2, RefusingTemplate(), 1, ValueError("unknown role"))
    assert a.error == b.error == "rollout worker 1 failed: ValueError: unknown role"
    assert a.task_id == task.id and a.policy_version == 3 and a.reward == 0.0
    assert not a.judged and not a.scored  # a worker crash judges nothing
    # The prompt as plain text: a GRPO step that keeps the group needs a prompt token.
    assert a.prompt_ids == [ord(c) for c in "user: " + task.prompt[-1].content]
    assert a.id != b.id
    check_prompts([a, b])
