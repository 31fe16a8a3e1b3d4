"""What each scenario of MODEL.md §9 asks of a plan at its deadline pace ``L_dl`` (the per-scenario
coefficients a chance-constrained model reads, :mod:`solver.confidence_table`). No pyomo.

A plan keeping ``K`` versions at cadence ``L`` is on time in scenario s iff ``L <= L_dl[s, K]`` and §3's
rows 2, 3, 5, 6 and 7 hold there with the scenario's values (:func:`solver.scenarios.evaluate` reaches the
same verdict by its realised cadence).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver import holding
from trainground.solver.scenarios import Scenarios, Values, exceedance_limit, group_drop, values_of
from trainground.solver.tolerances import REL_TOL


@dataclass(frozen=True)
class AtDeadline:
    """Per scenario (axis 0) and versions kept (axis 1, ``kept``): what a plan keeping ``K`` versions must
    meet at the scenario's deadline pace ``L_dl`` to be on time (docs/model.md §9). A plan at cadence ``L``
    is on time in scenario s iff ``L <= pace[s, K]``, its update time ``update_time(inst, scen, G_t)[s] <=
    pace[s, K]``, ``fresh[s, K]``, its token supply ``Σ x_i·supply_per_replica[s, K, i] >= token_demand[s,
    K]``, and its hosts hold ``level[s, K]`` environments (spread by the backends' shares) and
    ``peak[s, K]`` under §3.5-3.6 with the scenario's host fields (``Scenarios.value``).

    ``L_dl`` solves ``T(L_dl) + Δ = deadline``: ``n·L + extra_time`` (MODEL §2), or with start-up counted
    (§8) ``fill(L, K) + n·L + extra_time``, which bounds §8's ``fill + (n - 1)·L + U(m) + extra_time``
    from above since a plan on time has ``U(m) <= L``: the levels then ask at most one cadence of the run
    more than the scenario needs. Under hold the level is E^hold (§11 item 2) at the scenario's lifetimes."""

    kept: np.ndarray  # (K,)
    pace: np.ndarray  # (S, K) L_dl, s
    attempts: np.ndarray  # (S, K) R_raw at L_dl, 1/s (inf where every group is dropped)
    token_demand: np.ndarray  # (S, K) tokens/s
    supply_per_replica: np.ndarray  # (S, K, shapes) tokens/s one replica delivers
    level: np.ndarray  # (S, K) in-flight environments the hosts hold, spread by the backends' shares
    peak: np.ndarray  # (S, K) peak environments, spread the same way
    fresh: np.ndarray  # (S, K) freshness limits of §3.7 hold at L_dl


def at_deadline(inst: Instance, scen: Scenarios, kept=None, allowance: float = 0.0) -> AtDeadline:
    """What each scenario asks at its deadline pace with the run-variance allowance ``allowance`` (MODEL §11)."""
    v = values_of(inst, scen)
    fr = inst.freshness
    Ks = np.arange(1, fr.max_versions_kept + 1) if kept is None else np.asarray(kept, dtype=int)
    pace = deadline_pace(inst, v, Ks, allowance)
    q = np.stack([v.lifetimes.exceedance(pace[:, j], int(K)) for j, K in enumerate(Ks)], 1)
    drop = group_drop(inst, q)
    fresh = q <= exceedance_limit(inst, v)[:, None]
    if v.max_mean_gap is not None:
        post = 1.0 if fr.gap_convention == "post_publish" else 0.0
        fresh &= v.w_use[:, None] / pace + post <= v.max_mean_gap[:, None] * (1 + REL_TOL)
    attempts = _attempts(inst, v, pace, drop)
    gpus = np.array([s.gpus_per_replica for s in inst.inference.shapes], dtype=float)
    mult = np.maximum(0.0, 1.0 - v.slowdown[:, None, :] * (Ks[None, :, None] - 1.0))
    supply = v.availability[:, None, None] * gpus[None, None, :] * v.rate[:, None, :] * mult
    if inst.holds:
        life = v.lifetimes
        level = holding.hold_level(inst, attempts, life.mean[:, None], life.pair_min_mean()[:, None])
    else:
        level = attempts * v.w_use[:, None]
    return AtDeadline(
        kept=Ks,
        pace=pace,
        attempts=attempts,
        token_demand=attempts * v.tokens[:, None],
        supply_per_replica=supply,
        level=level,
        peak=level * v.peak_to_mean[:, None],
        fresh=fresh,
    )


def _attempts(inst: Instance, v: Values, cadence: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """(S, K) R_raw = B / (L·p·(1 - drop)) at cadences ``cadence`` (inf where every group is dropped)."""
    intake = v.intake[:, None] * (1.0 - drop)
    with np.errstate(divide="ignore"):
        return np.where(
            intake > 0, inst.workload.batch_trajectories / (cadence * np.where(intake > 0, intake, 1.0)), np.inf
        )


PACE_ROUNDS = 60  # fixed-point steps of deadline_pace at most (each shrinks the error by fill'(L)/n)


def deadline_pace(inst: Instance, v: Values, Ks: np.ndarray, allowance: float = 0.0) -> np.ndarray:
    """(S, K) L_dl: ``n·L + extra_time + Δ = deadline``, or with start-up counted ``fill(L, K) + n·L +
    extra_time + Δ = deadline`` (the fill grows with L, so T does: one root), by the fixed point
    ``L <- (deadline - Δ - extra_time - fill(L))/n`` from the steady pace; it contracts by ``fill'(L)/n``
    (a few thousandths); an iterate left above the root moves down by the model's tolerance.
    0 where even a vanishing cadence misses (no plan is on time there)."""
    w = inst.workload
    room = v.deadline - allowance - v.extra
    steady = np.broadcast_to((room / w.iterations)[:, None], (room.size, Ks.size)).copy()
    if not inst.counts_startup:
        return steady
    fr = inst.freshness

    def fill(L: np.ndarray) -> np.ndarray:
        out = np.full(L.shape, np.inf)
        for j, K in enumerate(Ks):
            at = L[:, j] > 0
            if not at.any():
                continue
            q = v.lifetimes.exceedance(np.where(at, L[:, j], 1.0), int(K))
            R = _attempts(inst, v, np.where(at, L[:, j], 1.0)[:, None], group_drop(inst, q)[:, None])[:, 0]
            live = at & np.isfinite(R)
            if live.any():
                sub = v.lifetimes.take(live)
                out[live, j] = sub.fill(
                    R[live], w.batch_trajectories, w.group_size, v.intake[live], fr.group_correlation
                )
        return out

    L = steady
    for _ in range(PACE_ROUNDS):
        f = fill(L)
        nxt = np.maximum(np.where(np.isfinite(f), (room[:, None] - f) / w.iterations, 0.0), 0.0)
        done = np.abs(nxt - L) <= 1e-12 * np.maximum(L, 1.0)
        L = nxt
        if done.all():
            break
    over = fill(L) + w.iterations * L > room[:, None]
    return np.where(over, L * (1 - REL_TOL), L)
