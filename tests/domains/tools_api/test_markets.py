"""`tools/price-compare-v1` and `tools/portfolio-value-v2` over the price-history API."""

from __future__ import annotations

from posttrain.domains.tools_api.markets import PortfolioValueDomain, PriceCompareDomain
from tests.domains.tools_api.episodes import play, with_final

COMPARE, PORTFOLIO = PriceCompareDomain(), PortfolioValueDomain()


def test_compare_answer_is_the_largest_percentage_change() -> None:
    task = COMPARE.generate(0, 6)
    prices = task.meta["world"]["prices"]
    d1, d2 = task.meta["dates"]
    best = max(task.meta["tickers"], key=lambda t: prices[t][d2] / prices[t][d1])
    assert task.answer == best


def test_compare_accepts_a_lower_case_ticker() -> None:
    task = COMPARE.generate(0, 6)
    assert play(COMPARE, task, with_final(task, task.answer.lower())).passed


def test_compare_needs_both_closes_of_every_ticker() -> None:
    task = COMPARE.generate(1, 3)
    calls = task.meta["plan"][0]
    verdict = play(COMPARE, task, [calls[:-1], task.answer])
    assert verdict.components["used_tool"] == 0.0 and not verdict.passed


def test_portfolio_at_purchase_prices_fails() -> None:
    task = PORTFOLIO.generate(2, 5)
    stale = sum(r["shares"] * r["paid"] for r in task.meta["rows"])
    assert not play(PORTFOLIO, task, with_final(task, f"{stale:.2f}")).passed


def test_portfolio_prompt_is_a_table_of_every_holding() -> None:
    task = PORTFOLIO.generate(2, 5)
    text = task.prompt[0].content
    assert "| ticker | shares | bought on | price paid |" in text
    assert all(f"| {r['ticker']} | {r['shares']} |" in text for r in task.meta["rows"])


def test_portfolio_with_a_cent_of_rounding_drift_passes() -> None:
    task = PORTFOLIO.generate(3, 5)
    value = float(task.answer) - 0.01
    assert play(PORTFOLIO, task, with_final(task, f"{value:.2f}")).passed


def test_portfolio_one_share_short_fails_even_when_the_portfolio_is_large() -> None:
    task = PORTFOLIO.generate(9, 10)
    rows, day = task.meta["rows"], task.meta["day"]
    prices = task.meta["world"]["prices"]
    cheapest = min(prices[r["ticker"]][day] for r in rows)
    assert cheapest < 1e-4 * float(task.answer)  # within the old relative slack
    short = float(task.answer) - cheapest
    assert not play(PORTFOLIO, task, with_final(task, f"{short:.2f}")).passed
