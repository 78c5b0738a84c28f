"""A fake clock for the timing pass: tests move time by hand, so no test races a real timer."""

from __future__ import annotations

import pytest

from apiprof.engine.measure import timing


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The timing pass's clock, replaced by one that moves only when the test moves it."""
    fake = FakeClock()
    monkeypatch.setattr(timing, "_clock", fake)
    return fake
