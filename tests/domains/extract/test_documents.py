"""Document pieces: the renderings of dates, times, amounts and phones, and distinct draws."""

from __future__ import annotations

import datetime as dt
import random

from posttrain.domains.extract import documents as d
from posttrain.verify.fuzzy import fuzzy_ratio


def test_dates_render_in_every_style() -> None:
    when = dt.date(2024, 3, 3)
    got = [d.date_text(when, s) for s in ("iso", "us", "uk", "short", "ordinal", "weekday")]
    assert got == ["2024-03-03", "March 3, 2024", "3 March 2024", "Mar 3, 2024",
                   "3rd of March 2024", "Sunday, 3 March 2024"]  # fmt: skip


def test_ordinals_of_the_teens_end_in_th() -> None:
    assert d.date_text(dt.date(2024, 5, 12), "ordinal") == "12th of May 2024"
    assert d.date_text(dt.date(2024, 5, 22), "ordinal") == "22nd of May 2024"


def test_times_render_on_both_clocks() -> None:
    assert [d.time_text(14, 5, s) for s in ("24h", "12h", "dotted", "dots")] == [
        "14:05", "2:05 PM", "2.05pm", "2:05 p.m."]  # fmt: skip
    assert d.time_text(0, 30, "12h") == "12:30 AM"


def test_amounts_render_with_signs_codes_and_thousands() -> None:
    assert d.money_text(1234.5, "sign") == "$1,234.50"
    assert d.money_text(1234.5, "code_after") == "1,234.50 USD"
    assert d.money_text(85000, "k") == "$85k"


def test_phone_formats_keep_the_digits() -> None:
    for style in ("dashes", "parens", "dots", "intl"):
        assert (
            "".join(c for c in d.phone_text("4155550134", style) if c.isdigit())[-10:]
            == "4155550134"
        )


def test_people_are_far_apart_for_the_fuzzy_matcher() -> None:
    names = d.people(random.Random(3), 8)
    assert all(fuzzy_ratio(a, b) < 0.75 for i, a in enumerate(names) for b in names[i + 1 :])


def test_harder_difficulties_allow_harder_date_styles() -> None:
    assert "ordinal" not in d.date_styles(1) and "ordinal" in d.date_styles(9)
