"""A FIFO queue in front of ``c`` identical sandboxes, fed window by window, vectorised with numpy.

An attempt arriving at ``a_i`` starts at ``s_i = max(a_i, s_{i-1}, τ_{i+1-c})``, where
``τ_m`` is the m-th departure of all attempts (``d_j = s_j + w_j``): with FIFO starts, attempt
``i`` needs ``i+1-c`` of the ``i`` attempts before it gone. A departure of an attempt at or
after ``i`` comes after ``s_i`` (lifetimes are positive), so counting every departure is the
same as counting the earlier ones, and the equation can be solved for a whole chunk of
arrivals by a monotone fixed-point iteration: ``s ← cummax(max(a, τ(s)))`` from ``s = a``
rises to the solution, and stops exactly once no start changes (each start is an arrival,
the previous start or a departure, so a chain of at most chunk-length steps).

Where no attempt waits (the common case), one sort of the window's departures proves it
and the starts are the arrivals; the iteration runs only from the first attempt that
finds every sandbox taken, and the queue returns to the fast path once every attempt
still holding a sandbox started on arrival.
"""

from __future__ import annotations

import math

import numpy as np

CHUNK_MIN = 1024  # arrivals per fixed-point chunk, at least; at most the capacity (see _chunk)
CHUNK_MAX = 1 << 16


class SandboxQueue:
    """State between windows: the departures still ahead of the last start (sorted), that start,
    and the latest departure of an attempt that waited."""

    def __init__(self, capacity: float):
        self.capacity = math.inf if capacity is None else capacity
        self.pending = np.empty(0)
        self.frontier = -math.inf
        self.waited_until = -math.inf

    @property
    def unlimited(self) -> bool:
        return not math.isfinite(self.capacity)

    def admit(self, arrivals: np.ndarray, lifetimes: np.ndarray) -> np.ndarray:
        """Start times of the next arrivals (non-decreasing, after every earlier one) holding a
        sandbox for ``lifetimes`` seconds: ``arrivals`` itself (not a copy) when none of them waits, so a
        caller that changes the starts must copy them first."""
        if self.unlimited or arrivals.size == 0:
            return arrivals
        c = int(self.capacity)
        if c <= 0:
            return np.full(arrivals.shape, math.inf)
        starts = arrivals  # copied once an attempt waits: a window where none does returns its arrivals
        i = 0
        late = None
        while i < arrivals.size:
            if self.waited_until <= self.frontier:
                # No attempt holding a sandbox waited: the state is the one where nobody waited, so the
                # no-wait schedule (computed once per window) says who is first to find the sandboxes full.
                gone = None
                if late is None:
                    late, gone = self._late(arrivals[i:], lifetimes[i:], c)
                    late += i
                ahead = late[np.searchsorted(late, i) :]
                first = int(ahead[0]) if ahead.size else arrivals.size
                # Nobody late from i on: the departures _late sorted are the state's after this chunk.
                self._absorb(
                    arrivals[i:first],
                    lifetimes[i:first],
                    arrivals[i:first],
                    gone if first == arrivals.size else None,
                    on_arrival=True,
                )
                i = first
                if i == arrivals.size:
                    break
            stop = min(arrivals.size, i + _chunk(c))
            if starts is arrivals:
                starts = arrivals.copy()
            starts[i:stop] = self._solve_chunk(arrivals[i:stop], lifetimes[i:stop], c)
            i = stop
        return starts

    def _late(self, arrivals, lifetimes, c: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Indices of arrivals that would find every sandbox taken if none of them waited (the state
        being one where no attempt still holding a sandbox waited), and the sorted departures of the
        state and of these arrivals started on arrival."""
        if arrivals.size == 0:
            return np.empty(0, dtype=np.int64), None
        gone = np.sort(np.concatenate((self.pending, arrivals + lifetimes)))
        # arrival i waits for the (i + pending - c)-th departure (0-based): consecutive ranks, so the departures
        # the arrivals from the first with a non-negative rank wait for are one slice of ``gone``
        first = max(0, c - self.pending.size)
        if first >= arrivals.size:
            return np.empty(0, dtype=np.int64), gone
        offset = self.pending.size - c
        tau = gone[first + offset : arrivals.size + offset]
        return first + np.flatnonzero(tau > arrivals[first:]), gone

    def _solve_chunk(self, arrivals, lifetimes, c: int) -> np.ndarray:
        rank = np.arange(arrivals.size) + self.pending.size - c
        valid = rank >= 0
        starts = np.maximum.accumulate(np.maximum(arrivals, self.frontier))
        while True:
            gone = np.sort(np.concatenate((self.pending, starts + lifetimes)))
            tau = np.full(arrivals.size, -math.inf)
            tau[valid] = gone[rank[valid]]
            new = np.maximum.accumulate(np.maximum(np.maximum(arrivals, tau), self.frontier))
            if np.array_equal(new, starts):
                break
            starts = new
        self._absorb(arrivals, lifetimes, starts)
        return starts

    def _absorb(self, arrivals, lifetimes, starts, gone: np.ndarray | None = None, on_arrival: bool = False) -> None:
        """Add started attempts to the state: keep departures after the last start, which every
        later start is at least. ``gone``, when given, is already the sorted departures of the
        state and of these attempts; ``on_arrival``: every one of them started on arrival."""
        if starts.size == 0:
            return
        if not on_arrival:
            ends = starts + lifetimes
            waited = starts > arrivals
            if waited.any():
                self.waited_until = max(self.waited_until, float(ends[waited].max()))
        self.frontier = max(self.frontier, float(starts[-1]))
        if gone is None:  # the departures still ahead of the last start, sorted
            ahead = np.concatenate((self.pending, starts + lifetimes))
            self.pending = np.sort(ahead[ahead > self.frontier])
            return
        self.pending = gone[np.searchsorted(gone, self.frontier, side="right") :]


def _chunk(c: int) -> int:
    return int(min(CHUNK_MAX, max(CHUNK_MIN, c)))
