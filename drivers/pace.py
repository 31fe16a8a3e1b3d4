"""When a time limit leaves no room for one more replay of a plan that holds (MODEL §11): the stop a round's
replays ask before each one starts (:meth:`drivers.hold.ReplayCache.replays`)."""

from __future__ import annotations

import time

from trainground.solver.stopwatch import Stopwatch


class ReplayPace:
    """``stop()`` for one round's replays, run ``threads`` at a time: True once ``clock`` has run out, or once
    what it leaves is less than one replay takes, measured from the replays started so far (after the first
    ``threads`` starts, each start follows an end). A replay started then would end past the limit; one
    refused ends the round, as the clock running out does."""

    def __init__(self, clock: Stopwatch, threads: int):
        self.clock = clock
        self.threads = max(1, threads)
        self.starts: list[float] = []

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
