"""Cited extraction: every field comes with a verbatim quote from the document.
`extract/lease-cited-v2`, `extract/incident-report-cited-v2`, `extract/acquisition-cited-v2`.

The answer gives each field as `{"value": ..., "quote": ...}`; `CitedDomain` (in
`record.py`) scores a field 1 only when the value matches and the quote (≤ 100
characters) occurs verbatim within one line of the document and contains one of the
field's surfaces — the distinctive way the document writes that value ("12 months",
"1,850.00", "3rd of March 2024") — plus at least two other words of the line (or the
whole line), so the bare value is no quote. What difficulty adds, per domain:

- lease: a late fee and a pet deposit beside the rent and the deposit, the signing
  date beside the start date, terms in words ("twelve (12) months");
- incident report: the filing date, a witness, the first-aider and the return-to-work
  date, and an earlier incident in the same place;
- acquisition press release: the target's revenue and last funding round beside the
  price, the target's CEO beside the acquirer's, a founding year, prices in billions.

`measure` counts the values the document holds (gold values plus distractors); it
depends only on difficulty.

Not guaranteed: a quote that holds a surface and two other words of an unrelated
sentence still counts; the pools of names, places and injuries are small.
"""

from __future__ import annotations

import random

from posttrain.domains.extract import documents as d
from posttrain.domains.extract.record import CitedDomain, Doc, Field

NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
           "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
           "eighteen", "nineteen", "twenty", "twenty-one", "twenty-two", "twenty-three",
           "twenty-four")  # fmt: skip
PLACES = ("loading dock B", "the second-floor stairwell", "warehouse aisle 14", "the staff kitchen",
          "the north car park", "packing line 3")  # fmt: skip
INJURIES = ("left wrist", "right ankle", "lower back", "right hand", "left knee", "shoulder")
CAUSES = ("slipped on a wet floor", "tripped over a loose cable", "was struck by a falling box",
          "lost footing on a ladder")  # fmt: skip
SECTORS = ("payments software", "cold-chain logistics", "medical imaging", "solar inverters",
           "cybersecurity", "industrial sensors")  # fmt: skip
QUARTERS = ("first", "second", "third", "fourth")


def _money(amount: float) -> str:
    return f"{amount:,.2f}"


