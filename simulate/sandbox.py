"""A FIFO queue in front of ``c`` identical sandboxes, fed window by window, vectorised with numpy.

An attempt arriving at ``a_i`` starts at ``s_i = max(a_i, s_{i-1}, τ_{i+1-c})``, where
``τ_m`` is the m-th departure of all attempts (``d_j = s_j + w_j``): with FIFO starts, attempt
``i`` needs ``i+1-c`` of the ``i`` attempts before it gone. A departure of an attempt at or
after ``i`` comes after ``s_i`` (lifetimes are positive), so counting every departure is the
same as counting the earlier ones, and the equation can be solved for a whole chunk of
arrivals by a monotone fixed-point iteration: ``s ← cummax(max(a, τ(s)))`` from ``s = a``
rises to the solution, and stops exactly once no start changes (each start is an arrival,
the previous start or a departure, so a chain of at most chunk-length steps).

Where no attempt waits (the common case), a count by time bins proves it without a sort: with
nobody waiting when the first of them arrives and every earlier one started on arrival, an arrival
in bin ``k`` finds at most ``P + A_k - D_{k-1}`` sandboxes taken (``P`` held before, ``A_k``
arrivals up to the end of bin ``k``, ``D_{k-1}`` departures before bin ``k`` starts), and where that
stays within ``c`` nobody in the bin waits. From the first bin the count cannot clear, while no
attempt holding a sandbox waited, one sort of the departures says exactly who is first to find
every sandbox taken (the no-wait schedule, a few chunks at a time); the iteration runs only from
there, and the count is tried again once nobody is waiting.
"""

from __future__ import annotations

import math

import numpy as np

CHUNK_MIN = 1024  # arrivals per fixed-point chunk, at least; at most the capacity (see _chunk)
CHUNK_MAX = 1 << 16
ARRIVALS_PER_BIN = 4  # the bin count's resolution: its bound exceeds the exact count by about a bin's traffic
RETRY_CHUNKS = 4  # after a bin count that clears less than a chunk, chunks solved before it is tried again
SCHEDULE_CHUNKS = 4  # arrivals one no-wait schedule covers, in chunks (a schedule sorts their departures)


