"""What each scenario of MODEL.md §9 asks of a plan at its deadline pace ``L_dl`` (the per-scenario
coefficients a chance-constrained model reads, :mod:`solver.confidence.table`). No pyomo.

A plan keeping ``K`` versions at cadence ``L`` with ``m`` training groups is on time in scenario s iff its
realised cadence ``L_s`` (MODEL §9) is at most ``L_dl``, the cadence at which the scenario's makespan ``T_s``
plus the allowance Δ of MODEL §11 meets its deadline (``T_s`` grows with ``L_s``). So: ``L <= L_dl``, the
update time keeps up at ``L_dl``, and §3's rows 2, 3, 5, 6 and 7 hold there with the scenario's values
(:func:`solver.uncertainty.scenarios.evaluate` reaches the same verdict by its realised cadence).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws.goodput import inverse_goodput, weight_sync_kept
from trainground.solver.tolerances import REL_TOL, ROOT_VALUE_TOL, ROOT_WIDTH_TOL
from trainground.solver.uncertainty import goodput as goodput
from trainground.solver.uncertainty.scenarios import (
    Scenarios,
    Values,
    exceedance_limit,
    group_drop,
    update_time,
    values_of,
)


@dataclass(frozen=True)
class AtDeadline:
    """Per scenario (axis 0) and versions kept (axis 1, ``kept``): what a plan keeping ``K`` versions must
    meet at the scenario's deadline pace ``L_dl`` to be on time (docs/model.md §9). A plan at cadence ``L``
    is on time in scenario s iff ``L <= pace[s, K]``, its update time keeps up at ``pace[s, K]``,
    ``fresh[s, K]``, its token supply ``Σ x_i·supply_per_replica[s, K, i] >= token_demand[s, K]``, and its
    hosts hold ``level[s, K]`` environments (spread by the backends' shares) and ``peak[s, K]`` under
    §3.5-3.6 with the scenario's host fields (``Scenarios.value``).

    ``L_dl`` solves ``T(L_dl) + Δ = deadline`` with T of MODEL §2 (``n·L/γ + extra_time``) or, with start-up
    counted, of §8 (``fill(L, K) + ((n - 1)·L + U(m))/γ + extra_time``), γ the training goodput of §13 (1
    without it). Given the plan's training groups ``m``, that is exact; without them (``groups`` None), U = 0
    and γ = 1 give the largest pace any group count can have (every need is then a lower bound). Under hold
    the level is E^hold (§11 item 2) at the scenario's lifetimes; the supply per replica counts §13's a_s and
    weight sync at the pace."""

    kept: np.ndarray  # (K,)
    pace: np.ndarray  # (S, K) L_dl, s
    attempts: np.ndarray  # (S, K) R_raw at L_dl, 1/s (inf where every group is dropped)
    token_demand: np.ndarray  # (S, K) tokens/s
    supply_per_replica: np.ndarray  # (S, K, shapes) tokens/s one replica delivers
    level: np.ndarray  # (S, K) in-flight environments the hosts hold, spread by the backends' shares
    peak: np.ndarray  # (S, K) peak environments, spread the same way
    fresh: np.ndarray  # (S, K) freshness limits of §3.7 hold at L_dl
    keeps_up: np.ndarray | None = None  # (S, K) the groups' update time keeps up at L_dl (None: no groups given)
    paces: Pace | None = None  # the paces with the fill at each (a start for other group counts' paces)


def at_deadline(
    inst: Instance,
    scen: Scenarios,
    kept=None,
    allowance: float = 0.0,
    groups: int | None = None,
    values: Values | None = None,
    start: Pace | None = None,
) -> AtDeadline:
    """What each scenario asks at its deadline pace with the run-variance allowance ``allowance`` (MODEL §11),
    for a plan with ``groups`` training groups (None: at the largest pace of any, see :class:`AtDeadline`);
    ``values``: ``values_of(inst, scen)`` when the caller has it; ``start``: the paces without groups, when the
    caller has them (the root is sought from there)."""
    v = values_of(inst, scen) if values is None else values
    fr = inst.freshness
    Ks = np.arange(1, fr.max_versions_kept + 1) if kept is None else np.asarray(kept, dtype=int)
    update, progress = _training(inst, scen, groups)
    found = deadline_pace(inst, v, Ks, allowance, update, progress, start)
    pace = found.pace
    q = np.stack([v.lifetimes.exceedance(pace[:, j], int(K)) for j, K in enumerate(Ks)], 1)
    drop = group_drop(inst, q)
    fresh = q <= exceedance_limit(inst, v)[:, None]
    if v.max_mean_gap is not None:
        gap = calc.mean_version_gap(v.w_use[:, None], pace, fr.gap_convention)
        fresh &= gap <= v.max_mean_gap[:, None] * (1 + REL_TOL)
    attempts = _attempts(inst, v, pace, drop)
    gpus = np.array([s.gpus_per_replica for s in inst.inference.shapes], dtype=float)
    mult = calc.supply_multiplier(v.slowdown[:, None, :], Ks[None, :, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        sync = weight_sync_kept(v.weight_sync[:, None], pace)  # MODEL §13: generation paused per version
    supply = v.shape_availability[:, None, :] * gpus[None, None, :] * v.rate[:, None, :] * mult * sync[:, :, None]
    if inst.holds:
        life = v.lifetimes
        level = holding.hold_level(inst, attempts, life.mean[:, None], life.pair_min_mean()[:, None])
    else:
        level = attempts * v.w_use[:, None]
    keeps_up = None
    if update is not None and progress is not None:
        keeps_up = (update[:, None] <= pace * (1 + REL_TOL)) & np.isfinite(progress)[:, None]
    return AtDeadline(
        kept=Ks,
        pace=pace,
        attempts=attempts,
        token_demand=attempts * v.tokens[:, None],
        supply_per_replica=supply,
        level=level,
        peak=level * v.peak_to_mean[:, None],
        fresh=fresh,
        keeps_up=keeps_up,
        paces=found,
    )


def _training(inst: Instance, scen: Scenarios, groups: int | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(S,) the update time U(m) and 1/γ(m) of ``groups`` training groups per scenario (inf where γ <= 0); both
    None without groups."""
    if groups is None:
        return None, None
    gpus = groups * inst.training.gpus_per_group
    update = np.nan_to_num(update_time(inst, scen, gpus), nan=np.inf)
    gamma = goodput.training_goodput(inst, scen, gpus)
    return update, inverse_goodput(gamma)


def _attempts(inst: Instance, v: Values, cadence: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """(S, K) R_raw = B / (L·p·(1 - drop)) at cadences ``cadence`` (inf where every group is dropped)."""
    intake = v.intake[:, None] * (1.0 - drop)
    with np.errstate(divide="ignore"):
        return np.where(
            intake > 0, inst.workload.batch_trajectories / (cadence * np.where(intake > 0, intake, 1.0)), np.inf
        )


PACE_ROUNDS = 60  # safeguarded secant steps of deadline_pace at most (a handful reach the root to the last bits)


@dataclass(frozen=True)
class Pace:
    """(S, K) deadline paces and, with start-up counted, the fill at each (nan where unknown): the start of the
    paces of the same scenarios with an update time and goodput (:func:`deadline_pace`'s ``start``)."""

    pace: np.ndarray
    fill: np.ndarray


def deadline_pace(
    inst: Instance,
    v: Values,
    Ks: np.ndarray,
    allowance: float = 0.0,
    update: np.ndarray | None = None,
    progress: np.ndarray | None = None,
    start: Pace | None = None,
) -> Pace:
    """(S, K) L_dl with ``T(L_dl) + Δ = deadline``: ``n·L·c + extra_time`` (MODEL §2, §13), or with start-up
    counted ``fill(L, K) + ((n - 1)·L + U)·c + extra_time`` (§8), c = 1/γ (``progress``, per scenario; 1 when
    None) and U the update time (``update``; 0 when None). The fill grows with L, so T does: one root, found by
    a secant kept inside a bracket; the root is the largest pace whose T does not pass the room. 0 where even a
    vanishing cadence misses (no plan is on time there). ``start``: the paces without update time and goodput
    (each at least the root sought), which the bracket then starts from."""
    w = inst.workload
    c = np.ones(v.deadline.shape) if progress is None else progress
    u = np.zeros(v.deadline.shape) if update is None else update
    with np.errstate(invalid="ignore"):
        room = (v.deadline - allowance - v.extra) / c  # the trainer-paced part's room, in seconds of progress
    shape = (room.size, Ks.size)
    if not inst.counts_startup:
        steady = np.where(np.isfinite(room), room / w.iterations, 0.0)
        return Pace(np.broadcast_to(np.maximum(steady, 0.0)[:, None], shape).copy(), np.full(shape, np.nan))
    pace, fill = np.zeros(shape), np.full(shape, np.nan)
    for j, K in enumerate(Ks):
        first = None if start is None else (start.pace[:, j], start.fill[:, j])
        pace[:, j], fill[:, j] = _startup_pace(inst, v, int(K), room, u, c, first)
    return Pace(pace, fill)


def _startup_pace(
    inst: Instance,
    v: Values,
    K: int,
    room: np.ndarray,
    u: np.ndarray,
    c: np.ndarray,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(S,) the root of ``g(L) = fill(L, K)/c + (n - 1)·L + U - room`` (increasing in L) and the fill there,
    bracketed by a pace with g >= 0 (``start``'s where its known fill gives that, else the pace without fill)
    and one fixed-point step below it (by doublings from 0 when n = 1)."""
    n = inst.workload.iterations
    live = np.isfinite(room) & np.isfinite(c) & (room - u > 0)
    rows = np.flatnonzero(live)
    pace, fill = np.zeros(room.shape), np.full(room.shape, np.nan)
    if rows.size == 0:
        return pace, fill
    life, r, uu, cc = v.lifetimes.take(rows), room[rows], u[rows], c[rows]
    sub = _Sub(inst, v, rows, life, K)

    def g(L: np.ndarray) -> np.ndarray:
        return sub.fill(L) / cc + (n - 1) * L + uu - r

    if n > 1:  # hi: g >= 0; lo: one fixed-point step down from it (g <= 0, as the fill grows with L)
        hi = (r - uu) / (n - 1)
        known, g_known = np.zeros(rows.size, dtype=bool), np.zeros(rows.size)
        if start is not None:
            L0, f0 = start[0][rows], start[1][rows]
            with np.errstate(invalid="ignore"):
                g_known = f0 / cc + (n - 1) * L0 + uu - r
            known = np.isfinite(g_known) & (g_known > 0) & (L0 > 0)
            hi = np.where(known, L0, hi)
        g_hi = g_known if known.all() else np.where(known, g_known, g(hi))
        lo = np.maximum(hi - g_hi / (n - 1), 0.0)
        g_lo = np.where(lo > 0, g(lo), -np.inf)
    else:
        lo, g_lo, hi = np.zeros(rows.size), np.full(rows.size, -np.inf), np.maximum(r - uu, 1.0)
        g_hi = g(hi)
        for _ in range(PACE_ROUNDS):  # widen until the bracket holds the root
            short = g_hi < 0
            if not short.any():
                break
            lo, hi = np.where(short, hi, lo), np.where(short, 2 * hi, hi)
            g_hi = np.where(short, g(hi), g_hi)
    pace[rows], g_root = _secant(g, lo, hi, g_lo, g_hi, ROOT_VALUE_TOL * r)
    with np.errstate(invalid="ignore"):
        fill[rows] = np.where(np.isfinite(g_root), (g_root + r - (n - 1) * pace[rows] - uu) * cc, np.nan)
    return pace, fill


def _secant(
    g, lo: np.ndarray, hi: np.ndarray, g_lo: np.ndarray, g_hi: np.ndarray, close: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per entry the largest L in ``[lo, hi]`` with g(L) <= 0 (g increasing, g(hi) >= 0) and g there (-inf when
    the lower end never moved from an unknown value), to the last bits (the
    bracket narrower than ROOT_WIDTH_TOL of it, or g(lo) within ``close`` of 0): regula falsi with the Illinois rule (an
    end kept twice in a row has its value halved, so both ends move), a bisection where the lower end's value is
    unknown or the step would leave the bracket."""
    kept = np.zeros(lo.shape, dtype=int)  # which end the last step kept: -1 lower, 1 upper, 0 none yet
    for _ in range(PACE_ROUNDS):
        width = hi - lo
        if np.all((width <= ROOT_WIDTH_TOL * np.maximum(hi, 1.0)) | (g_lo >= -close)):
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            step = hi - g_hi * width / (g_hi - g_lo)
        inside = np.isfinite(step) & (step > lo) & (step < hi)
        L = np.where(inside, step, lo + 0.5 * width)
        value = g(L)
        below = value <= 0
        g_hi = np.where(below & (kept == 1), 0.5 * g_hi, g_hi)  # the upper end kept again: halve its value
        g_lo = np.where(~below & (kept == -1), 0.5 * g_lo, g_lo)
        lo, g_lo = np.where(below, L, lo), np.where(below, value, g_lo)
        hi, g_hi = np.where(below, hi, L), np.where(below, g_hi, value)
        kept = np.where(below, 1, -1)
    return lo, g_lo


class _Sub:
    """The fill of MODEL §8 at cadences L for K, in the scenarios ``rows`` (their lifetimes ``life``)."""

    def __init__(self, inst: Instance, v: Values, rows: np.ndarray, life, K: int):
        self.inst, self.life, self.K = inst, life, K
        self.intake = v.intake[rows]

    def fill(self, L: np.ndarray) -> np.ndarray:
        inst = self.inst
        w, fr = inst.workload, inst.freshness
        at = L > 0
        Lp = np.where(at, L, 1.0)
        q = self.life.exceedance(Lp, self.K)
        intake = self.intake * (1.0 - group_drop(inst, q))
        with np.errstate(divide="ignore"):
            R = np.where(intake > 0, w.batch_trajectories / (Lp * np.where(intake > 0, intake, 1.0)), np.inf)
        out = np.full(L.shape, np.inf)
        ok = at & np.isfinite(R)
        if ok.all():
            return self.life.fill(R, w.batch_trajectories, w.group_size, self.intake, fr.group_correlation)
        if ok.any():
            out[ok] = self.life.take(ok).fill(
                R[ok], w.batch_trajectories, w.group_size, self.intake[ok], fr.group_correlation
            )
        return np.where(at, out, 0.0)
