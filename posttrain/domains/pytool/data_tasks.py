"""`pytool` domains over generated data: a long number list, a large CSV, a large log.

- `pytool/list-stats-v1` (text, numeric): one statistic (the mean of the values above
  a threshold, the population standard deviation, or the median of the values at
  even positions) of a list of 40 + 60·d integers given in the prompt, to 2 decimals.
- `pytool/csv-aggregate-v1` (table, exact): an integer aggregate (a revenue total in
  cents for one region, or the count of large orders of one product) over
  `orders.csv`, 120·d + 40 rows, laid out in the sandbox workspace.
- `pytool/log-filter-v1` (text, set_match): every request id of `server.log` (100·d
  lines) whose line matches a three-field rule (service, 5xx status, latency above a
  bound), as a comma-separated set.

Every answer is computed here, exactly, at generation time; the reference program
prints it. Not guaranteed: the decimal answer is judged to within 0.01, so a value
rounded another way still passes; the log rule always has 2 or more matches (lines
are forced to match when too few do), so the count of matches says little.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.pytool.tool import Problem, PytoolDomain

_SERVICES = ("auth", "billing", "search", "upload", "report")
_LEVELS = ("INFO", "WARN", "ERROR")
_REGIONS = ("north", "south", "east", "west", "central")
_PRODUCTS = ("anvil", "bracket", "cable", "dowel", "gasket", "hinge", "lever", "nozzle")


class ListStatsDomain(PytoolDomain):
    """A statistic of a long integer list given in the prompt."""

    id = "pytool/list-stats-v1"
    axes = Axes("text", "python", "multi", "numeric")
    kind = "decimal"
    what = "the statistic to 2 decimals"

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 40 + 60 * difficulty
        values = [rng.randint(100, 999) for _ in range(n)]
        question = rng.choice(("mean_above", "pstdev", "median_even"))
        listing = "[" + ", ".join(map(str, values)) + "]"
        if question == "mean_above":
            threshold = sorted(values)[n // 3]
            picked = [v for v in values if v > threshold]
            value = sum(picked) / len(picked)
            asked = f"the mean of the numbers strictly greater than {threshold}"
            expr = f"[v for v in xs if v > {threshold}]\nprint(f'{{sum(p) / len(p):.2f}}')"
            code = f"xs = {listing}\np = {expr}\n"
        elif question == "pstdev":
            value = statistics.pstdev(values)
            asked = "the population standard deviation (divide by n, not n - 1) of the numbers"
            code = f"import statistics\nxs = {listing}\nprint(f'{{statistics.pstdev(xs):.2f}}')\n"
        else:
            value = float(statistics.median(values[0::2]))
            asked = "the median of the numbers at even positions (the 1st, 3rd, 5th, ...)"
            code = f"import statistics\nxs = {listing}\nprint(f'{{statistics.median(xs[0::2]):.2f}}')\n"  # fmt: skip
        prompt = (
            f"Here is a list of {n} integers:\n{listing}\n\n"
            f"Compute {asked}. Answer with the number alone, rounded to 2 decimals "
            "(for example 512.37)."
        )
        return Problem(
            prompt=prompt,
            answer=f"{value:.2f}",
            code=code,
            measure=float(n),
            near_misses=[f"{value + 1:.2f}", f"{value - 1:.2f}", f"{value + 0.05:.2f}"],
            meta={"question": question, "count": n},
        )


class CsvAggregateDomain(PytoolDomain):
    """An integer aggregate over a large CSV file in the sandbox workspace."""

    id = "pytool/csv-aggregate-v1"
    axes = Axes("table", "python", "multi", "exact")
    kind = "integer"
    what = "the integer aggregate"

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 40 + 120 * difficulty
        draw = rng.random  # one float per field, as randint would make d=10 slow
        rows = [
            (100000 + i, _REGIONS[int(draw() * 5)], _PRODUCTS[int(draw() * 8)],
             1 + int(draw() * 40), 99 + int(draw() * 9901))
            for i in range(n)
        ]  # fmt: skip
        lines = ["order_id,region,product,quantity,unit_price_cents"]
        lines += [",".join(map(str, row)) for row in rows]
        region, product = rng.choice(_REGIONS), rng.choice(_PRODUCTS)
        low = rng.randint(10, 30)
        reader = "import csv\nrows = list(csv.DictReader(open('orders.csv')))\n"
        if rng.random() < 0.5:
            value = sum(q * p for _, r, _, q, p in rows if r == region)
            asked = (
                f"the total revenue in cents of the orders in region {region!r}: the sum of "
                "quantity × unit_price_cents over those rows"
            )
            code = reader + (
                f"print(sum(int(r['quantity']) * int(r['unit_price_cents']) "
                f"for r in rows if r['region'] == {region!r}))\n"
            )
        else:
            value = sum(1 for _, _, pr, q, _ in rows if pr == product and q >= low)
            asked = f"how many orders are for product {product!r} with quantity at least {low}"
            code = reader + (
                f"print(sum(1 for r in rows if r['product'] == {product!r} "
                f"and int(r['quantity']) >= {low}))\n"
            )
        prompt = (
            f"The file orders.csv in your workspace holds {n} orders, one per row, with the "
            "header order_id,region,product,quantity,unit_price_cents. "
            f"Compute {asked}. Answer with the integer alone."
        )
        return Problem(
            prompt=prompt,
            answer=str(value),
            code=code,
            measure=float(n),
            near_misses=[str(value + 1), str(value - 1), str(value * 10)],
            files={"orders.csv": "\n".join(lines) + "\n"},
            meta={"rows": n},
        )


class LogFilterDomain(PytoolDomain):
    """Every request id of a large log whose line matches a three-field rule."""

    id = "pytool/log-filter-v1"
    axes = Axes("text", "python", "multi", "set_match")
    kind = "ids"
    what = "exactly the matching request ids"

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 100 * difficulty
        ids = rng.sample(range(10000, 100000), n)
        service = rng.choice(_SERVICES)
        bound = rng.choice((500, 800, 1200))
        draw = rng.random  # one float per field: randint would make d=10 take ~40 ms
        records = []
        for i in range(n):
            bad = draw() < 0.12
            status = (500, 502, 503)[int(draw() * 3)] if bad else (200, 201, 204, 301, 404)[int(draw() * 5)]  # fmt: skip
            second = int(draw() * 86400)
            stamp = f"2024-03-{1 + i * 28 // n:02d}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"  # fmt: skip
            records.append(
                [stamp, _LEVELS[int(draw() * 3)], _SERVICES[int(draw() * 5)],
                 f"u{1 + int(draw() * 300):03d}", status, 5 + int(draw() * 1996), f"R{ids[i]}"]
            )  # fmt: skip

        def matches(r: list[Any]) -> bool:
            return bool(r[2] == service and 500 <= r[4] <= 599 and r[5] > bound)

        for i in rng.sample(range(n), 3):
            if sum(map(matches, records)) >= 2:
                break
            records[i][2], records[i][4], records[i][5] = service, 503, bound + rng.randint(1, 700)
        lines = [
            f"{r[0]} {r[1]} service={r[2]} user={r[3]} status={r[4]} latency_ms={r[5]} req={r[6]}"
            for r in records
        ]
        found = sorted(str(r[6]) for r in records if matches(r))
        near = next(str(r[6]) for r in records if not matches(r))
        code = (
            "import re\nout = []\nfor line in open('server.log'):\n"
            "    f = dict(re.findall(r'(\\w+)=(\\S+)', line))\n"
            f"    if f['service'] == {service!r} and 500 <= int(f['status']) <= 599 "
            f"and int(f['latency_ms']) > {bound}:\n        out.append(f['req'])\n"
            "print(', '.join(sorted(out)))\n"
        )
        prompt = (
            f"The file server.log in your workspace holds {n} log lines like\n{lines[0]}\n"
            f"Find every line whose service is {service}, whose status is a 5xx code (500 to "
            f"599) and whose latency_ms is greater than {bound}. Answer with the req ids of "
            "those lines, comma-separated (for example: R12345, R67890), in any order, "
            "each once, and nothing else."
        )
        return Problem(
            prompt=prompt,
            answer=", ".join(found),
            code=code,
            measure=float(n),
            near_misses=[
                ", ".join(found[:-1]),
                ", ".join([*found, near]),
                ", ".join([*found[1:], near]),
            ],  # fmt: skip
            files={"server.log": "\n".join(lines) + "\n"},
            meta={"lines": n, "matches": len(found)},
        )


DOMAINS = (ListStatsDomain(), CsvAggregateDomain(), LogFilterDomain())
