"""When a time limit leaves no room for one more round, or one more replay, of the allowance loop of plans that
hold (MODEL §11, :class:`drivers.hold.HoldingPlanner`): asked before each round starts, and by the round's
replays before each one starts (:meth:`drivers.replays.ReplayCache.replays`)."""

from __future__ import annotations

import time

from trainground.solver.stopwatch import Stopwatch


class ReplayPace:
    """:meth:`next_round` before each round: False when a round has run and the time limit leaves less than it
    took (a round cut short would return a plan that depends on where the clock stopped it; so a limit that
    falls in round 2 returns round 1's plan, whatever the timing). Called (``stop()``) before each replay of
    the round, run ``threads`` at a time: True once ``clock`` has run out, or once what it leaves is less than
    one replay takes, measured from the round's replays started so far (after the first ``threads`` starts,
    each start follows an end). A replay started then would end past the limit; one refused ends the round,
    as the clock running out does."""

    def __init__(self, clock: Stopwatch, threads: int):
        self.clock = clock
        self.threads = max(1, threads)
        self.starts: list[float] = []
        self.round_began: float | None = None

    def next_round(self) -> bool:
        now, began = time.perf_counter(), self.round_began
        self.round_began, self.starts = now, []
        left = self.clock.remaining()
        return began is None or left is None or left >= now - began

    def __call__(self) -> bool:
        if self.clock.expired():
            return True
        now = time.perf_counter()
        self.starts.append(now)
        ended = len(self.starts) - self.threads - 1  # replays ended before this start
        if ended < 1:
            return False
        left = self.clock.remaining()
        if left is None:
            return False
        per_replay = self.threads * (now - self.starts[0]) / ended
        return left < per_replay
