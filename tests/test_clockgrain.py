"""Clock steps and dither: medians of readings on a coarse clock are not pinned to its steps,
and reading the CPU clock does not make a call's CPU figure exceed its wall figure."""

from __future__ import annotations

import random
import statistics

import groundtruth_pkg as gt

from apiprof.engine.measure.clockgrain import Dither, clock_step
from apiprof.engine.measure.costs import measure_calls
from apiprof.engine.measure.passlog import PassLog
from apiprof.engine.measure.probes import PySite, Record


class SteppedClock:
    """A fake nanosecond clock that advances in ``step``-ns steps at a random phase."""

    def __init__(self, step: int) -> None:
        self.step, self.now, self.random = step, 1_000_003, random.Random(5)

    def __call__(self) -> int:
        self.now += 20 + self.random.randrange(200)
        return self.now // self.step * self.step


def test_the_step_of_a_coarse_clock_is_found():
    assert clock_step(SteppedClock(10)) == 10
    assert clock_step(SteppedClock(7)) == 7
    assert clock_step(SteppedClock(1)) == 1


def test_a_fine_clock_gets_no_dither():
    assert {Dither(1)() for _ in range(10)} == {0.0}
    dither = Dither(10, seed=3)
    offsets = [dither() for _ in range(4000)]
    assert min(offsets) >= -5 and max(offsets) < 5
    assert abs(statistics.mean(offsets)) < 0.3


def _pass(true_ns: float, step: int, sampled_extra: float = 0.0, calls: int = 4000) -> PassLog:
    """Records of ``calls`` sequential calls of ``true_ns`` each (plus ``sampled_extra`` for
    every 8th call, which reads the CPU clock), read on clocks with ``step``-ns steps."""
    rng = random.Random(11)
    enters, exits = Record(), Record()
    now = 0.0
    for k in range(calls):
        now += 1_000 + rng.random() * 1_000
        sampled = k % 8 == 0
        length = true_ns + (sampled_extra if sampled else 0.0)
        start, end = now, now + length
        on_grid = [int(t // step * step) for t in (start, end)]
        enters += [on_grid[0] if sampled else -1, on_grid[0]]
        exits += [on_grid[1], on_grid[1] if sampled else -1]
        now = end
    log = PassLog([PySite(gt.leaf)], [enters], [exits], runs=1)
    log.clock_steps = (step, step)
    return log


def test_medians_on_a_10ns_clock_are_not_pinned_to_its_steps():
    (costs,) = measure_calls(_pass(104.0, 10), {}, {})
    assert abs(statistics.median(costs.wall_ns) - 104.0) < 2.0  # 100 or 110 undithered
    log = _pass(104.0, 10)
    log.clock_steps = (1, 1)  # as if the clock were fine: the median sits on a step
    (undithered,) = measure_calls(log, {}, {})
    assert statistics.median(undithered.wall_ns) in (100.0, 110.0)


def test_the_cost_of_reading_the_cpu_clock_is_taken_off_sampled_calls():
    # the CPU clock's system call leaves sampled calls 15 ns slower (wall and CPU alike)
    (costs,) = measure_calls(_pass(100.0, 1, sampled_extra=15.0), {}, {})
    assert len(costs.cpu_ns) == 500
    assert statistics.median(costs.cpu_ns) == statistics.median(costs.wall_ns) == 100.0
    assert max(costs.wall_ns) == 100.0
