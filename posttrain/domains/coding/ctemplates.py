"""C program templates, each with a Python twin that computes its exact output on the host.

A `CTemplate` is one C program (`argv` in, text on stdout, an exit code) and `model`,
Python source defining `run(args) -> [stdout, exit_code]` that mirrors it line for line.
A `CSite` injects the same bug into both (`c_old -> c_new`, `py_old -> py_new`), so the
generator knows every case's buggy and correct output without compiling anything.

Not guaranteed: the twins agree with gcc-compiled C on the generated inputs only (small
integers, ASCII words); `tests/domains/coding/test_ctemplates.py` compiles every site and
compares.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from posttrain.domains.coding.templates import WORDS, Args


@dataclass(frozen=True)
class CSite:
    kind: str
    c_old: str
    c_new: str
    py_old: str
    py_new: str
    subtlety: int


@dataclass(frozen=True)
class CTemplate:
    name: str
    topic: str
    source: str
    model: str
    args: Args
    sites: tuple[CSite, ...]


NUMSTAT = CTemplate(
    "numstat", "summary statistics of integers given as arguments",
    r'''/* numstat N...: count, min, max, sum and mean of the integer arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(int argc, char **argv, long *out) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        out[n++] = strtol(argv[i], NULL, 10);
    }
    return n;
}

int main(int argc, char **argv) {
    long values[64];
    int n = parse(argc, argv, values);
    if (n == 0) {
        printf("no numbers\n");
        return 1;
    }
    long lo = values[0], hi = values[0], sum = 0;
    for (int i = 0; i < n; i++) {
        if (values[i] < lo) lo = values[i];
        if (values[i] > hi) hi = values[i];
        sum += values[i];
    }
    printf("count %d\n", n);
    printf("min %ld max %ld\n", lo, hi);
    printf("sum %ld\n", sum);
    printf("mean %.2f\n", (double)sum / n);
    return 0;
}
''',
    '''
def run(args):
    values = [int(a) for a in args]
    if not values:
        return ["no numbers\\n", 1]
    lo = hi = values[0]
    total = 0
    for v in values:
        if v < lo:
            lo = v
        if v > hi:
            hi = v
        total += v
    mean = total / len(values)
    return [f"count {len(values)}\\nmin {lo} max {hi}\\nsum {total}\\nmean {mean:.2f}\\n", 0]
''',
    lambda rng, n: [str(rng.randint(-20, 50)) for _ in range(rng.choice([0, rng.randint(1, n + 2), rng.randint(1, n + 2)]))],
    (
        CSite("off_by_one", "for (int i = 1; i < argc; i++) {", "for (int i = 2; i < argc; i++) {",
              "values = [int(a) for a in args]", "values = [int(a) for a in args[1:]]", 1),
        CSite("wrong_operator", "if (values[i] > hi) hi = values[i];", "if (values[i] < hi) hi = values[i];",
              "        if v > hi:\n", "        if v < hi:\n", 1),
        CSite("wrong_operator", "(double)sum / n)", "(double)(sum / n))",
              "mean = total / len(values)", "mean = float(int(total / len(values)))", 2),
        CSite("wrong_value", 'printf("count %d\\n", n);', 'printf("count %d\\n", argc);',
              "count {len(values)}", "count {len(values) + 1}", 1),
        CSite("missing_step", "        if (values[i] < lo) lo = values[i];\n", "",
              "        if v < lo:\n            lo = v\n", "", 2),
    ),
)  # fmt: skip


def _caesar_args(rng: random.Random, n: int) -> list[str]:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, n + 1))]
    words = [w.capitalize() if rng.random() < 0.4 else w for w in words]
    words = [w + "!" if rng.random() < 0.2 else w for w in words]
    return [str(rng.randint(-30, 30)), *words]


CAESAR = CTemplate(
    "caesar", "a Caesar cipher for the words given as arguments",
    r'''/* caesar K WORD...: each word with its letters shifted K places (K may be negative). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

static char shift_char(char c, int k) {
    if (islower((unsigned char)c)) {
        return (char)('a' + ((c - 'a' + k) % 26 + 26) % 26);
    }
    if (isupper((unsigned char)c)) {
        return (char)('A' + ((c - 'A' + k) % 26 + 26) % 26);
    }
    return c;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: caesar K WORD...\n");
        return 2;
    }
    int k = atoi(argv[1]);
    for (int i = 2; i < argc; i++) {
        for (char *p = argv[i]; *p; p++) {
            putchar(shift_char(*p, k));
        }
        putchar(i + 1 < argc ? ' ' : '\n');
    }
    return 0;
}
''',
    '''
def _cmod(a, b):
    return a - b * int(a / b)


def shift_char(c, k):
    if "a" <= c <= "z":
        return chr(ord("a") + _cmod(_cmod(ord(c) - ord("a") + k, 26) + 26, 26))
    if "A" <= c <= "Z":
        return chr(ord("A") + _cmod(_cmod(ord(c) - ord("A") + k, 26) + 26, 26))
    return c


def run(args):
    if len(args) < 1:
        return ["", 2]
    k = int(args[0])
    words = args[1:]
    out = ""
    for i, w in enumerate(words):
        out += "".join(shift_char(c, k) for c in w)
        out += " " if i + 1 < len(words) else "\\n"
    return [out, 0]
''',
    _caesar_args,
    (
        CSite("missing_edge_case", "('a' + ((c - 'a' + k) % 26 + 26) % 26)", "('a' + (c - 'a' + k) % 26)",
              '_cmod(_cmod(ord(c) - ord("a") + k, 26) + 26, 26)', '_cmod(ord(c) - ord("a") + k, 26)', 2),
        CSite("wrong_branch", "if (isupper((unsigned char)c)) {", "if (0) {", 'if "A" <= c <= "Z":', "if False:", 1),
        CSite("off_by_one", "for (int i = 2; i < argc; i++) {", "for (int i = 3; i < argc; i++) {",
              "words = args[1:]", "words = args[2:]", 1),
        CSite("wrong_branch", "putchar(i + 1 < argc ? ' ' : '\\n');", "putchar(i + 1 < argc ? '\\n' : ' ');",
              'out += " " if i + 1 < len(words) else "\\n"', 'out += "\\n" if i + 1 < len(words) else " "', 2),
    ),
)  # fmt: skip

C_TEMPLATES: tuple[CTemplate, ...] = (NUMSTAT, CAESAR)
