"""MODEL.md §13 in the replay: training failures and checkpoints, replica failures and preemptions, weight sync.

Seeded Poisson injection, on a random stream of its own (``SeedSequence(seed, spawn_key=(13,))``), so the
draws of §10 are the same with or without it; without ``reliability:`` and without a preemptible pool the
simulator never builds any of this and every figure is bit-identical to §10's.

**The trainer** (exact, inside the boundary recursion). Training failures arrive at rate ``1/M_train`` in wall
time, whatever the trainer is doing. The trainer works through the updates (U per batch); after every ``τ``
seconds of work it blocks for ``checkpoint_time``. A failure costs ``restart_time`` (another failure during a
restart starts it again) and the work done since the last completed checkpoint, which is redone; a failure
while the trainer waits for a batch costs the same (its uncheckpointed work is lost all the same). So batch j
is taken at ``b_j = max(the trainer free, the batch ready)``, and the run ends when the last update's work is
done: ``T = trainer free + extra_time``. Checkpoints count work, not wall time: with ``U(m) ≥ L -
checkpoint_time`` the trainer is always busy and the two readings coincide (§13's condition).

**The fleet** (a fluid supply). Each replica of shape s delivers ``c_s = a·g_s·r_s·(1 - slowdown_s·(K-1))⁺ /
tokens_per_attempt`` attempts per second when up; the fleet ``C(t)`` is the sum over the replicas up. Replica
events (failures and preemptions) arrive per shape at ``N_s·rate_s`` and take one replica out for
``replica_restart_time``; each published version stops the whole fleet for ``weight_sync_time``. A group is
launched at its planned time, or once the fleet has served the work of the groups before it (a FIFO fluid
queue: a backlog forms while the fleet is short and is served at the fleet's full rate). Each member runs on
a replica of shape s with probability ``N_s·c_s / Σ N·c``; while its replica is up it is exposed to that
replica's events at ``rate_s``: an event at age ``e < W`` ends it, it is relaunched at once with a fresh
lifetime (keeping its sandbox, so the sandbox queue sees the member's whole occupancy) and its group waits
for it. The work the ended attempt had done, ``e/W`` of an attempt, is lost and served again by the fleet.

Two readings the window-by-window design imposes (docs/goodput.md): a member's exposure is its own (two
members on one replica are not ended by the same event: the kill rate and the work lost per replica event
have §13's means, their simultaneity is not kept), and the lost work is charged to the fleet at its group's
launch rather than at the event. A version's pause starts at its publication ``b_j`` when the window that
launches across it already knows ``b_j``; otherwise at the start of the next window (windows are at most
two cadences long when the fleet terms are on, so at most two cadences late).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.reliability import Reliability
from trainground.models.result import Plan
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput

STREAM = 13  # spawn key of the failures' random stream


@dataclass(frozen=True)
class FailurePlan:
    """What a replication injects (times in seconds, rates per second)."""

    training_mtbf: float  # M_train (inf: no training failures)
    restart: float
    checkpoint: float
    interval: float  # τ (inf: no checkpoints)
    shapes: tuple[str, ...]
    replicas: tuple[int, ...]  # N_s
    per_replica: tuple[float, ...]  # c_s, attempts/s
    rates: tuple[float, ...]  # rate_s per replica
    replica_restart: float
    weight_sync: float
    cadence: float  # L: windows are at most 2·L long when the fleet terms are on
    availability: float  # a, the base availability c_s already counts

    @property
    def trains(self) -> bool:
        return math.isfinite(self.training_mtbf)

    @property
    def fleet(self) -> bool:
        """Replica events or weight sync: the launches follow the fleet's supply."""
        return self.weight_sync > 0 or any(r > 0 and n > 0 for r, n in zip(self.rates, self.replicas))

    @property
    def capacity(self) -> float:
        return math.fsum(n * c for n, c in zip(self.replicas, self.per_replica))


