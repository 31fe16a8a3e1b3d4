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

from trainground.simulation.buffer import Buffer
from trainground.simulation.failures import Injection
from trainground.simulation.sandbox import SandboxQueue
from trainground.simulation.setup import Setup
from trainground.simulation.stages import StagePlayer, readmit, restore, snapshot

WINDOW_ATTEMPTS = 1 << 18  # attempts launched per window (about 262 k: 2 MB per float column, cache-sized passes)
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


class _Scratch:
    """Per-attempt working arrays reused from window to window, so that a window's temporaries (megabytes each)
    do not cost fresh pages every window. An array taken from here is overwritten by the next window's: only
    what the window itself reads may live in it, never what a replication keeps."""

    def __init__(self):
        self._arrays: dict[str, np.ndarray] = {}

    def take(self, name: str, size: int) -> np.ndarray:
        """A float array of ``size`` (its values are whatever was there)."""
        found = self._arrays.get(name)
        if found is None or found.size < size:
            found = self._arrays[name] = np.empty(max(size, WINDOW_ATTEMPTS))
        return found[:size]


class _Launcher:
    """Group launch times, window by window: evenly spaced at g/R_raw from 0, or a Poisson process; a staged
    replay restarts it at each stage's start with that stage's rate (:meth:`restart`)."""

    def __init__(self, setup: Setup, rng: np.random.Generator):
        self.spacing = setup.group_size / setup.attempts_per_s
        self.poisson = setup.launch == "poisson"
        self.rng = rng
        self.origin = 0.0
        self.next_index = 0
        self.carry = np.empty(0)
        self.last = 0.0

    def until(self, t1: float) -> np.ndarray:
        if not self.poisson:
            stop = max(self.next_index, math.ceil((t1 - self.origin) / self.spacing))
            times = self.origin + np.arange(self.next_index, stop) * self.spacing
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

    def next_time(self) -> float:
        """The evenly spaced launch after the last one returned."""
        return self.origin + self.next_index * self.spacing

    def restart(self, setup: Setup, at: float) -> None:
        """Launch at ``setup``'s rate from ``at`` on: evenly spaced from ``at``, or a Poisson process after it."""
        self.spacing = setup.group_size / setup.attempts_per_s
        self.origin, self.next_index = at, 0
        self.carry, self.last = np.empty(0), at


def replicate(setup: Setup, seed, on_progress: Callable[[int, int], None] | None = None, record: bool = True) -> Run:
    """Replay the plan once with ``seed``: launches, lifetimes, sandboxes, batches, until n batches form.

    ``record=False`` keeps only what the makespan and the sandbox waits need (MODEL §11's replays): the
    per-attempt columns are left empty and each group keeps its count of members that waited. The random
    draws, the queues and the batches are the same, so the makespan is the recorded run's. A staged setup
    (MODEL §12) plays its stages in order (:mod:`simulate.stages`): a window is drawn at the stage that
    launches now, and one drawn past the next stage's start is cut back to it."""
    rng = np.random.default_rng(seed)
    g = setup.group_size
    player = StagePlayer(setup) if setup.stages else None
    now = setup if player is None else player.current
    launcher = _Launcher(now, rng)
    queues = [SandboxQueue(c) for c in now.capacity]
    inject = None if setup.failures is None else Injection(setup.failures, seed, setup.occupancy, setup.horizon)
    buffer = Buffer(setup, inject, None if player is None else player.spacing, record)
    window = _window(now, setup, inject)
    scratch = _Scratch()
    columns = ("launch", "waited") + (("comp", "eff", "start", "end", "backend", "ok") if record else ())
    parts: dict[str, list[np.ndarray]] = {k: [] for k in columns}
    groups = 0
    t0 = 0.0
    while len(buffer.boundaries) < setup.iterations and t0 < setup.horizon:
        t1 = t0 + window
        change = None if player is None else player.starts_at(buffer.boundaries)
        if change is not None and change <= t0:  # the next stage starts now: launch at its values
            now, window = _next_stage(player, launcher, queues, setup, change, launcher.next_time())
            continue
        if change is not None:
            t1 = min(t1, change)
        before = None if player is None else snapshot(buffer, queues, groups)
        launch = launcher.until(t1)
        start, end, backend, ok, arrival, launch, life = _attempts(
            now, rng, queues, launch, inject, (t0, t1), scratch, record
        )
        comp = _group_max(end, g)
        eff = ok.reshape(-1, g).sum(axis=1) if now.draws_samples else np.full(launch.size, g, dtype=np.int64)
        buffer.add(comp, launch, eff, np.arange(groups, groups + launch.size))
        buffer.place(t1)
        kept = launch.size
        change = None if player is None else player.starts_at(buffer.boundaries)
        if change is not None and change < t1:  # drawn past the next stage's start: keep what launched before it
            assert before is not None
            kept = int(np.searchsorted(launch, change, side="left"))
            restore(before, buffer, queues)
            readmit(queues, arrival[: kept * g], life[: kept * g], backend[: kept * g])
            buffer.add(comp[:kept], launch[:kept], eff[:kept], np.arange(groups, groups + kept))
            buffer.place(change)
            following = float(launch[kept]) if kept < launch.size else launcher.next_time()
            now, window = _next_stage(player, launcher, queues, setup, change, following)
            t1 = change
        groups += kept
        a = kept * g
        late = None if start is arrival else start[:a] > arrival[:a]
        waited = np.zeros(kept, dtype=np.int64) if late is None else late.reshape(-1, g).sum(axis=1)
        window_parts = dict(launch=launch[:kept], waited=waited)
        if record:
            window_parts.update(
                comp=comp[:kept], eff=eff[:kept], start=start[:a], end=end[:a], backend=backend[:a], ok=ok[:a]
            )
        for key, value in window_parts.items():
            parts[key].append(value)
        t0 = t1
        if on_progress:
            on_progress(len(buffer.boundaries), setup.iterations)
    run = _assemble(setup, seed, buffer, {k: np.concatenate(v) for k, v in parts.items()}, record)
    if inject is not None:
        run.makespan = inject.makespan(run.makespan, setup.extra_time)
        run.failures = inject.report(run.run_end, len(buffer.boundaries))
    return run


