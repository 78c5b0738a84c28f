"""Made-up text of a given length for synthesised arguments: words, identifiers, a JSON list,
digits. Seeded by the caller, so a scenario's input is the same on every run."""

from __future__ import annotations

import random

WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
]


def random_text(rng: random.Random, n: int) -> str:
    """Words of lorem ipsum, ``n`` characters long."""
    words: list[str] = []
    length = 0
    while length < n:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:n]


def random_word(rng: random.Random) -> str:
    """An identifier-like word (``loremdolor``): not sized, since names do not grow with n."""
    return rng.choice(WORDS) + rng.choice(WORDS)


def json_list_text(rng: random.Random, n: int) -> str:
    """A JSON list of ``n`` small integers."""
    return "[" + ", ".join(str(rng.randint(0, 999)) for _ in range(n)) + "]"


def random_digits(rng: random.Random, n: int) -> str:
    """A number written with ``n`` digits (no leading zero)."""
    return str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(max(n - 1, 0)))