def failure_plan(inst: Instance, plan: Plan) -> FailurePlan | None:
    """The injection of ``plan`` on ``inst``, None without §13's terms."""
    if not inst.reliable:
        return None
    rel = inst.reliability
    restart = checkpoint = 0.0
    mtbf = interval = math.inf
    if rel is not None and plan.training_gpus > 0:
        terms = goodput.training_terms(rel, np.array([plan.training_gpus]))
        mtbf, interval = float(terms.mtbf[0]), float(terms.interval[0])
        restart, checkpoint = rel.restart_time, rel.checkpoint_time
    replicas = {r.shape: r.replicas for r in plan.inference}
    shapes = inst.inference.shapes
    a, tokens = inst.inference.availability, inst.workload.tokens_per_attempt
    per_replica = [
        a
        * s.gpus_per_replica
        * s.tokens_per_gpu_s
        * float(calc.supply_multiplier(s.version_slowdown, plan.versions_kept))
        for s in shapes
    ]
    return FailurePlan(
        training_mtbf=mtbf,
        restart=restart,
        checkpoint=checkpoint,
        interval=interval,
        shapes=tuple(s.name for s in shapes),
        replicas=tuple(replicas.get(s.name, 0) for s in shapes),
        per_replica=tuple(c / tokens for c in per_replica),
        rates=tuple(float(r) for r in goodput.replica_event_rates(inst)),
        replica_restart=(rel or Reliability()).replica_restart_time,
        weight_sync=0.0 if rel is None else rel.weight_sync_time,
        cadence=plan.cadence_s,
        availability=a,
    )


def stream(seed) -> np.random.Generator:
    """The failures' generator for a replication seeded with ``seed`` (an int or a list of ints)."""
    entropy = list(seed) if isinstance(seed, (list, tuple)) else seed
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(STREAM,)))


class Trainer:
    """The trainer's clock under failures and checkpoints (see the module docstring)."""

    def __init__(self, fp: FailurePlan, rng: np.random.Generator):
        self.fp, self.rng = fp, rng
        self.free = 0.0
        self.since = 0.0  # work since the last completed checkpoint
        self.next_failure = self._gap()
        self.failures = 0
        self.lost = {"training_restart": 0.0, "training_rework": 0.0, "checkpoints": 0.0}

    def _gap(self) -> float:
        return float(self.rng.exponential(self.fp.training_mtbf)) if self.fp.trains else math.inf

    def _restart(self, t: float) -> float:
        """A failure at ``t``: the time the trainer is back (a failure during the restart starts it again)."""
        while True:
            self.failures += 1
            self.next_failure = t + self._gap()
            back = t + self.fp.restart
            if self.next_failure >= back:
                self.lost["training_restart"] += back - t
                return back
            self.lost["training_restart"] += self.next_failure - t
            t = self.next_failure

    def _lose(self, at: float, done: float) -> tuple[float, float]:
        """A failure at ``at`` with ``done`` seconds of uncheckpointed work: (back at, work to redo)."""
        redo = self.since + done
        self.lost["training_rework"] += redo
        self.since = 0.0
        return self._restart(at), redo

    def _work(self, t: float, work: float) -> float:
        """Do ``work`` seconds of work from ``t`` with checkpoints and failures; when it is done."""
        fp = self.fp
        while work > 0:
            step = min(work, fp.interval - self.since)
            if self.next_failure < t + step:
                t, redo = self._lose(self.next_failure, self.next_failure - t)
                work += redo
                continue
            t, work, self.since = t + step, work - step, self.since + step
            if self.since >= fp.interval:
                if self.next_failure < t + fp.checkpoint:
                    t, redo = self._lose(self.next_failure, 0.0)
                    work += redo
                    continue
                t += fp.checkpoint
                self.lost["checkpoints"] += fp.checkpoint
                self.since = 0.0
        return t

    def take(self, ready: float) -> float:
        """When the trainer takes a batch ready at ``ready``: failures while it waits are handled first."""
        t = self.free
        while self.next_failure < ready:
            t, redo = self._lose(max(self.next_failure, t), 0.0)
            t = self._work(t, redo)
        return max(t, ready)

    def update(self, b: float, work: float) -> None:
        self.free = self._work(b, work)


