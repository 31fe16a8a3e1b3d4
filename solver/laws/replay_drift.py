"""The model's estimate of how late its replays end (MODEL.md §11, the start Δ_0 and ``hold.predicted_makespan_s``).

The plan's update leaves little slack (``L - U(m)`` is a fraction of a second for the cheapest plan), so
the trainer cannot catch up a batch that arrives late. Three terms make the replays of §10 end after
``T`` (docs/model.md, "The replays' lateness"):

1. The fill of the pipeline: after the first batch, whole groups complete at the steady rate only once
   the slow ones have had time to finish; the batch-ready times fall behind ``fill + j·L`` by a
   constant that the trainer never wins back.
2. The wait of a nearly saturated server: the batch-ready times fluctuate (whole groups, the drop rule,
   the intake draw), so batches queue for the trainer; Kingman's heavy-traffic mean wait with Siegmund's
   correction, ``W = σ²/(2(L_a - U)) - 0.5826·σ`` (deterministic service), σ² the variance of the
   ready-time increments.
3. The drop rate the replay really sees: a batch that waits ``W`` for the trainer is consumed ``W`` later
   and its version floor ``b_{j-K-1}`` is ``W`` later, so more groups overrun ``K``; fewer effective
   trajectories per second stretch the ready-time spacing to ``L_a > L``, which feeds back into ``W``.

Terms 1 and 3 are read off one fluid (mean) recursion of §10's batch boundaries with the wait ``W`` added to
each ready time; ``W`` and ``L_a`` solve Kingman's relation and the rate balance together. The verifier
shares nothing with this module.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.laws import startup
from trainground.solver.laws.calculus import Occupancy, occupancy_of

TABLE_POINTS = 8193  # points of the completed-group-time table the fluid recursion interpolates
WAIT_BISECTIONS = 60  # bisection steps of Kingman's fixed point (the wait to well below a millisecond)
LADDER = 0.5825971579390106  # -ζ(1/2)/sqrt(2π): Siegmund's correction of the diffusion wait, in units of σ
SPACING_STEPS = 40  # bisection steps of the rate balance L_a·(1 - d(W, L_a)) = L·(1 - d(0))


@dataclass(frozen=True)
class ReplayEstimate:
    """What the model expects of its plan's replays (s): the median lateness ``drift_s`` (makespan - T), the
    mean wait of a batch for the trainer ``wait_s``, the ready-time spacing ``spacing_s`` (L_a), the sd of a
    ready-time increment ``increment_sd_s`` and the start ``start_s`` (drift plus the wait's quantile)."""

    drift_s: float
    wait_s: float
    spacing_s: float
    increment_sd_s: float
    start_s: float

    def predicted_makespan(self, plan: Plan) -> float:
        return plan.makespan_s + self.drift_s


def replay_estimate(inst: Instance, plan: Plan, metrics: Metrics) -> ReplayEstimate | None:
    """The estimate for ``plan`` (None where the model has none: stages, failure injection, a run regime other
    than async drop over uncut lifetimes (MODEL §14: batch and admission runs, a rollout timeout), or a plan whose
    batches cannot form at the model's rates)."""
    if inst.stages is not None or inst.reliable or metrics.attempts_per_s <= 0:
        return None
    r = inst.regime
    if r is not None and (r.mode != "async" or r.staleness != "drop" or r.rollout_timeout is not None):
        return None
    w, fr = inst.workload, inst.freshness
    occ = occupancy_of(inst.environment.occupancy)
    drop = fr.overrun_policy == "drop"
    fill = float(startup.run_fill(inst, metrics.attempts_per_s))
    kept = plan.age_limit or plan.versions_kept  # under in-flight updates the age limit K is what drops (§14)
    shape = _Shape.of(occ, w.group_size, fr.group_correlation, kept, plan.cadence_s, drop, fill)
    if shape is None:
        return None
    d0 = shape.drop(0.0, plan.cadence_s)
    if d0 >= 1.0:
        return None
    sd = increment_sd(w.batch_trajectories, w.group_size, w.intake_rate, d0, metrics.attempts_per_s)
    update = metrics.update_time_s
    wait = kingman_wait(shape, d0, update, sd)
    spacing = shape.spacing(wait, d0)
    need = w.batch_trajectories / (w.intake_rate * metrics.attempts_per_s)
    last = fluid_last_boundary(shape, need, w.iterations, update, wait)
    if not math.isfinite(last):
        return None
    drift = last + update + inst.schedule.extra_time - plan.makespan_s
    # the last batch's wait is exponential in heavy traffic (mean W): its on_time quantile, not its mean
    tail = wait * (math.log(1.0 / (1.0 - inst.planning.on_time)) - 1.0)
    return ReplayEstimate(drift, wait, spacing, sd, max(0.0, drift + tail))


def increment_sd(batch: int, group_size: int, intake: float, drop: float, attempts_per_s: float) -> float:
    """sd (s) of the time between two batch-ready instants: a batch needs N groups, X effective members each
    (Binomial(g, p), none when the group is dropped), so Var N ≈ B·Var X/E[X]³ (renewal counting), groups
    launched every g/R_raw s."""
    mean = group_size * intake * (1.0 - drop)
    second = (group_size * intake * (1.0 - intake) + (group_size * intake) ** 2) * (1.0 - drop)
    var_groups = batch * (second - mean**2) / mean**3
    return math.sqrt(max(var_groups, 0.0)) * group_size / attempts_per_s


def kingman_wait(shape: _Shape, d0: float, update: float, sd: float) -> float:
    """The mean wait of a batch for the trainer: Kingman's heavy-traffic wait less Siegmund's ladder
    correction, W = σ²/(2(L_a(W) - U)) - 0.5826·σ (at least 0), with the spacing L_a(W) that the wait's extra
    drops set: 2·(W + 0.5826·σ)·(L_a(W) - U) grows with W, so the least W where it reaches σ² is bracketed by
    doubling and found by bisection (at most (K + 1)·L, where every group would be dropped)."""
    if sd <= 0:
        return 0.0
    top = (shape.kept + 1) * shape.cadence

    def enough(wait: float) -> bool:
        slack = shape.spacing(wait, d0) - update
        return slack > 0 and 2 * (wait + LADDER * sd) * slack >= sd * sd

    hi = 1.0
    while not enough(hi):
        if hi >= top:
            return top
        hi = min(2 * hi, top)
    lo = hi / 2 if hi > 1.0 else 0.0
    for _ in range(WAIT_BISECTIONS):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def fluid_last_boundary(shape: _Shape, need: float, iterations: int, update: float, wait: float) -> float:
    """b_{n-1} of the mean recursion of §10: batch j takes the groups completing in (c_{j-1}, c_j] that were
    launched at or after its floor f_j = b_{j-K-1} (0 before; no floor under downweight), so c_j solves
    H(c_j - f_j) - H(c_{j-1} - f_j) = B/(p·R_raw), H(t) = ∫_0^t F_grp(s) ds (launches R_raw/g a second, g
    members each); b_0 = c_0 and b_j = max(b_{j-1} + U, c_j + W)."""
    bounds: list[float] = []
    previous = 0.0
    for j in range(iterations):
        floor = bounds[j - shape.kept - 1] if shape.drops and j > shape.kept else 0.0
        ready = floor + shape.reach(need + shape.completed(previous - floor))
        bounds.append(ready if j == 0 else max(bounds[-1] + update, ready + wait))
        previous = ready
    return bounds[-1]


@dataclass(frozen=True)
class _Shape:
    """The group completion law and the plan's (K, L) that the drop rule reads, with H(t) = ∫_0^t F_grp(s) ds
    tabulated on [0, top]; beyond, the larger of its two lower bounds H(top) + (t - top)·F_grp(top) and
    t - E[M] (H(t) = t - E[M] + ∫_t^∞ S_M), which meet H as t grows (no floor under downweight: t grows
    with the run)."""

    group_size: int
    kept: int
    cadence: float
    drops: bool
    xs: list[float]
    hs: list[float]
    slope: float
    mean: float  # E[M]

    @classmethod
    def of(
        cls, occ: Occupancy, group_size: int, correlation: str, kept: int, cadence: float, drops: bool, fill: float
    ) -> _Shape | None:
        top = fill + 3.0 * (kept + 4) * cadence
        x = np.linspace(0.0, top, TABLE_POINTS)
        ramp = startup.completed_group_time(occ, x, group_size, correlation)
        slope = float(startup.group_completion_cdf(occ, top, group_size, correlation))
        if slope <= 0:
            return None
        mean = startup.group_completion_mean(occ, group_size, correlation)
        return cls(group_size, kept, cadence, drops, x.tolist(), np.asarray(ramp, dtype=float).tolist(), slope, mean)

    def completed(self, t: float) -> float:
        """H(t)."""
        xs, hs = self.xs, self.hs
        if t <= 0:
            return 0.0
        if t >= xs[-1]:
            return max(hs[-1] + (t - xs[-1]) * self.slope, t - self.mean)
        i = min(bisect.bisect_right(xs, t), len(xs) - 1)
        return hs[i - 1] + (t - xs[i - 1]) / (xs[i] - xs[i - 1]) * (hs[i] - hs[i - 1])

    def reach(self, h: float) -> float:
        """The least t with H(t) = h (h > 0)."""
        xs, hs = self.xs, self.hs
        if h >= hs[-1]:
            return min(xs[-1] + (h - hs[-1]) / self.slope, h + self.mean)
        i = max(bisect.bisect_right(hs, h), 1)
        span = hs[i] - hs[i - 1]
        return xs[i - 1] + (0.0 if span <= 0 else (h - hs[i - 1]) / span * (xs[i] - xs[i - 1]))

    def limited(self, t: float) -> float:
        """E[min(M, t)] = t - H(t), M a group's completion time."""
        t = max(t, 0.0)
        return t - self.completed(t)

    def drop(self, wait: float, spacing: float) -> float:
        """Share of groups dropped when a batch is consumed ``wait`` after it is ready and batches are
        ``spacing`` apart: P(floor(u + (M + wait)/spacing) > K) = ∫_K^{K+1} P(M + wait > v·spacing) dv."""
        if not self.drops:
            return 0.0
        K = self.kept
        share = (self.limited((K + 1) * spacing - wait) - self.limited(K * spacing - wait)) / spacing
        return min(max(share, 0.0), 1.0)

    def spacing(self, wait: float, d0: float) -> float:
        """L_a: the ready-time spacing at which the kept groups supply B per batch when each waits ``wait``,
        the root of L_a·(1 - d(wait, L_a)) = L·(1 - d(0)) (the left side grows with L_a; bisection from L)."""
        goal = self.cadence * (1.0 - d0)

        def short(c: float) -> bool:
            return c * (1.0 - self.drop(wait, c)) < goal

        lo, hi = self.cadence, self.cadence
        while short(hi):
            lo, hi = hi, 2 * hi
            if hi > 1e3 * self.cadence:
                return math.inf
        for _ in range(SPACING_STEPS):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if short(mid) else (lo, mid)
        return hi
