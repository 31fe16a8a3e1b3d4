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

from trainground.simulate.failures import Injection
from trainground.simulate.sandbox import SandboxQueue
from trainground.simulate.setup import Setup

WINDOW_ATTEMPTS = 1 << 19  # attempts launched per window (about 0.5 M: ~13 MB per float column)
WINDOWS_PER_HORIZON = 80  # short runs: a window is at most a quarter of the predicted run (horizon / 80)
UNCONSUMED = -1  # fate of a group never consumed (dropped, or left in flight or in the buffer at the end)


@dataclass
class Run:
    """What one replication did. Groups and attempts are in launch order; attempt i is in group i // g.
    A replication run with ``record=False`` (MODEL §11's replays) keeps the boundaries, the makespan, the
    launches and each group's waits only: its other per-group and per-attempt columns are empty, and
    :func:`simulate.summary.summarize` is not for it."""

    seed: object  # what numpy.random.default_rng was given
    group_size: int
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
    waited: np.ndarray  # per group: members that waited for a sandbox
    failures: dict | None = None  # MODEL §13's injection (simulate.failures.Injection.report), None without it

    @property
    def wait_share(self) -> float:
        """Share of the attempts launched before the last boundary that waited for a sandbox."""
        return float(self.waited.sum() / (self.waited.size * self.group_size)) if self.waited.size else 0.0

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

    def __init__(self, setup: Setup, inject: Injection | None = None):
        self.setup = setup
        self.inject = inject
        self.comp = np.empty(0)
        self.launch = np.empty(0)
        self.eff = np.empty(0, dtype=np.int64)
        self.gid = np.empty(0, dtype=np.int64)
        self.boundaries: list[float] = []
        self.consumed: list[tuple[np.ndarray, int]] = []
        self.dropped: list[tuple[np.ndarray, int]] = []

    def add(self, comp, launch, eff, gid) -> None:
        """Merge a window's groups (``gid`` increasing, above every buffered one) into the buffer's
        (completion, group id) order: the new groups sorted by completion (stable: ties by id), each placed
        after the buffered groups that complete no later."""
        order = np.argsort(comp)
        ordered = comp[order]
        if comp.size > 1 and not np.all(ordered[1:] > ordered[:-1]):  # a tie: order it by group id
            order = np.argsort(comp, kind="stable")
        comp, launch, eff, gid = comp[order], launch[order], eff[order], gid[order]
        at = np.searchsorted(self.comp, comp, side="right") + np.arange(comp.size)
        size = self.comp.size + comp.size
        old = np.ones(size, dtype=bool)
        old[at] = False
        for name, new in (("comp", comp), ("launch", launch), ("eff", eff), ("gid", gid)):
            merged = np.empty(size, dtype=new.dtype)
            merged[at] = new
            merged[old] = getattr(self, name)
            setattr(self, name, merged)

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
            if self.inject is None:
                b = float(self.comp[e]) if j == 0 else max(self.boundaries[-1] + s.update_s, float(self.comp[e]))
            else:
                b = self.inject.batch_taken(float(self.comp[e]), s.update_s)
            self.boundaries.append(b)
            taken = eligible[: e + 1]
            self.consumed.append((self.gid[: e + 1][taken], j))
            self.dropped.append((self.gid[: e + 1][~taken], j))
            self.comp, self.launch = self.comp[e + 1 :], self.launch[e + 1 :]
            self.eff, self.gid = self.eff[e + 1 :], self.gid[e + 1 :]


def replicate(setup: Setup, seed, on_progress: Callable[[int, int], None] | None = None, record: bool = True) -> Run:
    """Replay the plan once with ``seed``: launches, lifetimes, sandboxes, batches, until n batches form.

    ``record=False`` keeps only what the makespan and the sandbox waits need (MODEL §11's replays): the
    per-attempt columns are left empty and each group keeps its count of members that waited. The random
    draws, the queues and the batches are the same, so the makespan is the recorded run's."""
    rng = np.random.default_rng(seed)
    g = setup.group_size
    launcher = _Launcher(setup, rng)
    queues = [SandboxQueue(c) for c in setup.capacity]
    inject = None if setup.failures is None else Injection(setup.failures, seed, setup.occupancy, setup.horizon)
    buffer = _Buffer(setup, inject)
    window = min(WINDOW_ATTEMPTS / setup.attempts_per_s, setup.horizon / WINDOWS_PER_HORIZON)
    if inject is not None and inject.fleet is not None:
        window = min(window, inject.window)
    columns = ("launch", "comp", "eff", "start", "end", "backend", "ok") if record else ("launch", "waited")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in columns}
    groups = 0
    t0 = 0.0
    while len(buffer.boundaries) < setup.iterations and t0 < setup.horizon:
        t1 = t0 + window
        launch = launcher.until(t1)
        start, end, backend, ok, arrival, launch = _attempts(setup, rng, queues, launch, inject, (t0, t1))
        comp = _group_max(end, g)
        eff = ok.reshape(-1, g).sum(axis=1) if setup.intake < 1 else np.full(launch.size, g, dtype=np.int64)
        buffer.add(comp, launch, eff, np.arange(groups, groups + launch.size))
        groups += launch.size
        if record:
            window_parts = dict(launch=launch, comp=comp, eff=eff, start=start, end=end, backend=backend, ok=ok)
        else:
            late = None if start is arrival else start > arrival
            waited = np.zeros(launch.size, dtype=np.int64) if late is None else late.reshape(-1, g).sum(axis=1)
            window_parts = dict(launch=launch, waited=waited)
        for key, value in window_parts.items():
            parts[key].append(value)
        buffer.place(t1)
        t0 = t1
        if on_progress:
            on_progress(len(buffer.boundaries), setup.iterations)
    run = _assemble(setup, seed, buffer, {k: np.concatenate(v) for k, v in parts.items()}, record)
    if inject is not None:
        run.makespan = inject.makespan(run.makespan, setup.extra_time)
        run.failures = inject.report(run.run_end, len(buffer.boundaries))
    return run


