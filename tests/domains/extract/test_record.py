"""The shared scoring of `extract/*`: strict JSON, the schema gate, per-field kinds,
list matching, and the quote check of the cited domains."""

from __future__ import annotations

import json

from posttrain.domains.extract.commerce import Invoice
from posttrain.domains.extract.record import (
    MAX_QUOTE,
    Field,
    field_value_score,
    quote_ok,
    reference_quote,
    scalar_ok,
)

INVOICE = Invoice()
TASK = INVOICE.generate(3, 4)
GOLD = json.loads(TASK.answer)


def _judge(record: object) -> tuple[float, bool]:
    v = INVOICE.judge(TASK, json.dumps(record))
    return v.reward, v.passed


def test_a_fenced_reference_passes() -> None:
    assert INVOICE.judge(TASK, f"```json\n{TASK.answer}\n```").passed


def test_prose_around_the_json_scores_zero() -> None:
    assert INVOICE.judge(TASK, f"Here it is: {TASK.answer}").reward == 0.0


def test_an_extra_key_is_schema_invalid_and_scores_zero() -> None:
    assert _judge({**GOLD, "notes": "x"}) == (0.0, False)


def test_an_amount_as_a_string_is_schema_invalid() -> None:
    assert _judge({**GOLD, "total": f"${GOLD['total']}"}) == (0.0, False)


def test_a_date_in_another_format_is_schema_invalid() -> None:
    assert _judge({**GOLD, "invoice_date": "March 3, 2024"}) == (0.0, False)


def test_one_wrong_field_costs_its_share_and_fails() -> None:
    reward, passed = _judge({**GOLD, "bill_to": "Somebody Else Entirely"})
    assert not passed and abs(reward - 6 / 7) < 1e-9


def test_text_forgives_case_and_spacing_but_not_another_name() -> None:
    assert scalar_ok("text", "  northwind   SUPPLIES ltd.", "Northwind Supplies Ltd.")
    assert not scalar_ok("text", "Bluepeak Supplies Ltd.", "Northwind Supplies Ltd.")


def test_text_does_not_forgive_another_number_in_it() -> None:
    # Each was accepted as a slip in v1 (similarity >= 0.9): a different fact.
    for wrong, gold in [("517 Mill Lane", "516 Mill Lane"), ("WHOLE MILK 2GAL", "WHOLE MILK 1GAL"),
                        ("Outpatient Clinic 3, Level 3", "Outpatient Clinic 3, Level 2"),
                        ("Label roll 501 ct", "Label roll 500 ct")]:  # fmt: skip
        assert not scalar_ok("text", wrong, gold), wrong
    assert scalar_ok("text", "516 mill lane", "516 Mill Lane")
    assert scalar_ok("text", "Jon Smith, Unit 4", "John Smith, Unit 4")


def test_codes_must_match_exactly_up_to_case_and_spaces() -> None:
    assert scalar_ok("code", "1z99 9AA1", "1Z999AA1")
    assert not scalar_ok("code", "INV-2024-0042", "INV-2024-0043")


def test_phones_match_by_digits_in_any_format() -> None:
    assert scalar_ok("phone", "+1 (415) 555-0134", "4155550134")
    assert scalar_ok("phone", "1-415-555-0134", "4155550134")
    assert not scalar_ok("phone", "415-555-0135", "4155550134")


def test_a_phone_field_holding_more_than_one_number_fails() -> None:
    assert not scalar_ok("phone", "(212) 555-0199 / (415) 555-0134", "4155550134")
    assert not scalar_ok("phone", "99 415 555 0134", "4155550134")  # country code not 1
    assert not scalar_ok("phone", "555-0134", "4155550134")


def test_numbers_match_within_tolerance_and_integers_exactly() -> None:
    assert scalar_ok("number", 1234.5, 1234.50) and scalar_ok("number", 85000, 85000.0)
    assert not scalar_ok("number", 1234.6, 1234.5)
    assert not scalar_ok("integer", 13, 12)


def test_an_unordered_list_matches_in_any_order() -> None:
    skills = Field("skills", "list", "", items=(Field("", "text", ""),))
    assert field_value_score(skills, ["SQL", "python"], ["Python", "SQL"]) == 1.0
    assert field_value_score(skills, ["SQL"], ["Python", "SQL"]) == 0.5
    assert field_value_score(skills, ["SQL", "Python", "Go"], ["Python", "SQL"]) == 2 / 3


def test_an_ordered_list_must_keep_the_order() -> None:
    jobs = Field("jobs", "list", "", ordered=True, items=(Field("company", "text", ""),))
    gold = [{"company": "Orion Labs"}, {"company": "Kestrel Foods"}]
    assert field_value_score(jobs, gold, gold) == 1.0
    assert field_value_score(jobs, gold[::-1], gold) == 0.0


def test_a_list_item_matches_only_when_every_subfield_does() -> None:
    items = Field(
        "items", "list", "", items=(Field("name", "text", ""), Field("price", "number", ""))
    )
    gold = [{"name": "COFFEE BEANS", "price": 9.5}]
    assert field_value_score(items, [{"name": "COFFEE BEANS", "price": 9.6}], gold) == 0.0


DOC = "Lease\n2. Term. The lease begins on 3rd of March 2024 and runs for 12 months."


def test_a_verbatim_quote_holding_the_value_passes() -> None:
    assert quote_ok("begins on 3rd of March 2024", DOC, ["3rd of March 2024"])
    assert quote_ok("begins  on\n3rd of March 2024", DOC, ["3rd of March 2024"])


def test_a_fabricated_quote_fails_even_with_the_value() -> None:
    assert not quote_ok("The lease starts 3rd of March 2024", DOC, ["3rd of March 2024"])


def test_a_verbatim_quote_without_the_value_fails() -> None:
    assert not quote_ok("runs for 12 months", DOC, ["3rd of March 2024"])


def test_the_bare_value_or_one_word_more_is_no_quote() -> None:
    assert not quote_ok("3rd of March 2024", DOC, ["3rd of March 2024"])
    assert not quote_ok("on 3rd of March 2024", DOC, ["3rd of March 2024"])


def test_a_whole_short_line_holding_the_value_is_a_quote() -> None:
    doc = "Signed:\nTenant: Ada Lee\nAda Lee"
    assert quote_ok("Tenant: Ada Lee", doc, ["Ada Lee"])
    assert not quote_ok("Ada Lee", doc, ["Ada Lee"])  # a whole line, but only the value


def test_a_quote_spanning_two_lines_fails() -> None:
    assert not quote_ok("Lease 2. Term. The lease begins on 3rd of March 2024", DOC, ["3rd of March 2024"])  # fmt: skip


def test_reference_quotes_are_short_verbatim_spans_of_the_value() -> None:
    line = "word " * 40 + "the value 1,850.00 here " + "tail " * 40
    quote = reference_quote(f"head\n{line}\nend", "1,850.00")
    assert len(quote) <= MAX_QUOTE and "1,850.00" in quote and quote in line


def test_a_huge_integer_is_wrong_not_a_verifier_error() -> None:
    v = INVOICE.judge(TASK, json.dumps({**GOLD, "total": 10**400}))
    assert v.error is None and not v.passed
