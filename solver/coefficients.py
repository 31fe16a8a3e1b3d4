"""MIP coefficients per admissible (cadence, versions kept) pair, from the calculus (MODEL.md §2).

Every nonlinear quantity — exceedance, group drop, attempts, in-flight counts, update
time, version gaps — depends on the cadence ``L`` only through its grid point and on
``K`` only through drop and slowdown, so the model sees them as constants of a pair.
A pair is admissible when it passes the constraints that need no other decision:
deadline (§3.4), update time (§3.3, via the fewest groups that keep up), freshness
(§3.7) and a finite attempt rate. Within one cadence, a ``K`` whose attempt rate is no
lower and whose every shape's throughput is no higher than another ``K``'s is dominated
and left out: it can never be strictly better.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.instance import Instance
from solver import calculus as calc


@dataclass(frozen=True)
class Pairs:
    """Coefficient columns, one entry per admissible (cadence, K) pair, ordered by cadence then K."""

    cadence: np.ndarray  # s
    kept: np.ndarray  # versions kept K
    makespan: np.ndarray  # s
    groups: np.ndarray  # fewest training groups with U <= L
    exceedance: np.ndarray
    drop: np.ndarray
    attempts: np.ndarray  # R_raw, 1/s
    inflight: np.ndarray  # (pairs, backends) E_b
    peak: np.ndarray  # (pairs, backends) E^pk_b
    supply_per_replica: np.ndarray  # (pairs, shapes) tokens/s one replica delivers
    demand: np.ndarray  # token demand R_raw · tokens_per_attempt, tokens/s
    rejected: dict[str, int] = field(default_factory=dict)  # grid points or pairs cut, by constraint family
    grid_points: int = 0

    @property
    def size(self) -> int:
        return int(self.cadence.size)

    def subset(self, keep: np.ndarray) -> "Pairs":
        columns = {
            name: getattr(self, name)[keep]
            for name in ("cadence", "kept", "makespan", "groups", "exceedance", "drop", "attempts", "inflight", "peak",
                         "supply_per_replica", "demand")
        }
        return Pairs(**columns, rejected=dict(self.rejected), grid_points=self.grid_points)


def build(inst: Instance) -> Pairs:
    w, env, fr = inst.workload, inst.environment, inst.freshness
    occ = calc.occupancy_of(env.occupancy)
    w_use = calc.occupancy_used(occ, env.littles_law_uses)
    grid = calc.cadence_grid(inst)
    rejected: dict[str, int] = {}

    def cut(keep: np.ndarray, family: str, mask: np.ndarray) -> np.ndarray:
        lost = int(np.count_nonzero(keep & ~mask))
        if lost:
            rejected[family] = rejected.get(family, 0) + lost
        return keep & mask

    # Per grid point: deadline, update time, mean gap.
    keep_L = np.ones(grid.size, dtype=bool)
    span = calc.makespan(inst, grid)
    keep_L = cut(keep_L, "deadline", span <= inst.schedule.deadline * (1 + calc.REL_TOL))
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    keep_L = cut(keep_L, "update_time", groups > 0)
    if fr.max_mean_gap is not None:
        gap = calc.mean_version_gap(w_use, grid, fr.gap_convention)
        keep_L = cut(keep_L, "max_mean_gap", gap <= fr.max_mean_gap * (1 + calc.REL_TOL))

    Ls, groups, span = grid[keep_L], groups[keep_L], span[keep_L]
    Ks = np.arange(1, fr.max_versions_kept + 1)
    LL, KK = np.meshgrid(Ls, Ks, indexing="ij")  # (grid, K)
    q = calc.exceedance(occ, LL, KK)
    drop = calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)
    intake = w.intake_rate * (1.0 - drop)
    keep = np.ones(LL.shape, dtype=bool)
    keep = cut(keep, "effective_intake", intake > 0)
    if fr.max_exceedance is not None:
        keep = cut(keep, "max_exceedance", q <= fr.max_exceedance * (1 + calc.REL_TOL) + 1e-15)
    if fr.max_group_drop is not None:
        keep = cut(keep, "max_group_drop", drop <= fr.max_group_drop * (1 + calc.REL_TOL) + 1e-15)
    with np.errstate(divide="ignore"):
        attempts = np.where(intake > 0, w.batch_trajectories / (LL * np.where(intake > 0, intake, 1.0)), np.inf)

    shapes = inst.inference.shapes
    a = inst.inference.availability
    mult = np.stack([calc.supply_multiplier(s.version_slowdown, Ks) for s in shapes], axis=1)  # (K, S)
    # Pool bound: even filling every pool with its best shape cannot meet the demand.
    demand = attempts * w.tokens_per_attempt
    best = np.zeros(LL.shape)
    for pool in inst.gpu_pools:
        rates = [a * s.tokens_per_gpu_s * mult[:, i] for i, s in enumerate(shapes) if s.pool == pool.name]
        if not rates:
            continue
        train = groups * inst.training.gpus_per_group if pool.name == inst.training.pool else np.zeros(groups.size)
        free = pool.gpus - train
        best += np.maximum(free, 0)[:, None] * np.max(rates, axis=0)[None, :]
    keep = cut(keep, "pool_capacity", best >= demand * (1 - calc.REL_TOL))
    keep &= _undominated(np.where(keep, attempts, np.inf), mult)

    rows, cols = np.nonzero(keep)
    shares = np.array([b.share for b in env.backends])
    inflight = (attempts[rows, cols] * w_use)[:, None] * shares[None, :]
    per_replica = np.array([a * s.gpus_per_replica * s.tokens_per_gpu_s for s in shapes])
    pairs = Pairs(
        cadence=LL[rows, cols],
        kept=KK[rows, cols],
        makespan=span[rows],
        groups=groups[rows],
        exceedance=q[rows, cols],
        drop=drop[rows, cols],
        attempts=attempts[rows, cols],
        inflight=inflight,
        peak=inflight * env.peak_to_mean,
        supply_per_replica=per_replica[None, :] * mult[cols, :],
        demand=demand[rows, cols],
        rejected=rejected,
        grid_points=int(grid.size),
    )
    return pairs


def _undominated(attempts: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """Mask of (grid, K) entries not dominated by another admissible K at the same cadence.

    Inadmissible entries carry an infinite attempt rate. K' dominates K when its attempt rate is no higher and every shape's supply multiplier
    no lower; among exact equals the smaller K is kept.
    """
    n_k = attempts.shape[1]
    keep = np.isfinite(attempts)
    for k in range(n_k):
        for k2 in range(n_k):
            if k2 == k:
                continue
            mult_ok = bool(np.all(mult[k2] >= mult[k]))
            if not mult_ok:
                continue
            mult_equal = bool(np.all(mult[k2] == mult[k]))
            better = attempts[:, k2] <= attempts[:, k]
            equal = (attempts[:, k2] == attempts[:, k]) & mult_equal
            strictly = better & ~equal
            keep[:, k] &= ~(np.isfinite(attempts[:, k2]) & (strictly | (equal & (k2 < k))))
    return keep
