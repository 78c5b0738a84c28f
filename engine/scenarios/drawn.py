"""One value of a hypothesis strategy, drawn reproducibly: the last resort of argument building
(``from_type``) and of text for a regular expression (``from_regex``)."""

from __future__ import annotations

import warnings
from typing import Any


def draw_one(strategy: Any, seed: int) -> Any:
    """One value of a hypothesis strategy, drawn reproducibly (seeded); LookupError when it
    drew none, the strategy's own error when it cannot draw."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    drawn: list[Any] = []

    @seeded(seed)
    @settings(
        max_examples=1,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(value: Any) -> None:
        drawn.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SmallSearchSpaceWarning: one value is all we want
        draw()
    if not drawn:
        raise LookupError("hypothesis drew no value")
    return drawn[0]
