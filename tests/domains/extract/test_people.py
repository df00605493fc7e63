"""Contact signature, job posting and résumé: the distractors fail, equivalent forms pass."""

from __future__ import annotations

import json
from typing import Any

from posttrain.domains.extract.people import ContactSignature, JobPosting, Resume
from posttrain.domains.extract.record import ExtractDomain
from posttrain.types import Task


def _with(domain: ExtractDomain, task: Task, **changes: Any) -> tuple[float, bool]:
    v = domain.judge(task, json.dumps({**json.loads(task.answer), **changes}))
    return v.reward, v.passed


def test_the_direct_line_in_another_format_passes() -> None:
    task = ContactSignature().generate(0, 5)
    digits = json.loads(task.answer)["phone"]
    pretty = f"+1 ({digits[:3]}) {digits[3:6]}-{digits[6:]}"
    assert _with(ContactSignature(), task, phone=pretty) == (1.0, True)


def test_the_switchboard_number_or_a_cc_address_fails() -> None:
    task = ContactSignature().generate(1, 8)
    wrong = task.meta["distractors"]
    assert not _with(ContactSignature(), task, phone=wrong["phone"])[1]
    assert not _with(ContactSignature(), task, email=wrong["email"])[1]


def test_every_number_of_the_signature_in_the_phone_field_fails() -> None:
    domain = ContactSignature()
    for difficulty in (4, 7, 10):
        for seed in range(10):
            task = domain.generate(seed, difficulty)
            direct = json.loads(task.answer)["phone"]
            numbers = [task.meta["distractors"]["phone"], direct]  # the direct line last
            hedge = " / ".join(f"({n[:3]}) {n[3:6]}-{n[6:]}" for n in numbers)
            assert not _with(domain, task, phone=hedge)[1]


def test_the_quoted_senders_title_fails() -> None:
    task = ContactSignature().generate(2, 7)
    assert not _with(ContactSignature(), task, job_title=task.meta["distractors"]["job_title"])[1]


def test_required_skills_pass_in_any_order_but_not_with_a_nice_to_have() -> None:
    task = JobPosting().generate(0, 6)
    skills = json.loads(task.answer)["required_skills"]
    assert _with(JobPosting(), task, required_skills=skills[::-1]) == (1.0, True)
    assert not _with(JobPosting(), task, required_skills=task.meta["distractors"]["required_skills"])[1]  # fmt: skip


def test_salaries_written_in_k_are_read_as_full_numbers() -> None:
    task = JobPosting().generate(3, 7)
    gold = json.loads(task.answer)
    assert "k" in task.prompt[0].content.split("Salary:")[1].split("\n")[0]
    assert not _with(JobPosting(), task, salary_min=gold["salary_min"] / 1000)[1]


def test_a_current_job_ends_present_and_a_month_is_not_enough_as_a_year() -> None:
    domain = Resume()
    task = next(t for t in (domain.generate(s, 4) for s in range(20)) if '"present"' in t.answer)
    jobs = json.loads(task.answer)["jobs"]
    assert not _with(domain, task, jobs=[{**jobs[0], "end": "2025"}, *jobs[1:]])[1]


def test_the_certification_year_is_not_the_graduation_year() -> None:
    task = Resume().generate(0, 5)
    assert not _with(Resume(), task, graduation_year=task.meta["distractors"]["graduation_year"])[1]