class Fleet:
    """The fleet's supply and the members' exposure to replica events (see the module docstring)."""

    def __init__(self, fp: FailurePlan, rng: np.random.Generator, occupancy: calc.Occupancy, horizon: float):
        self.fp, self.rng, self.occupancy = fp, rng, occupancy
        self.capacity = fp.capacity
        starts, shape = [], []
        for s, (n, rate) in enumerate(zip(fp.replicas, fp.rates)):
            if n > 0 and rate > 0:
                count = rng.poisson(n * rate * horizon)
                starts.append(np.sort(rng.uniform(0.0, horizon, count)))
                shape.append(np.full(count, s, dtype=np.int64))
        self.events = np.concatenate(starts) if starts else np.empty(0)
        self.event_shape = np.concatenate(shape) if shape else np.empty(0, dtype=np.int64)
        order = np.argsort(self.events, kind="stable")
        self.events, self.event_shape = self.events[order], self.event_shape[order]
        self.loss = np.array([c for c in fp.per_replica])[self.event_shape]
        self.backlog = 0.0
        self.pauses: list[float] = []
        weights = np.array([n * c for n, c in zip(fp.replicas, fp.per_replica)])
        self.cumulative = np.cumsum(weights) / weights.sum() if weights.sum() > 0 else np.ones(1)
        self.kills = np.zeros(len(fp.shapes), dtype=np.int64)
        self.lost_work = np.zeros(len(fp.shapes))  # attempts' worth of work redone, per shape
        self.delay = 0.0  # Σ (launch - planned launch) over groups
        self.groups = 0

    def published(self, b: float) -> None:
        if self.fp.weight_sync > 0:
            self.pauses.append(b)

    def expose(self, life: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
        """Each member's whole occupancy (ended attempts and their relaunches) and each group's work in
        attempts (g plus the work its members lost). One uniform per attempt: it is ended iff u < P(E < W) =
        1 - exp(-rate·W), at age E = -log(1 - u)/rate (E's law given E < W)."""
        n = life.size
        rates = np.array(self.fp.rates)
        if self.cumulative.size > 1:
            shape = np.searchsorted(self.cumulative[:-1], self.rng.random(n), side="right")
        else:
            shape = np.zeros(n, dtype=np.int64)
        rate = rates[shape]
        total = life.copy()
        lost = np.zeros(n)
        u = self.rng.random(n)
        ended = np.flatnonzero(u < -np.expm1(-rate * life))
        u, current = u[ended], life[ended]
        size = len(self.fp.shapes)
        while ended.size:
            r = rate[ended]
            age = -np.log1p(-u) / r
            share = age / current
            lost[ended] += share
            self.kills += np.bincount(shape[ended], minlength=size)
            self.lost_work += np.bincount(shape[ended], weights=share, minlength=size)
            fresh = _lifetimes(self.occupancy, self.rng, ended.size)
            total[ended] += age - current + fresh
            u = self.rng.random(ended.size)
            again = u < -np.expm1(-r * fresh)
            ended, u, current = ended[again], u[again], fresh[again]
        return total, g + lost.reshape(-1, g).sum(axis=1)

    def launches(self, planned: np.ndarray, work: np.ndarray, t0: float, t1: float) -> np.ndarray:
        """Launch times of the window [t0, t1)'s groups planned at ``planned`` with ``work`` attempts each."""
        pauses = self._pauses(t0, t1)
        if self.capacity <= 0:
            return planned
        if planned.size == 0:
            xp, ap = self._supply(t0, t1, pauses)
            self.backlog = max(0.0, self.backlog - float(ap[-1]))
            return planned
        span = max(float(planned[-1]) - t0, 1.0)
        while True:
            xp, ap = self._supply(t0, t0 + 2 * span, pauses)
            before = np.concatenate(([0.0], np.cumsum(work)[:-1]))
            at = np.interp(planned, xp, ap)
            start = before + np.maximum(self.backlog, np.maximum.accumulate(at - before))
            if start[-1] + work[-1] < ap[-1]:
                break
            span *= 2
        i = np.searchsorted(ap, start, side="right") - 1
        slope = np.diff(ap) / np.diff(xp)
        launched = np.maximum(planned, xp[i] + (start - ap[i]) / slope[i])
        end_of_window = float(np.interp(t1, xp, ap))
        self.backlog = max(0.0, float(start[-1] + work[-1]) - end_of_window)
        self.delay += float((launched - planned).sum())
        self.groups += planned.size
        return launched

    def _pauses(self, t0: float, t1: float) -> np.ndarray:
        """Pause starts in the window [t0, t1): a publication the windows already passed starts at ``t0``;
        later ones wait for their window."""
        ws = self.fp.weight_sync
        known = sorted(self.pauses)
        late = [p for p in known if p < t0]
        due = [p for p in known if t0 <= p < t1]
        self.pauses = [p for p in known if p >= t1]
        starts = [t0 + k * ws for k in range(len(late))] + due
        return np.array(sorted(starts))

    def _supply(self, t0: float, t1: float, pauses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Breakpoints and cumulative supply (attempts) from ``t0`` (0 there) to ``t1``; pauses beyond the
        window's span are kept for the next call."""
        restart = self.fp.replica_restart
        lo = int(np.searchsorted(self.events, t0 - restart, side="left"))
        hi = int(np.searchsorted(self.events, t1, side="left"))
        down, loss = self.events[lo:hi], self.loss[lo:hi]
        up = down + restart
        times = np.concatenate(([t0, t1], down, up, pauses, pauses + self.fp.weight_sync))
        times = np.unique(np.clip(times, t0, t1))
        mid = (times[:-1] + times[1:]) / 2
        short = np.zeros(mid.size)
        if down.size:
            edges = np.concatenate((down, up))
            delta = np.concatenate((loss, -loss))
            order = np.argsort(edges, kind="stable")
            level = np.cumsum(delta[order])
            where = np.searchsorted(edges[order], mid, side="right") - 1
            short = np.where(where >= 0, level[np.maximum(where, 0)], 0.0)
        rate = np.maximum(self.capacity - short, 0.0)
        if pauses.size:
            ends = pauses + self.fp.weight_sync
            k = np.searchsorted(pauses, mid, side="right") - 1
            rate[(k >= 0) & (mid < ends[np.maximum(k, 0)])] = 0.0
        keep = np.concatenate(([True], rate > 0)) | np.concatenate((rate > 0, [True]))
        ap = np.concatenate(([0.0], np.cumsum(rate * np.diff(times))))
        return _strict(times[keep], ap[keep])

    def summary(self, end: float, iterations: int) -> dict:
        """Replica events, downtime and lost work per shape up to ``end``, and the weight-sync pauses."""
        fp = self.fp
        within = self.events < end
        out_s = np.minimum(self.events[within] + fp.replica_restart, end) - self.events[within]
        shape = self.event_shape[within]
        failures, availability, lost = {}, {}, {}
        for s, name in enumerate(fp.shapes):
            mine = shape == s
            down = float(out_s[mine].sum())
            rework = float(self.lost_work[s] / fp.per_replica[s]) if fp.per_replica[s] > 0 else 0.0
            failures[name] = int(mine.sum())
            lost[f"replica_restart:{name}"] = down
            lost[f"replica_rework:{name}"] = rework
            exposure = fp.replicas[s] * end
            availability[name] = fp.availability * (1.0 - (down + rework) / exposure) if exposure > 0 else None
        lost["weight_sync"] = fp.weight_sync * iterations
        return {
            "replica_failures": failures,
            "relaunched_attempts": {name: int(k) for name, k in zip(fp.shapes, self.kills)},
            "replica_lost_s": lost,
            "availability": availability,
            "launch_delay_mean_s": self.delay / self.groups if self.groups else 0.0,
        }


def _strict(xp: np.ndarray, ap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints with zero-length segments removed (the right inverse needs positive widths)."""
    wide = np.concatenate((np.diff(xp) > 0, [True]))
    return xp[wide], ap[wide]


def _lifetimes(occ: calc.Occupancy, rng: np.random.Generator, size: int) -> np.ndarray:
    if occ.samples is not None:
        return occ.samples[rng.integers(0, occ.samples.size, size)]
    return np.exp(occ.mu + occ.sigma * rng.standard_normal(size))


class Injection:
    """One replication's failures: the trainer, the fleet (when its terms are on), what they cost."""

    def __init__(self, fp: FailurePlan, seed, occupancy: calc.Occupancy, horizon: float):
        rng = stream(seed)
        self.fp = fp
        self.trainer = Trainer(fp, rng)
        self.fleet = Fleet(fp, rng, occupancy, horizon) if fp.fleet else None

    @property
    def window(self) -> float:
        """The longest launch window under the fleet terms: two cadences."""
        return self.fp.cadence * 2

    def batch_taken(self, ready: float, update: float) -> float:
        """The boundary of a batch ready at ``ready``: the trainer takes it, updates, publishes."""
        b = self.trainer.take(ready)
        self.trainer.update(b, update)
        if self.fleet is not None:
            self.fleet.published(b)
        return b

    def makespan(self, steady: float, extra: float) -> float:
        """The run's end: the last update's work done (inf if the run did not finish), plus extra_time."""
        return steady if not math.isfinite(steady) else self.trainer.free + extra

    def report(self, end: float, iterations: int) -> dict:
        """The replication's ``failures`` and ``time_lost_s`` (MODEL §13 in simulate's output)."""
        t = self.trainer
        out = {
            "failures": {"training": t.failures},
            "time_lost_s": dict(t.lost),
            "training_goodput": None,
        }
        if self.fp.trains and end > 0:
            out["training_goodput"] = 1.0 - sum(t.lost.values()) / end
        if self.fleet is not None:
            fleet = self.fleet.summary(end, iterations)
            out["failures"].update(fleet.pop("replica_failures"))
            out["time_lost_s"].update(fleet.pop("replica_lost_s"))
            out.update(fleet)
        return out
