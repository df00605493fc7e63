"""The word bank the `text/*` domains build their inputs from, and ways to draw from it.

    words = draw_words(rng, 5)          # five distinct common English words
    word = random_letters(rng, 6)       # six random lowercase letters

Every word is lowercase ASCII letters and holds at least one of a, e, i, o, u, so rules
stated in terms of vowels (pig latin, vowel counts) always apply.

Not guaranteed: the bank is small (about 200 words); tasks that need many distinct
words at once (more than `len(WORDS)`) cannot be drawn from it.
"""

from __future__ import annotations

import random
import string

_BANK = """
    apple river stone cloud garden window paper orange table silver music forest
    bridge candle doctor engine farmer guitar hammer island jacket kitten ladder
    marble needle ocean pencil rabbit saddle tomato umbrella valley wagon yellow zebra
    anchor basket camera dragon eagle falcon ginger harbor insect jungle kettle lemon
    mirror number office parrot quiet rocket summer tunnel violin winter answer
    bottle castle danger energy flower goose honey idea joke king lamp moon nest
    owl piano queen road sand tree unit voice water yard zone actor blanket
    cactus desert elbow fabric glacier helmet igloo jewel koala lantern meadow
    nickel oyster pepper quilt ribbon shadow ticket uncle velvet walrus
    boat cat dog fish game hat ink jam kite leaf map nut pie rain sun
    top van wind box cup egg fan gum hen ice jar key log mud oak pen rug
    sea toy web art bee car dot ear fox gas hill iron milk nose pond ring
    salt tent vase wolf bread chair dance earth field grape house juice
    light mouse night plant quest radio smile train urban video wheat
    about after again below could every first great heavy large never
    other place right small their under where while young alone begin
    carry eight often sugar today
"""
WORDS: tuple[str, ...] = tuple(_BANK.split())


def draw_words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct words from the bank, in random order."""
    return rng.sample(WORDS, count)


def random_letters(rng: random.Random, count: int, alphabet: str = string.ascii_lowercase) -> str:
    """`count` letters drawn independently from `alphabet`."""
    return "".join(rng.choice(alphabet) for _ in range(count))