class LeaseCited(CitedDomain):
    """A residential lease: parties, premises, term, rent, deposit and notice, each quoted."""

    id = "extract/lease-cited-v2"
    kind = "lease agreement"
    fields = (
        Field("landlord", "text", "the landlord's name"),
        Field("tenant", "text", "the tenant's name"),
        Field("property_street", "text", "the street address of the premises (number and street)"),
        Field("start_date", "date", "the first day of the lease"),
        Field("term_months", "integer", "the length of the lease in months"),
        Field("monthly_rent", "number", "the monthly rent"),
        Field("security_deposit", "number", "the security deposit"),
        Field("notice_days", "integer", "days of written notice needed to end the lease"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        landlord, tenant = d.people(rng, 2)
        home = d.address(rng)
        signed = d.day(rng)
        start = d.shifted(signed, rng.randint(5, 40))
        style = rng.choice(d.date_styles(difficulty))
        term = rng.choice((6, 12, 18, 24))
        rent = float(rng.randint(18, 60) * 50)
        deposit, pet = rent * rng.choice((1, 1.5, 2)), float(rng.randint(2, 6) * 50)
        fee, notice = float(rng.randint(5, 15) * 5), rng.choice((30, 45, 60, 90))
        sign = rng.choice(d.money_styles(difficulty))
        term_text = f"{term} months" if difficulty < 6 else f"{NUMBERS[term]} ({term}) months"
        lines = ["RESIDENTIAL LEASE AGREEMENT", ""]
        if difficulty >= 4:
            lines.append(f"This Lease is made on {d.date_text(signed, style)} between {landlord} "
                         f'("Landlord") and {tenant} ("Tenant").')  # fmt: skip
        else:
            lines.append(
                f'This Lease is made between {landlord} ("Landlord") and {tenant} ("Tenant").'
            )
        lines += ["", f"1. Premises. The Landlord leases to the Tenant the home at {home.one_line()}.",
                  f"2. Term. The lease begins on {d.date_text(start, style)} and runs for {term_text}.",
                  f"3. Rent. The Tenant shall pay {d.money_text(rent, sign)} per month, due on the first day of each month."]  # fmt: skip
        distractors: dict[str, object] = {"security_deposit": rent if deposit != rent else deposit + 100}  # fmt: skip
        if difficulty >= 3:
            lines.append(
                f"   A late fee of {d.money_text(fee, sign)} applies to rent paid after the fifth day."
            )
            distractors = {"monthly_rent": fee, **distractors}
        lines.append(
            f"4. Deposit. A security deposit of {d.money_text(deposit, sign)} is due at signing."
        )
        if difficulty >= 5:
            lines.append(
                f"   A separate pet deposit of {d.money_text(pet, sign)} is due if a pet lives at the home."
            )
            distractors["security_deposit"] = pet
        lines.append(
            f"5. Notice. Either party may end this Lease with {notice} days' written notice."
        )
        lines += [
            "",
            *d.filler(rng, difficulty // 3),
            "",
            f"Landlord: {landlord}",
            f"Tenant: {tenant}",
        ]
        gold = {"landlord": landlord, "tenant": tenant, "property_street": home.street,
                "start_date": d.iso(start), "term_months": term, "monthly_rent": rent,
                "security_deposit": deposit, "notice_days": notice}  # fmt: skip
        surfaces = {"landlord": [landlord], "tenant": [tenant], "property_street": [home.street],
                    "start_date": [d.date_text(start, style)], "term_months": [term_text],
                    "monthly_rent": [f"pay {d.money_text(rent, sign)}", _money(rent)],
                    "security_deposit": [f"deposit of {d.money_text(deposit, sign)}", _money(deposit)],
                    "notice_days": [f"{notice} days"]}  # fmt: skip
        measure = 8 + (difficulty >= 3) + (difficulty >= 4) + (difficulty >= 5) + difficulty // 3
        return Doc("\n".join(lines), gold, measure, distractors, surfaces)


class IncidentReportCited(CitedDomain):
    """A workplace incident report: what happened, when, where, to whom, each quoted."""

    id = "extract/incident-report-cited-v2"
    kind = "incident report"
    fields = (
        Field("report_number", "code", "the report's number"),
        Field("incident_date", "date", "the day the incident happened"),
        Field("incident_time", "time", "the time it happened"),
        Field("location", "text", "where it happened, as written"),
        Field("injured_person", "text", "who was injured"),
        Field("injury", "text", "the injured body part, as written"),
        Field("reported_by", "text", "who filed the report"),
        Field("days_off_work", "integer", "how many days the injured person was off work"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        injured, reporter, witness, aider = d.people(rng, 4)
        number = f"IR-{rng.randint(1000, 9999)}"
        place, part, cause = rng.choice(PLACES), rng.choice(INJURIES), rng.choice(CAUSES)
        when = d.day(rng)
        hour, minute = rng.randint(6, 21), rng.randint(0, 59)
        days_off = rng.randint(1, 14)
        back = d.shifted(when, days_off + 1)
        style, tstyle = rng.choice(d.date_styles(difficulty)), rng.choice(d.time_styles(difficulty))
        time_shown = d.time_text(hour, minute, tstyle)
        days_text = (
            f"{days_off} days" if difficulty < 6 else f"{NUMBERS[days_off]} ({days_off}) days"
        )
        lines = [f"INCIDENT REPORT {number}", f"Filed by: {reporter}, Health and Safety Officer"]
        distractors: dict[str, object] = {"reported_by": injured}
        if difficulty >= 3:
            filed = d.shifted(when, rng.randint(1, 3))
            lines.append(f"Filed on: {d.date_text(filed, style)}")
            distractors = {"incident_date": d.iso(filed), **distractors}
        lines += ["", f"On {d.date_text(when, style)} at about {time_shown}, {injured} {cause} in {place} "
                  f"and injured their {part}."]  # fmt: skip
        if difficulty >= 4:
            lines.append(f"The incident was seen by {witness}, who called for help.")
            distractors["injured_person"] = witness
        if difficulty >= 5:
            lines.append(f"First aid was given at the scene by {aider}.")
        lines.append(
            f"{injured} was off work for {days_text} and returned on {d.date_text(back, style)}."
        )
        if difficulty >= 7:
            earlier = d.shifted(when, -rng.randint(30, 200))
            old_number = f"IR-{rng.randint(1000, 9999)}"
            lines.append(f"An earlier incident ({old_number}) was recorded in {place} "
                         f"on {d.date_text(earlier, style)}; the floor has since been resurfaced.")  # fmt: skip
            distractors = {"report_number": old_number, **distractors}
        lines += ["", *d.filler(rng, difficulty // 4)]
        gold = {"report_number": number, "incident_date": d.iso(when),
                "incident_time": d.clock(hour, minute), "location": place, "injured_person": injured,
                "injury": part, "reported_by": reporter, "days_off_work": days_off}  # fmt: skip
        surfaces = {"report_number": [number], "incident_date": [d.date_text(when, style)],
                    "incident_time": [time_shown], "location": [place], "injured_person": [injured],
                    "injury": [part], "reported_by": [reporter], "days_off_work": [days_text]}  # fmt: skip
        measure = (
            9 + (difficulty >= 3) + (difficulty >= 4) + (difficulty >= 5) + 3 * (difficulty >= 7)
        )
        return Doc("\n".join(lines), gold, measure, distractors, surfaces)


def _price_text(millions: int, difficulty: int) -> str:
    if millions >= 1000 and difficulty >= 4:
        return f"{millions / 1000:g} billion"
    return f"{millions:,} million"


class AcquisitionCited(CitedDomain):
    """An acquisition press release: who buys whom, for how much, when, each quoted."""

    id = "extract/acquisition-cited-v2"
    kind = "press release"
    fields = (
        Field("acquirer", "text", "the company buying"),
        Field("target", "text", "the company being bought"),
        Field("price_millions", "number", "the purchase price in millions of US dollars (e.g. 1.2 billion -> 1200)"),  # fmt: skip
        Field("announcement_date", "date", "the date of the announcement (the dateline)"),
        Field("expected_close", "code", "when the deal is expected to close, as Q<n> YYYY (e.g. Q3 2025)"),
        Field("acquirer_ceo", "text", "the acquirer's chief executive"),
        Field("target_employees", "integer", "how many people the target employs"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        buyer, seller = d.companies(rng, 2)
        ceo, founder = d.people(rng, 2)
        place = d.address(rng)
        when = d.day(rng)
        style = rng.choice(d.date_styles(difficulty))
        price = rng.randint(12, 480) * 5
        revenue, funding = rng.randint(20, 400), rng.randint(5, 120)
        staff = rng.randint(40, 4000)
        quarter, year = rng.randint(1, 4), when.year + rng.choice((0, 1))
        close = f"{QUARTERS[quarter - 1]} quarter of {year}"
        price_text = _price_text(price, difficulty)
        lines = [f"{buyer} to acquire {seller}", "",
                 f"{place.city.upper()}, {d.date_text(when, style)} - {buyer} today announced an "
                 f"agreement to acquire {seller}, a maker of {rng.choice(SECTORS)} products, for "
                 f"${price_text} in cash."]  # fmt: skip
        distractors: dict[str, object] = {"target": buyer}
        if difficulty >= 3:
            lines.append(f"{seller} reported ${revenue} million in revenue last year.")
            distractors = {"price_millions": revenue, **distractors}
        if difficulty >= 5:
            lines.append(f"The company last raised ${funding} million in 2021 and was founded in {rng.randint(1990, 2015)}.")  # fmt: skip
        lines.append(f"{seller} employs {staff:,} people, who will join {buyer}.")
        lines += ["", f'"This brings us a superb team," said {ceo}, chief executive of {buyer}.']
        if difficulty >= 4:
            lines.append(
                f'"We are proud to join {buyer}," said {founder}, chief executive of {seller.rstrip(".")}.'
            )
            distractors["acquirer_ceo"] = founder
        lines += ["", f"The deal is expected to close in the {close}, subject to regulatory approval.",
                  *d.filler(rng, difficulty // 4)]  # fmt: skip
        gold = {"acquirer": buyer, "target": seller, "price_millions": price,
                "announcement_date": d.iso(when), "expected_close": f"Q{quarter} {year}",
                "acquirer_ceo": ceo, "target_employees": staff}  # fmt: skip
        surfaces = {"acquirer": [buyer], "target": [seller], "price_millions": [price_text],
                    "announcement_date": [d.date_text(when, style)], "expected_close": [close],
                    "acquirer_ceo": [ceo], "target_employees": [f"{staff:,} people"]}  # fmt: skip
        measure = (
            7 + (difficulty >= 3) + (difficulty >= 4) + 2 * (difficulty >= 5) + difficulty // 4
        )
        return Doc("\n".join(lines), gold, measure, distractors, surfaces)


DOMAINS = (LeaseCited(), IncidentReportCited(), AcquisitionCited())
