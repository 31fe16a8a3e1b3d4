"""One replication of MODEL.md §10, window by window over launch time, vectorised with numpy.

Each window launches the groups of its span, draws their lifetimes, backends and
intake, queues each backend's attempts for sandboxes (:mod:`simulate.sandbox`) and adds
the groups to the FIFO buffer. A group launched at or after a window's end completes after
it, so every batch boundary whose deciding group completes within the windows so far is
already fixed: the buffer places those boundaries before the next window is drawn. Memory
holds one window of draws plus what the replication returns (start and end per attempt,
launch, completion and fate per group).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simulate.sandbox import SandboxQueue
from simulate.setup import Setup

WINDOW_ATTEMPTS = 1 << 19  # attempts launched per window (about 0.5 M: ~13 MB per float column)
WINDOWS_PER_HORIZON = 80  # short runs: a window is at most a quarter of the predicted run (horizon / 80)
UNCONSUMED = -1  # fate of a group never consumed (dropped, or left in flight or in the buffer at the end)


@dataclass
class Run:
    """What one replication did. Groups and attempts are in launch order; attempt i is in group i // g."""

    seed: int
    boundaries: np.ndarray  # b_j, j = 0..(batches formed - 1)
    finished: bool  # all n batches formed before the horizon
    makespan: float  # b_{n-1} + U + extra_time (inf if not finished)
    launch: np.ndarray  # per group
    completion: np.ndarray  # per group: its last member's end
    effective: np.ndarray  # per group: effective members
    consumed: np.ndarray  # per group: the batch j that consumed it, or UNCONSUMED
    dropped: np.ndarray  # per group: never consumed and past the version cap (drop policy)
    drop_batch: np.ndarray  # per group: the boundary at which it was dropped, or UNCONSUMED
    start: np.ndarray  # per attempt: when its sandbox (and lifetime) started
    end: np.ndarray  # per attempt
    backend: np.ndarray  # per attempt: index into Setup.backends
    attempt_effective: np.ndarray  # per attempt

    @property
    def run_end(self) -> float:
        return self.makespan if self.finished else float(self.launch[-1]) if self.launch.size else 0.0


class _Launcher:
    """Group launch times, window by window: evenly spaced at g/R_raw from 0, or a Poisson process."""

    def __init__(self, setup: Setup, rng: np.random.Generator):
        self.spacing = setup.group_size / setup.attempts_per_s
        self.poisson = setup.launch == "poisson"
        self.rng = rng
        self.next_index = 0
        self.carry = np.empty(0)
        self.last = 0.0

    def until(self, t1: float) -> np.ndarray:
        if not self.poisson:
            stop = max(self.next_index, math.ceil(t1 / self.spacing))
            times = np.arange(self.next_index, stop) * self.spacing
            self.next_index = stop
            return times
        chunks = [self.carry]
        while not chunks[-1].size or chunks[-1][-1] < t1:
            size = int((t1 - self.last) / self.spacing * 1.05) + 64
            drawn = self.last + np.cumsum(self.rng.exponential(self.spacing, size))
            self.last = float(drawn[-1])
            chunks.append(drawn)
        times = np.concatenate(chunks)
        cut = int(np.searchsorted(times, t1, side="left"))
        self.carry = times[cut:]
        return times[:cut]


class _Buffer:
    """Completed groups waiting in FIFO order (by completion), and the boundaries they decide."""

    def __init__(self, setup: Setup):
        self.setup = setup
        self.comp = np.empty(0)
        self.launch = np.empty(0)
        self.eff = np.empty(0, dtype=np.int64)
        self.gid = np.empty(0, dtype=np.int64)
        self.boundaries: list[float] = []
        self.consumed: list[tuple[np.ndarray, int]] = []
        self.dropped: list[tuple[np.ndarray, int]] = []

    def add(self, comp, launch, eff, gid) -> None:
        comp = np.concatenate((self.comp, comp))
        order = np.lexsort((np.concatenate((self.gid, gid)), comp))
        self.comp = comp[order]
        self.launch = np.concatenate((self.launch, launch))[order]
        self.eff = np.concatenate((self.eff, eff))[order]
        self.gid = np.concatenate((self.gid, gid))[order]

    def place(self, known: float) -> None:
        """Form every batch decided by groups completed by ``known`` (all such groups are in)."""
        s = self.setup
        need = 2 * s.batch // max(1, s.group_size) + 64
        while len(self.boundaries) < s.iterations:
            j = len(self.boundaries)
            old = j - s.versions_kept - 1
            floor = self.boundaries[old] if s.policy == "drop" and old >= 0 else -math.inf
            end = int(np.searchsorted(self.comp, known, side="right"))
            look = min(end, need)
            while True:
                eligible = self.launch[:look] >= floor
                total = np.cumsum(np.where(eligible, self.eff[:look], 0))
                e = int(np.searchsorted(total, s.batch, side="left"))
                if e < look or look == end:
                    break
                look = min(end, 2 * look)
            if e >= look:
                return
            b = float(self.comp[e]) if j == 0 else max(self.boundaries[-1] + s.update_s, float(self.comp[e]))
            self.boundaries.append(b)
            taken = eligible[: e + 1]
            self.consumed.append((self.gid[: e + 1][taken], j))
            self.dropped.append((self.gid[: e + 1][~taken], j))
            self.comp, self.launch = self.comp[e + 1 :], self.launch[e + 1 :]
            self.eff, self.gid = self.eff[e + 1 :], self.gid[e + 1 :]


