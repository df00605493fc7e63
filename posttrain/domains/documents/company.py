"""A seeded generator of one consistent company over several fiscal years.

    company = build_company(random.Random(0), n_years=3, n_segments=4)
    company.value("revenue", 2023)          # an int, in the filing's unit (thousands or millions)
    broken = identity_errors(company)       # [] — every accounting identity holds

Each year holds an income statement, a year-end balance sheet and a cash-flow
statement, plus segment revenue and operating income and a few operating facts
(shares, employees, backlog). The books are built so that, for every year:
assets = liabilities + equity; the cash-flow statement's net change rolls the
prior year's cash into this year's balance-sheet cash; net income less dividends
rolls retained earnings forward; segment revenues sum to revenue and segment
operating income plus "corporate and unallocated" sums to operating income.
`IDENTITIES` lists the within-year sums as data, so tasks (missing cells,
anomalies) and the property test read the same rules. The balance sheet of the
year before the first one (`opening`) is kept so the first year's cash flow ties.

Not guaranteed: the figures are plausible, not realistic (no taxes on losses,
one debt line, no leases, no minority interests); income tax is zero in a loss
year; segment names come from a small pool.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SEGMENT_POOL = (
    "Cloud Services", "Industrial Products", "Consumer Devices", "Healthcare Solutions",
    "Energy Systems", "Logistics", "Financial Software", "Retail Networks", "Materials",
    "Aerospace Components", "Media and Advertising", "Specialty Chemicals",
)  # fmt: skip
NAME_HEADS = ("Northwind", "Bluecrest", "Harborview", "Solvane", "Quillon", "Ardent", "Meridel",
              "Corvalis", "Tessaray", "Ostrava", "Linden", "Pinegate")  # fmt: skip
NAME_TAILS = ("Holdings Inc.", "Group plc", "Industries Corp.", "Technologies Inc.", "Partners SA")

# (key, label) per statement, in printed order.
INCOME = (
    ("revenue", "Revenue"), ("cogs", "Cost of revenue"), ("gross_profit", "Gross profit"),
    ("rnd", "Research and development"), ("sga", "Selling, general and administrative"),
    ("dna", "Depreciation and amortization"), ("operating_income", "Operating income"),
    ("interest", "Interest expense"), ("pretax", "Income before income taxes"),
    ("tax", "Income tax expense"), ("net_income", "Net income"),
)  # fmt: skip
BALANCE = (
    ("cash", "Cash and cash equivalents"), ("receivables", "Accounts receivable"),
    ("inventory", "Inventories"), ("current_assets", "Total current assets"),
    ("ppe", "Property, plant and equipment, net"), ("goodwill", "Goodwill"),
    ("total_assets", "Total assets"), ("payables", "Accounts payable"),
    ("accrued", "Accrued liabilities"), ("current_liabilities", "Total current liabilities"),
    ("debt", "Long-term debt"), ("total_liabilities", "Total liabilities"),
    ("common_stock", "Common stock and paid-in capital"), ("retained", "Retained earnings"),
    ("total_equity", "Total equity"), ("total_le", "Total liabilities and equity"),
)  # fmt: skip
CASH_FLOW = (
    ("cf_net_income", "Net income"), ("cf_dna", "Depreciation and amortization"),
    ("cf_receivables", "Change in accounts receivable"), ("cf_inventory", "Change in inventories"),
    ("cf_payables", "Change in accounts payable"), ("cf_accrued", "Change in accrued liabilities"),
    ("cfo", "Net cash from operating activities"),
    ("capex", "Purchases of property and equipment"),
    ("cfi", "Net cash from investing activities"),
    ("debt_change", "Proceeds from (repayment of) long-term debt"),
    ("stock_issued", "Proceeds from issuance of common stock"), ("dividends", "Dividends paid"),
    ("cff", "Net cash from financing activities"), ("net_change", "Net change in cash"),
    ("cash_begin", "Cash at beginning of year"), ("cash_end", "Cash at end of year"),
)  # fmt: skip
LABELS = dict(INCOME + BALANCE + CASH_FLOW)

# total key -> signed components: total == sum(sign * component), within one year.
IDENTITIES: dict[str, tuple[tuple[int, str], ...]] = {
    "gross_profit": ((1, "revenue"), (-1, "cogs")),
    "operating_income": ((1, "gross_profit"), (-1, "rnd"), (-1, "sga"), (-1, "dna")),
    "pretax": ((1, "operating_income"), (-1, "interest")),
    "net_income": ((1, "pretax"), (-1, "tax")),
    "current_assets": ((1, "cash"), (1, "receivables"), (1, "inventory")),
    "total_assets": ((1, "current_assets"), (1, "ppe"), (1, "goodwill")),
    "current_liabilities": ((1, "payables"), (1, "accrued")),
    "total_liabilities": ((1, "current_liabilities"), (1, "debt")),
    "total_equity": ((1, "common_stock"), (1, "retained")),
    "total_le": ((1, "total_liabilities"), (1, "total_equity")),
    "cfo": tuple(
        (1, k)
        for k in (
            "cf_net_income",
            "cf_dna",
            "cf_receivables",
            "cf_inventory",
            "cf_payables",
            "cf_accrued",
        )
    ),  # fmt: skip
    "cfi": ((1, "capex"),),
    "cff": ((1, "debt_change"), (1, "stock_issued"), (1, "dividends")),
    "net_change": ((1, "cfo"), (1, "cfi"), (1, "cff")),
    "cash_end": ((1, "cash_begin"), (1, "net_change")),
}
# Figures printed twice: the copy must equal the original.
COPIES = {"cf_net_income": "net_income", "cf_dna": "dna", "cash_end": "cash", "total_le": "total_assets"}  # fmt: skip


@dataclass
class Company:
    """One company's books: `years[i]`'s figures are `books[i]` (key -> int)."""

    name: str
    years: list[int]
    segments: list[str]
    books: list[dict[str, int]]
    opening: dict[str, int]  # the balance sheet at the end of the year before years[0]

    def value(self, key: str, year: int) -> int:
        return self.books[self.years.index(year)][key]

    def prior(self, key: str, year: int) -> int:
        """`key` at the end of the year before `year` (the opening balance for the first)."""
        i = self.years.index(year)
        return self.books[i - 1][key] if i else self.opening[key]

    def segment_revenue(self, s: int, year: int) -> int:
        return self.value(f"seg_rev:{s}", year)

    def segment_income(self, s: int, year: int) -> int:
        return self.value(f"seg_oi:{s}", year)


def _share(rng: random.Random, total: int, n: int) -> list[int]:
    """`total` split into `n` positive integer parts with random weights."""
    weights = [rng.uniform(0.5, 2.0) for _ in range(n)]
    parts = [max(1, int(total * w / sum(weights))) for w in weights]
    parts[-1] = total - sum(parts[:-1])
    return parts


def build_company(rng: random.Random, n_years: int, n_segments: int) -> Company:
    """A company with `n_years` consecutive fiscal years and `n_segments` segments."""
    name = f"{rng.choice(NAME_HEADS)} {rng.choice(NAME_TAILS)}"
    first = rng.randint(2015, 2026 - n_years)
    segments = rng.sample(SEGMENT_POOL, n_segments)
    revenue = rng.randint(20_000, 900_000)

    def part(low: float, high: float, base: int | None = None) -> int:
        return int(round((revenue if base is None else base) * rng.uniform(low, high)))

    bs = {"receivables": part(0.08, 0.16), "inventory": part(0.05, 0.15), "ppe": part(0.3, 0.7),
          "goodwill": part(0.0, 0.3), "payables": part(0.05, 0.1), "accrued": part(0.02, 0.06),
          "debt": part(0.1, 0.5), "common_stock": part(0.05, 0.25), "retained": part(0.1, 0.4)}  # fmt: skip
    cash = (bs["payables"] + bs["accrued"] + bs["debt"] + bs["common_stock"] + bs["retained"]
            - bs["receivables"] - bs["inventory"] - bs["ppe"] - bs["goodwill"])  # fmt: skip
    floor = part(0.04, 0.08)
    if cash < floor:  # borrow what the opening balance sheet lacks
        bs["debt"] += floor - cash
        cash = floor
    bs["cash"] = cash
    opening = _balance_totals(bs)
    weights = [rng.uniform(0.5, 2.0) for _ in segments]
    margins = [rng.uniform(0.6, 1.4) for _ in segments]
    shares = rng.randint(5_000, 400_000)
    employees = rng.randint(300, 40_000)
    books: list[dict[str, int]] = []
    prev = opening
    for _ in range(n_years):
        revenue = max(5_000, int(round(revenue * (1 + rng.uniform(-0.12, 0.25)))))
        y: dict[str, int] = {"revenue": revenue}
        weights = [w * rng.uniform(0.8, 1.25) for w in weights]
        seg = [max(1, int(revenue * w / sum(weights))) for w in weights]
        seg[-1] = revenue - sum(seg[:-1])
        y["cogs"] = part(0.35, 0.68)
        y["gross_profit"] = revenue - y["cogs"]
        y["rnd"], y["sga"] = part(0.03, 0.12), part(0.08, 0.2)
        y["dna"] = part(0.08, 0.15, prev["ppe"])
        y["operating_income"] = y["gross_profit"] - y["rnd"] - y["sga"] - y["dna"]
        y["interest"] = part(0.03, 0.07, prev["debt"])
        y["pretax"] = y["operating_income"] - y["interest"]
        y["tax"] = int(round(y["pretax"] * rng.uniform(0.15, 0.3))) if y["pretax"] > 0 else 0
        y["net_income"] = y["pretax"] - y["tax"]
        margin = y["operating_income"] / revenue
        seg_oi = [int(round(s * (margin * m + rng.uniform(-0.02, 0.02)))) for s, m in zip(seg, margins, strict=True)]  # fmt: skip
        for i in range(n_segments):
            y[f"seg_rev:{i}"], y[f"seg_oi:{i}"] = seg[i], seg_oi[i]
        y["corp_oi"] = y["operating_income"] - sum(seg_oi)
        y["receivables"], y["inventory"] = part(0.08, 0.16), part(0.05, 0.15)
        y["payables"], y["accrued"] = part(0.05, 0.1), part(0.02, 0.06)
        capex = part(0.03, 0.1)
        y["ppe"], y["goodwill"] = prev["ppe"] + capex - y["dna"], prev["goodwill"]
        y["stock_issued"] = rng.choice((0, 0, part(0.0, 0.02)))
        y["common_stock"] = prev["common_stock"] + y["stock_issued"]
        y["dividends"] = -int(round(y["net_income"] * rng.uniform(0.0, 0.4))) if y["net_income"] > 0 else 0  # fmt: skip
        y["retained"] = prev["retained"] + y["net_income"] + y["dividends"]
        y["cf_net_income"], y["cf_dna"] = y["net_income"], y["dna"]
        y["cf_receivables"] = prev["receivables"] - y["receivables"]
        y["cf_inventory"] = prev["inventory"] - y["inventory"]
        y["cf_payables"] = y["payables"] - prev["payables"]
        y["cf_accrued"] = y["accrued"] - prev["accrued"]
        y["cfo"] = sum(y[k] for _, k in IDENTITIES["cfo"])
        y["capex"] = y["cfi"] = -capex
        change = max(-prev["debt"], part(-0.05, 0.08))
        floor = part(0.03, 0.06)
        shortfall = floor - (prev["cash"] + y["cfo"] + y["cfi"] + change + y["stock_issued"] + y["dividends"])  # fmt: skip
        y["debt_change"] = change + max(0, shortfall)  # borrow rather than run out of cash
        y["debt"] = prev["debt"] + y["debt_change"]
        y["cff"] = y["debt_change"] + y["stock_issued"] + y["dividends"]
        y["net_change"] = y["cfo"] + y["cfi"] + y["cff"]
        y["cash_begin"] = prev["cash"]
        y["cash"] = y["cash_end"] = prev["cash"] + y["net_change"]
        shares = int(round(shares * rng.uniform(0.97, 1.05)))
        employees = int(round(employees * rng.uniform(0.92, 1.15)))
        y["shares"], y["employees"] = shares, employees
        y["backlog"] = part(0.2, 1.2)
        y.update(_balance_totals(y))
        books.append(y)
        prev = y
    years = list(range(first, first + n_years))
    return Company(name, years, segments, books, opening)


def _balance_totals(bs: dict[str, int]) -> dict[str, int]:
    out = dict(bs)
    for total in ("current_assets", "total_assets", "current_liabilities", "total_liabilities",
                  "total_equity", "total_le"):  # fmt: skip
        out[total] = sum(sign * out[k] for sign, k in IDENTITIES[total])
    return out


def identity_errors(company: Company) -> list[str]:
    """Every accounting identity that fails, as a sentence; [] for consistent books."""
    errors = []
    for i, (year, y) in enumerate(zip(company.years, company.books, strict=True)):
        prev = company.books[i - 1] if i else company.opening
        checks = [(f"{t} = sum of parts", y[t], sum(s * y[k] for s, k in parts)) for t, parts in IDENTITIES.items()]  # fmt: skip
        checks += [(f"{c} copies {o}", y[c], y[o]) for c, o in COPIES.items()]
        checks += [
            ("cash rolls forward", y["cash_begin"], prev["cash"]),
            (
                "retained earnings roll forward",
                y["retained"],
                prev["retained"] + y["net_income"] + y["dividends"],
            ),  # fmt: skip
            (
                "segments sum to revenue",
                sum(y[f"seg_rev:{s}"] for s in range(len(company.segments))),
                y["revenue"],
            ),  # fmt: skip
            (
                "segment income sums to operating income",
                sum(y[f"seg_oi:{s}"] for s in range(len(company.segments))) + y["corp_oi"],
                y["operating_income"],
            ),  # fmt: skip
        ]
        errors += [f"{year}: {what} ({a} != {b})" for what, a, b in checks if a != b]
    return errors