class SandboxQueue:
    """State between windows: the departures still ahead of the last start (in no particular order: each
    use sorts or counts them), that start, and the latest departure of an attempt that waited."""

    def __init__(self, capacity: float):
        self.capacity = math.inf if capacity is None else capacity
        self.pending = np.empty(0)
        self.frontier = -math.inf
        self.waited_until = -math.inf
        # The bin count's working arrays, reused from window to window (not state: each count overwrites them).
        # A window's temporaries are megabytes; fresh ones each window cost more in page faults than the count.
        self._bin_at = np.empty(0)
        self._bin_of = np.empty(0, dtype=np.int64)
        self._bin_excess = np.empty(0, dtype=np.int64)

    @property
    def unlimited(self) -> bool:
        return not math.isfinite(self.capacity)

    def admit(
        self, arrivals: np.ndarray, lifetimes: np.ndarray, ends: np.ndarray | None = None, runs: int = 1
    ) -> np.ndarray:
        """Start times of the next arrivals (non-decreasing, after every earlier one) holding a
        sandbox for ``lifetimes`` seconds: ``arrivals`` itself (not a copy) when none of them waits, so a
        caller that changes the starts must copy them first. ``ends``: ``arrivals + lifetimes``, when the
        caller has it (the departures if nobody waits). ``runs``: the arrivals come in runs of that many
        equal times (a group's members), which the bin count then reads once per run."""
        if self.unlimited or arrivals.size == 0:
            return arrivals
        c = int(self.capacity)
        if c <= 0:
            return np.full(arrivals.shape, math.inf)
        if ends is None:
            ends = arrivals + lifetimes
        starts = arrivals  # copied once an attempt waits: a window where none does returns its arrivals
        n = arrivals.size
        i, late, late_end, retry = 0, None, 0, 0
        while i < n:
            scheduled = late is not None and i < late_end and self.waited_until <= self.frontier
            if not scheduled and i >= retry and self.frontier <= arrivals[i]:
                # Nobody is waiting now: the bin count proves who starts on arrival, up to the first bin it
                # cannot clear (after a short proof, it is tried again some chunks later).
                clear = i + self._clear(arrivals[i:], ends[i:], c, runs if i % runs == 0 else 1)
                self._absorb_on_arrival(arrivals[i:clear], ends[i:clear])
                if clear - i < _chunk(c):
                    retry = clear + RETRY_CHUNKS * _chunk(c)
                i = clear
                if i == n:
                    break
            if self.waited_until <= self.frontier:
                # No attempt holding a sandbox waited: the state is the one where nobody waited, so the
                # no-wait schedule of the next arrivals says who is first to find the sandboxes full.
                gone = None
                if late is None or i >= late_end:
                    late_end = min(n, i + SCHEDULE_CHUNKS * _chunk(c))
                    late, gone = self._late(arrivals[i:late_end], lifetimes[i:late_end], c)
                    late += i
                ahead = late[np.searchsorted(late, i) :]
                first = int(ahead[0]) if ahead.size else late_end
                # Nobody late from i on: the departures _late sorted are the state's after these arrivals.
                self._absorb(
                    arrivals[i:first], lifetimes[i:first], arrivals[i:first], gone if first == late_end else None, True
                )
                i = first
                if i == n or i == late_end:
                    continue
            stop = min(n, i + _chunk(c))
            if starts is arrivals:
                starts = arrivals.copy()
            starts[i:stop] = self._solve_chunk(arrivals[i:stop], lifetimes[i:stop], c)
            i = stop
        return starts

    def _clear(self, arrivals, ends, c: int, runs: int = 1) -> int:
        """How many leading arrivals the bin count proves to start on arrival (nobody waiting when the first
        arrives: the last start is no later): all of those in the bins before the first whose bound
        ``P + A_k - D_{k-1}`` exceeds ``c``. A time's bin is ``int((t - t0)·scale)``, non-decreasing in ``t``,
        so a departure in an earlier bin than an arrival's is before it; a departure of these arrivals is after
        t0, and one held before the window that is before t0 counts as before every bin."""
        n = arrivals.size
        span = float(arrivals[-1] - arrivals[0])
        if n < 2 * ARRIVALS_PER_BIN or not span > 0:
            return 0
        t0, scale = float(arrivals[0]), n / (span * ARRIVALS_PER_BIN)
        bins = int(span * scale) + 1
        arrived = np.bincount(((arrivals[::runs] - t0) * scale).astype(np.int64), minlength=bins)
        np.cumsum(arrived, out=arrived)  # A_k: arrivals up to the end of bin k
        if runs > 1:
            arrived *= runs
        at, of, excess = self._bin_arrays(n, bins)
        np.subtract(ends, t0, out=at)
        at *= scale
        np.minimum(at, bins, out=at)
        np.copyto(of, at, casting="unsafe")  # truncation, as astype(np.int64)
        counts = np.bincount(of, minlength=bins + 1)
        before = 0
        if self.pending.size:
            gone = self.pending < t0
            before = int(np.count_nonzero(gone))
            held = (self.pending[~gone] - t0) * scale
            counts += np.bincount(np.minimum(held, bins).astype(np.int64), minlength=bins + 1)
        # P + A_k - D_{k-1} > c, with D_{k-1} = before + the departures counted in bins up to k - 1
        excess[0] = 0
        np.cumsum(counts[: bins - 1], out=excess[1:])
        np.subtract(arrived, excess, out=excess)
        over = excess > c - self.pending.size + before
        k = int(over.argmax())
        return n if not over[k] else (int(arrived[k - 1]) if k > 0 else 0)

    def _bin_arrays(self, n: int, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The bin count's working arrays: times and their bins for ``n`` departures, a count per bin."""
        if self._bin_at.size < n:
            self._bin_at, self._bin_of = np.empty(n), np.empty(n, dtype=np.int64)
        if self._bin_excess.size < bins:
            self._bin_excess = np.empty(bins, dtype=np.int64)
        return self._bin_at[:n], self._bin_of[:n], self._bin_excess[:bins]

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

    def _absorb_on_arrival(self, arrivals, ends) -> None:
        """Add attempts that started on arrival and leave at ``ends``: keep the departures after the last start."""
        if arrivals.size == 0:
            return
        self.frontier = max(self.frontier, float(arrivals[-1]))
        ahead = ends[ends > self.frontier]
        pending = self.pending[self.pending > self.frontier]
        self.pending = np.concatenate((pending, ahead)) if pending.size else ahead

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
        if gone is None:  # the departures still ahead of the last start
            ahead = np.concatenate((self.pending, starts + lifetimes))
            self.pending = ahead[ahead > self.frontier]
            return
        self.pending = gone[np.searchsorted(gone, self.frontier, side="right") :]


def _chunk(c: int) -> int:
    return int(min(CHUNK_MAX, max(CHUNK_MIN, c)))
