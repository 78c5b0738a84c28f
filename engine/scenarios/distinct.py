"""Items an error says must not repeat: ``Order list must not contain duplicates``, ``names
must be unique``.

Made-up words are drawn from a small vocabulary, so a list of them repeats some; a function
that takes a list of keys, fields or names to order by refuses that. The argument holding
repeated items becomes a list of as many distinct ones, of the same kind (texts or numbers).
"""

from __future__ import annotations

import random
import re
from collections.abc import Hashable, Mapping

from apiprof.engine.scenarios.building import BuildContext
from apiprof.engine.scenarios.texts import WORDS

_REPEATS = re.compile(
    r"duplicat|not unique|must be unique|repeated|(?:appears?|occurs?|given) (?:more than once|"
    r"twice)",
    re.IGNORECASE,
)
"""What an error about repeated items says."""


class DistinctTexts:
    """Annotation marker: a list of n different words."""


class DistinctNumbers:
    """Annotation marker: a list of n different numbers."""


DISTINCT_KINDS: dict[str, type] = {
    "distinct texts": DistinctTexts,
    "distinct numbers": DistinctNumbers,
}
"""The names lessons carry (a :class:`~.wants.Want` ``TYPE``), and the markers they build."""


def says_repeated(message: str) -> bool:
    """Whether the message is about items that repeat."""
    return _REPEATS.search(message) is not None


def repeated_items(message: str, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``(parameter, kind)``: the argument (a list or tuple) whose items repeat, when the
    message is about repeated items, and the kind of distinct items it wants instead."""
    if not says_repeated(message):
        return None
    for name, value in bound.items():
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, Hashable) for v in value):
            continue
        if len(set(value)) == len(value):
            continue
        if all(isinstance(item, str) for item in value):
            return name, "distinct texts"
        if all(isinstance(item, int) and not isinstance(item, bool) for item in value):
            return name, "distinct numbers"
    return None


def distinct_texts(context: BuildContext, name: str, rng: random.Random) -> list[str]:
    """n different words (numbered: the vocabulary is small)."""
    context.sized = True
    return [f"{rng.choice(WORDS)}{i}" for i in range(context.n)]


def distinct_numbers(context: BuildContext, name: str, rng: random.Random) -> list[int]:
    """n different numbers."""
    context.sized = True
    return rng.sample(range(1, context.n * 10 + 1), context.n)