def _window(now: Setup, setup: Setup, inject) -> float:
    """Launch time one window spans: WINDOW_ATTEMPTS at the launching stage's rate, at most horizon / 80."""
    window = min(WINDOW_ATTEMPTS / now.attempts_per_s, setup.horizon / WINDOWS_PER_HORIZON)
    if inject is not None and inject.fleet is not None:
        window = min(window, inject.window)
    return window


def _next_stage(player, launcher: _Launcher, queues: list[SandboxQueue], setup: Setup, change: float, following: float):
    """Move the replay to the next stage, which starts at ``change``: its sandbox capacities, its launches at
    its rate from the next launch (``following``; no sooner than its switch time after ``change``, and from
    there for a Poisson process). Returns the stage's view and its window."""
    stage = player.advance()
    now = player.current
    at = change + stage.switch_s if launcher.poisson else max(following, change + stage.switch_s)
    launcher.restart(now, at)
    for queue, capacity in zip(queues, now.capacity):
        queue.capacity = capacity
    return now, _window(now, setup, None)


def _attempts(
    setup: Setup,
    rng: np.random.Generator,
    queues: list[SandboxQueue],
    launch: np.ndarray,
    inject,
    span,
    scratch: _Scratch,
    record: bool,
):
    """Draw one window's attempts (g per group, in launch order) and queue them for sandboxes: their starts,
    ends, backends, intake, arrivals, the groups' launches (the planned ones, or under MODEL §13's fleet
    terms when the fleet's supply lets them launch, with each member's relaunches in its occupancy) and the
    attempts' lifetimes. The lifetimes live in ``scratch`` (valid until the next window); the arrivals and
    ends too, unless the replication ``record``s them (the starts are the arrivals where nobody waits)."""
    g = setup.group_size
    n = launch.size * g
    per_group = setup.correlation == "comonotone"
    if per_group:
        life = scratch.take("life", n)
        life.reshape(-1, g)[:] = _lifetimes(setup, rng, launch.size)[:, None]  # each group's draw, g times
    else:
        life = _lifetimes(setup, rng, n, scratch.take("life", n))
    if len(setup.backends) == 1:
        backend = np.zeros(n, dtype=np.int16)
    else:
        backend = np.searchsorted(np.cumsum(setup.shares)[:-1], rng.random(n), side="right").astype(np.int16)
    ok = rng.random(n) < setup.intake if setup.intake < 1 else np.ones(n, dtype=bool)
    if setup.filter_cut:  # MODEL §14 truncated: filter: an attempt cut short at τ is not a sample
        ok &= life < setup.timeout
    if inject is not None and inject.fleet is not None:
        life, work = inject.fleet.expose(life, g)
        launch = inject.fleet.launches(launch, work, *span)
    if record:
        arrival = np.repeat(launch, g)
    else:
        arrival = scratch.take("arrival", n)
        arrival.reshape(-1, g)[:] = launch[:, None]  # as np.repeat(launch, g)
    if not queues:  # a run without sandboxes (no backends): every attempt starts as it arrives
        return arrival, arrival + life, backend, ok, arrival, launch, life
    if len(queues) == 1:
        end = arrival + life if record else np.add(arrival, life, out=scratch.take("end", n))
        start = queues[0].admit(arrival, life, end, g)  # ``arrival`` itself when no attempt waits
        if start is not arrival:
            np.add(start, life, out=end)
        return start, end, backend, ok, arrival, launch, life
    start = np.empty(n)
    for b, queue in enumerate(queues):
        mine = np.flatnonzero(backend == b)
        start[mine] = queue.admit(arrival[mine], life[mine])
    return start, start + life, backend, ok, arrival, launch, life


def _group_max(end: np.ndarray, g: int) -> np.ndarray:
    """Each group's last end: the largest of every g-th value from each member's offset (faster than a
    reduction over rows of g)."""
    comp = end[0::g].copy()
    for j in range(1, g):
        np.maximum(comp, end[j::g], out=comp)
    return comp


def _lifetimes(setup: Setup, rng: np.random.Generator, size: int, out: np.ndarray | None = None) -> np.ndarray:
    """``size`` lifetimes drawn from the occupancy law (into ``out``, when given), cut at the rollout timeout
    (MODEL §14: ``min(W, τ)``; an attempt cut short ends at τ exactly)."""
    occ = setup.occupancy
    if occ.samples is not None:
        life = np.take(occ.samples, rng.integers(0, occ.samples.size, size), out=out)
    else:
        life = rng.standard_normal(size, out=out)
        life *= occ.sigma
        life += occ.mu
        np.exp(life, out=life)
    if setup.timeout is not None:
        np.minimum(life, setup.timeout, out=life)
    return life


def _assemble(setup: Setup, seed, buffer: Buffer, cols: dict[str, np.ndarray], record: bool = True) -> Run:
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
        waited=cols["waited"][:keep],
    )