def _attempts(setup: Setup, rng: np.random.Generator, queues: list[SandboxQueue], launch: np.ndarray, inject, span):
    """Draw one window's attempts (g per group, in launch order) and queue them for sandboxes: their starts,
    ends, backends, intake, arrivals and the groups' launches (the planned ones, or under MODEL §13's fleet
    terms when the fleet's supply lets them launch, with each member's relaunches in its occupancy)."""
    g = setup.group_size
    n = launch.size * g
    per_group = setup.correlation == "comonotone"
    life = _lifetimes(setup, rng, launch.size if per_group else n)
    if per_group:
        life = np.repeat(life, g)
    if len(setup.backends) == 1:
        backend = np.zeros(n, dtype=np.int16)
    else:
        backend = np.searchsorted(np.cumsum(setup.shares)[:-1], rng.random(n), side="right").astype(np.int16)
    ok = rng.random(n) < setup.intake if setup.intake < 1 else np.ones(n, dtype=bool)
    if inject is not None and inject.fleet is not None:
        life, work = inject.fleet.expose(life, g)
        launch = inject.fleet.launches(launch, work, *span)
    arrival = np.repeat(launch, g)
    if len(queues) == 1:
        end = arrival + life
        start = queues[0].admit(arrival, life, end)  # ``arrival`` itself when no attempt waits
        if start is not arrival:
            np.add(start, life, out=end)
        return start, end, backend, ok, arrival, launch
    start = np.empty(n)
    for b, queue in enumerate(queues):
        mine = np.flatnonzero(backend == b)
        start[mine] = queue.admit(arrival[mine], life[mine])
    life += start
    return start, life, backend, ok, arrival, launch


def _group_max(end: np.ndarray, g: int) -> np.ndarray:
    """Each group's last end: the largest of every g-th value from each member's offset (faster than a
    reduction over rows of g)."""
    comp = end[0::g].copy()
    for j in range(1, g):
        np.maximum(comp, end[j::g], out=comp)
    return comp


def _lifetimes(setup: Setup, rng: np.random.Generator, size: int) -> np.ndarray:
    occ = setup.occupancy
    if occ.samples is not None:
        return occ.samples[rng.integers(0, occ.samples.size, size)]
    life = rng.standard_normal(size)
    life *= occ.sigma
    life += occ.mu
    return np.exp(life, out=life)


def _assemble(setup: Setup, seed, buffer: _Buffer, cols: dict[str, np.ndarray], record: bool = True) -> Run:
    """Cut launches at the last boundary (nothing launched after it is needed) and record each group's fate."""
    b = np.asarray(buffer.boundaries)
    finished = b.size == setup.iterations
    keep = int(np.searchsorted(cols["launch"], b[-1], side="left")) if finished else cols["launch"].size
    makespan = float(b[-1] + setup.update_s + setup.extra_time) if finished else math.inf
    if not record:
        empty, none = np.empty(0), np.empty(0, dtype=np.int64)
        return Run(
            seed=seed,
            group_size=setup.group_size,
            boundaries=b,
            finished=finished,
            makespan=makespan,
            launch=cols["launch"][:keep],
            completion=empty,
            effective=none,
            consumed=none,
            dropped=np.empty(0, dtype=bool),
            drop_batch=none,
            start=empty,
            end=empty,
            backend=np.empty(0, dtype=np.int16),
            attempt_effective=np.empty(0, dtype=bool),
            waited=cols["waited"][:keep],
        )
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
    start = cols["start"][: keep * g]
    return Run(
        seed=seed,
        group_size=g,
        boundaries=b,
        finished=finished,
        makespan=makespan,
        launch=launch,
        completion=cols["comp"][:keep],
        effective=cols["eff"][:keep],
        consumed=consumed,
        dropped=drop_batch != UNCONSUMED,
        drop_batch=drop_batch,
        start=start,
        end=cols["end"][: keep * g],
        backend=cols["backend"][: keep * g],
        attempt_effective=cols["ok"][: keep * g],
        waited=(start > np.repeat(launch, g)).reshape(-1, g).sum(axis=1) if keep else np.zeros(0, dtype=np.int64),
    )
