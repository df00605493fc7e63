"""The company generator, filing, rendering and citation index of `documents/*`."""

from __future__ import annotations

import random
import time

from posttrain.domains.documents.cite import SourceIndex, citation_f1, is_source_id, traces
from posttrain.domains.documents.company import build_company, identity_errors
from posttrain.domains.documents.filing import amount, core_filing, numbers_in
from posttrain.domains.documents.frame import n_segments, n_years
from posttrain.domains.documents.narrative import long_filing, pad
from posttrain.domains.documents.render import FORMATS, render_filing


def test_accounting_identities_hold_for_every_year_over_many_seeds() -> None:
    for seed in range(200):
        for difficulty in (1, 5, 10):
            rng = random.Random(seed * 31 + difficulty)
            company = build_company(rng, n_years(difficulty), n_segments(difficulty))
            assert identity_errors(company) == [], (seed, difficulty)


def test_balance_sheet_balances_and_cash_ties_explicitly() -> None:
    company = build_company(random.Random(7), 4, 3)
    for i, year in enumerate(company.years):
        assert company.value("total_assets", year) == company.value("total_liabilities", year) + company.value("total_equity", year)  # fmt: skip
        before = company.books[i - 1]["cash"] if i else company.opening["cash"]
        assert before + company.value("net_change", year) == company.value("cash", year)


def test_identity_errors_reports_a_broken_total() -> None:
    company = build_company(random.Random(3), 2, 2)
    company.books[1]["total_assets"] += 5
    assert any("total_assets" in e for e in identity_errors(company))


def test_every_rendering_shows_every_cell_and_line_id() -> None:
    rng = random.Random(1)
    company = build_company(rng, 3, 3)
    filing = core_filing(company, "thousand")
    for fmt in FORMATS:
        text = render_filing(filing, fmt)
        for cell in filing.cells():
            row, _, column = cell.partition("@")
            assert row in text and column in text
        for line_id in filing.lines():
            assert f"[{line_id}]" in text


def test_negative_figures_print_in_parentheses_and_blanks_as_question_marks() -> None:
    assert (amount(-1234), amount(1234), amount(None)) == ("(1,234)", "1,234", "?")
    assert numbers_in("debt was 1,234 thousand and (56) in 2023") == [1234.0, 56.0, 2023.0]


def test_padding_reaches_the_token_target() -> None:
    rng = random.Random(2)
    company = build_company(rng, 2, 2)
    filing = core_filing(company, "million")
    pad(filing, company, rng, 6_000, "markdown")
    assert len(render_filing(filing, "markdown")) // 4 >= 6_000


def test_a_200k_token_filing_is_generated_in_under_two_seconds() -> None:
    started = time.perf_counter()
    _, text = long_filing(seed=0, target_tokens=200_000)
    assert time.perf_counter() - started < 2.0
    assert len(text) // 4 >= 200_000


def test_a_citation_traces_only_to_a_cell_or_line_holding_the_value() -> None:
    company = build_company(random.Random(4), 2, 2)
    filing = core_filing(company, "thousand")
    index = SourceIndex.from_filing(filing)
    year = company.years[0]
    revenue = company.value("revenue", year)
    assert traces(index, filing.cell_id("IS", "revenue", year), revenue)
    assert not traces(index, filing.cell_id("IS", "cogs", year), revenue)
    assert not traces(index, "IS-99@1900", revenue)
    debt_line = "N2-L01"
    assert traces(index, debt_line, company.value("debt", year))
    assert citation_f1(index, [filing.cell_id("IS", "revenue", year)], [revenue]) == 1.0
    assert citation_f1(index, [], [revenue]) == 0.0


def test_source_ids_have_a_strict_shape() -> None:
    assert is_source_id("IS-03@2023") and is_source_id("N2-L01") and is_source_id("QR1-02@Q3")
    assert not is_source_id("IS-03") and not is_source_id("revenue") and not is_source_id(3)