def replicate(setup: Setup, seed: int, on_progress: Callable[[int, int], None] | None = None) -> Run:
    """Replay the plan once with ``seed``: launches, lifetimes, sandboxes, batches, until n batches form."""
    rng = np.random.default_rng(seed)
    g = setup.group_size
    launcher = _Launcher(setup, rng)
    queues = [SandboxQueue(c) for c in setup.capacity]
    buffer = _Buffer(setup)
    window = min(WINDOW_ATTEMPTS / setup.attempts_per_s, setup.horizon / WINDOWS_PER_HORIZON)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("launch", "comp", "eff", "start", "end", "backend", "ok")}
    groups = 0
    t0 = 0.0
    while len(buffer.boundaries) < setup.iterations and t0 < setup.horizon:
        t1 = t0 + window
        launch = launcher.until(t1)
        start, end, backend, ok = _attempts(setup, rng, queues, launch)
        comp = end.reshape(-1, g).max(axis=1)
        eff = ok.reshape(-1, g).sum(axis=1)
        buffer.add(comp, launch, eff, np.arange(groups, groups + launch.size))
        groups += launch.size
        for key, value in (
            ("launch", launch),
            ("comp", comp),
            ("eff", eff),
            ("start", start),
            ("end", end),
            ("backend", backend),
            ("ok", ok),
        ):
            parts[key].append(value)
        buffer.place(t1)
        t0 = t1
        if on_progress:
            on_progress(len(buffer.boundaries), setup.iterations)
    return _assemble(setup, seed, buffer, {k: np.concatenate(v) for k, v in parts.items()})


def _attempts(setup: Setup, rng: np.random.Generator, queues: list[SandboxQueue], launch: np.ndarray):
    """Draw one window's attempts (g per group, in launch order) and queue them for sandboxes."""
    g = setup.group_size
    arrival = np.repeat(launch, g)
    n = arrival.size
    per_group = setup.correlation == "comonotone"
    life = _lifetimes(setup, rng, launch.size if per_group else n)
    if per_group:
        life = np.repeat(life, g)
    if len(setup.backends) == 1:
        backend = np.zeros(n, dtype=np.int16)
    else:
        backend = np.searchsorted(np.cumsum(setup.shares)[:-1], rng.random(n), side="right").astype(np.int16)
    ok = rng.random(n) < setup.intake if setup.intake < 1 else np.ones(n, dtype=bool)
    if len(queues) == 1:
        start = queues[0].admit(arrival, life)
    else:
        start = np.empty(n)
        for b, queue in enumerate(queues):
            mine = np.flatnonzero(backend == b)
            start[mine] = queue.admit(arrival[mine], life[mine])
    return start, start + life, backend, ok


def _lifetimes(setup: Setup, rng: np.random.Generator, size: int) -> np.ndarray:
    occ = setup.occupancy
    if occ.samples is not None:
        return occ.samples[rng.integers(0, occ.samples.size, size)]
    return np.exp(occ.mu + occ.sigma * rng.standard_normal(size))


def _assemble(setup: Setup, seed: int, buffer: _Buffer, cols: dict[str, np.ndarray]) -> Run:
    """Cut launches at the last boundary (nothing launched after it is needed) and record each group's fate."""
    b = np.asarray(buffer.boundaries)
    finished = b.size == setup.iterations
    keep = int(np.searchsorted(cols["launch"], b[-1], side="left")) if finished else cols["launch"].size
    g = setup.group_size
    consumed = np.full(keep, UNCONSUMED, dtype=np.int64)
    drop_batch = np.full(keep, UNCONSUMED, dtype=np.int64)
    for gid, j in buffer.consumed:
        consumed[gid] = j
    for gid, j in buffer.dropped:
        drop_batch[gid] = j
    launch = cols["launch"][:keep]
    if setup.policy == "drop" and b.size:
        version = np.searchsorted(b, launch, side="right")
        stale = (consumed == UNCONSUMED) & (drop_batch == UNCONSUMED) & (b.size - 1 - version > setup.versions_kept)
        drop_batch[stale] = b.size - 1
    return Run(
        seed=seed,
        boundaries=b,
        finished=finished,
        makespan=float(b[-1] + setup.update_s + setup.extra_time) if finished else math.inf,
        launch=launch,
        completion=cols["comp"][:keep],
        effective=cols["eff"][:keep],
        consumed=consumed,
        dropped=drop_batch != UNCONSUMED,
        drop_batch=drop_batch,
        start=cols["start"][: keep * g],
        end=cols["end"][: keep * g],
        backend=cols["backend"][: keep * g],
        attempt_effective=cols["ok"][: keep * g],
    )
