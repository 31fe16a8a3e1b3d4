"""One stopwatch per solve: wall time per phase, and the time limit that covers all of them."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager


class Stopwatch:
    """Seconds spent per named phase (build, solve, extract, verify) and an optional deadline for the
    whole solve (``time_limit`` seconds from creation). A phase entered inside another takes its own
    time out of the outer one, so the phases add up to the wall time they cover."""

    def __init__(self, time_limit: float | None = None, listener: Callable[[str], None] | None = None):
        """``listener`` hears what the solve is doing (:meth:`note`), for a progress line."""
        self.listener = listener
        self.started = time.perf_counter()
        self.deadline = None if time_limit is None else self.started + time_limit
        self.seconds: dict[str, float] = {}
        self._stack: list[str] = []
        self._mark = self.started

    def _charge(self) -> None:
        now = time.perf_counter()
        if self._stack:
            name = self._stack[-1]
            self.seconds[name] = self.seconds.get(name, 0.0) + now - self._mark
        self._mark = now

    @contextmanager
    def phase(self, name: str):
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()

    def note(self, text: str) -> None:
        """Tell the listener, if any, what the solve is doing now."""
        if self.listener is not None:
            self.listener(text)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (at least 10 ms, so HiGHS still reports what it has); None without one."""
        return None if self.deadline is None else max(0.01, self.deadline - time.perf_counter())

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def elapsed(self) -> float:
        return time.perf_counter() - self.started
