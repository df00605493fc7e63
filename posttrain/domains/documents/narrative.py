"""Length: distractor tables with look-alike labels and narrative sections, up to a token target.

    pad(filing, company, rng, target_tokens=8_000, fmt="markdown")
    long = long_filing(seed=0, target_tokens=200_000)   # a ~200k-token filing, well under 2 s

`pad` appends to the filing's last document until its rendering reaches about
`target_tokens` (4 characters a token): first, when `distractors` is set, a
non-GAAP reconciliation (EBITDA, adjusted EBITDA) and quarterly results for each
year — tables whose labels resemble the statements' and whose figures are
consistent with them — then narrative sections (market, risks, outlook, people)
built from sentence templates. Narrative figures are percentages, counts and
places, never statement amounts, so padding cannot change an answer.

Not guaranteed: the token count is an estimate (characters / 4), reached from
below within one section; the prose is repetitive over very long filings.
"""

from __future__ import annotations

import random

from posttrain.domains.documents.company import Company, build_company
from posttrain.domains.documents.filing import Filing, Section, Sheet, core_filing, unit_phrase
from posttrain.domains.documents.render import render_filing, render_part

CHARS_PER_TOKEN = 4
TOPICS = ("Market overview", "Risk factors", "Outlook", "Research and product development",
          "People and culture", "Sustainability", "Supply chain", "Regulatory matters",
          "Customers and channels", "Information security", "Properties", "Legal proceedings")  # fmt: skip
REGIONS = ("North America", "Western Europe", "the Nordics", "Southeast Asia", "Latin America",
           "the Middle East", "Central Europe", "Japan", "Australia and New Zealand")  # fmt: skip
TEMPLATES = (
    "Demand in {region} for {seg} offerings changed by about {pct}% compared with the prior year, according to industry estimates.",
    "Management expects the {seg} segment to remain a priority in {year}, with {n} new product introductions planned.",
    "The Company operates {n} facilities in {region}; none of them is individually material to the results of operations.",
    "A prolonged disruption at a key supplier in {region} could delay deliveries for the {seg} segment by several weeks.",
    "Customer retention in {seg} was approximately {pct}% in {year}, consistent with the Company's long-term targets.",
    "The Company completed {n} internal audits of its information systems in {year} and identified no material weaknesses.",
    "Changes in foreign exchange rates, particularly in {region}, may affect reported results of the {seg} segment.",
    "Employee engagement surveys in {year} had a participation rate of {pct}% across {n} locations.",
    "The Company is party to {n} routine legal proceedings; management does not expect them to have a material effect.",
    "Energy use per unit of output in {region} fell by {pct}% in {year} as part of the Company's efficiency program.",
    "Competition in {seg} intensified in {region}, where {n} new entrants were observed during {year}.",
    "The Board reviewed the Company's risk register {n} times during {year}, with particular focus on {seg}.",
)  # fmt: skip


def non_gaap(company: Company, rng: random.Random, unit: str) -> Sheet:
    """EBITDA and adjusted EBITDA: look-alike labels, consistent with the statements."""
    sheet = Sheet("NG", f"Reconciliation of non-GAAP measures (unaudited, {unit_phrase(unit)})", [str(y) for y in company.years])  # fmt: skip
    oi = [company.value("operating_income", y) for y in company.years]
    dna = [company.value("dna", y) for y in company.years]
    sbc = [int(round(company.value("revenue", y) * rng.uniform(0.005, 0.03))) for y in company.years]  # fmt: skip
    restructuring = [rng.choice((0, int(round(company.value("revenue", y) * 0.01)))) for y in company.years]  # fmt: skip
    ebitda = [a + b for a, b in zip(oi, dna, strict=True)]
    sheet.add("Operating income (GAAP)", "", list(oi))
    sheet.add("Add: depreciation and amortization", "", list(dna))
    sheet.add("EBITDA", "", list(ebitda))
    sheet.add("Add: share-based compensation", "", list(sbc))
    sheet.add("Add: restructuring charges", "", list(restructuring))
    sheet.add("Adjusted EBITDA", "", [a + b + c for a, b, c in zip(ebitda, sbc, restructuring, strict=True)])  # fmt: skip
    return sheet


def _quarters(rng: random.Random, total: int) -> list[int | None]:
    weights = [rng.uniform(0.8, 1.2) for _ in range(4)]
    parts: list[int] = [int(total * w / sum(weights)) for w in weights[:3]]
    return [*parts, total - sum(parts)]


def quarterly(company: Company, rng: random.Random, unit: str, year: int, index: int) -> Sheet:
    """Quarterly results of one year (unaudited): quarters sum to the annual figures."""
    sheet = Sheet(f"QR{index}", f"Quarterly results for {year} (unaudited, {unit_phrase(unit)})", ["Q1", "Q2", "Q3", "Q4"])  # fmt: skip
    for key, label in (("revenue", "Revenue"), ("gross_profit", "Gross profit"),
                       ("operating_income", "Operating income"), ("net_income", "Net income")):  # fmt: skip
        sheet.add(label, "", _quarters(rng, company.value(key, year)))
    return sheet


def narrative(company: Company, rng: random.Random, section_id: str, lines: int) -> Section:
    section = Section(section_id, rng.choice(TOPICS))
    for _ in range(lines):
        template = rng.choice(TEMPLATES)
        section.add(template.format(
            region=rng.choice(REGIONS), seg=rng.choice(company.segments),
            pct=f"{rng.randint(2, 95)}.{rng.randint(0, 9)}", n=rng.randint(2, 40),
            year=rng.choice(company.years),
        ))  # fmt: skip
    return section


def pad(filing: Filing, company: Company, rng: random.Random, target_tokens: int, fmt: str, *, distractors: bool = True) -> None:  # fmt: skip
    """Append distractor tables (when asked) and narrative until ~`target_tokens` tokens."""
    target = target_tokens * CHARS_PER_TOKEN
    length = len(render_filing(filing, fmt))
    last = filing.documents[-1]
    extra: list[Sheet] = []
    if distractors:
        extra = [non_gaap(company, rng, filing.unit)]
        extra += [quarterly(company, rng, filing.unit, y, i + 1) for i, y in enumerate(reversed(company.years))]  # fmt: skip
    number = sum(isinstance(p, Section) for p in last.parts)
    while length < target or extra:
        if extra:
            part: Sheet | Section = extra.pop(0)
        else:
            number += 1
            part = narrative(company, rng, f"M{number}", rng.randint(6, 14))
        last.parts.append(part)
        length += len(render_part(part, fmt)) + 2


def long_filing(seed: int, target_tokens: int, fmt: str = "text") -> tuple[Filing, str]:
    """A filing of about `target_tokens` tokens (for retrieval variants) and its rendering."""
    rng = random.Random(seed)
    company = build_company(rng, 5, 8)
    filing = core_filing(company, rng.choice(("thousand", "million")))
    pad(filing, company, rng, target_tokens, fmt)
    return filing, render_filing(filing, fmt)
