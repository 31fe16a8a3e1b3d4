"""The scenario side of one pair's confidence model (MODEL.md §9, docs/confidence.md). No pyomo.

At pair ``p`` (cadence ``L``, ``K`` versions kept, ``m`` training groups), the scenario groups split three ways:

- **unmet**: the pair cannot be on time there whatever its counts (``L`` past the deadline pace, freshness, no
  group count keeps up; with start-up counted or §13's goodput, ``m`` itself does not keep up or the goodput is
  gone). If they weigh more than the ``S - ceil(α·S)`` scenarios that may be late, the pair holds no plan;
- **free**: every need at or under the level every plan of the pair reaches anyway — ``η`` (the need after the
  hardest groups that may be late, by weight: some on-time group is at least that hard) or what the pair's own
  rows give (its attempt rate, its groups, the environments its nominal split holds);
- **uncertain**: the rest, each a binary of the pair's model (:mod:`solver.confidence_model`).

The level vectors of plans on time often enough lie above the *corners* of :func:`corners`; the facets of their
convex hull are valid rows, and the cheapest corner bounds the pair's cost (:mod:`solver.confidence`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.solver.confidence_cuts import hull_2d
from trainground.solver.goodput import weight_sync_factor
from trainground.solver.tolerances import REL_TOL

OWN_SLACK = 1e-6  # relative: the sandbox levels a pair's nominal split holds, taken this far under (tolerances)


@dataclass(frozen=True)
class PairNeeds:
    """What the scenarios ask of one pair's plans: the uncertain groups (``groups``, ``weight``) with their
    needs per family above the ``floors``, the weight they must reach on time (``count``), per-shape supply
    shares where shapes' multipliers differ, the hull rows ``a·levels >= β`` and the corners."""

    row: int
    groups: np.ndarray  # (U,) scenario groups, indices of the table's
    weight: np.ndarray  # (U,)
    count: float  # weight of uncertain groups on time needed: ceil(α·S) minus the free groups'
    floors: dict[str, float]  # per family, the level every plan of the pair reaches
    needs: dict[str, np.ndarray]  # per family, (U,) the uncertain groups' needs
    share: np.ndarray | None  # (U, shapes) each shape's supply multiplier over the largest (None: all equal)
    cuts: list[tuple[dict[str, float], float]]  # rows Σ_f a_f·level_f >= β
    corners: np.ndarray  # (C, 2) supply and peak levels of the corners (G regime; empty in the K regime)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(self.floors)


def eta(values: np.ndarray, weight: np.ndarray, budget: float) -> float:
    """The need after the hardest groups of weight at most ``budget`` (sorted by need, ties kept in order): a
    plan late in at most ``budget`` of these weights meets at least this need (0 when all may be late)."""
    order = np.argsort(-values, kind="stable")
    spent = np.cumsum(weight[order])
    cut = int(np.searchsorted(spent, budget + 1e-9, side="right"))
    return float(values[order[cut]]) if cut < order.size else 0.0


def own_levels(inst, pairs, row: int, families: tuple[str, ...]) -> dict[str, float]:
    """The level of each family every plan of pair ``row`` reaches by its own rows: its attempt rate (with the
    rows' tolerance), its training groups, and the environments spread by share its nominal split holds."""
    shares = np.array([b.share for b in inst.environment.backends])
    active = shares > 0
    out = {"supply": float(pairs.attempts[row]) * (1 - REL_TOL), "groups": float(pairs.groups[row])}
    for name, loads in (("steady", pairs.inflight[row]), ("peak", pairs.peak[row])):
        out[name] = float(np.min(loads[active] / shares[active])) * (1 - OWN_SLACK) if active.any() else 0.0
    return {f: out[f] for f in families}


def pair_needs(
    conf, pairs, row: int, allowance: float, families: tuple[str, ...], class_cuts: list
) -> PairNeeds | None:
    """The scenario side of pair ``row``'s model with the allowance ``allowance`` (None: the pair holds no plan);
    ``class_cuts``: the hull rows of its K class, where the makespan does not depend on the training groups
    (elsewhere its own corners give them)."""
    table, inst = conf.table, conf.inst
    K, G, L = int(pairs.kept[row]), int(pairs.groups[row]), float(pairs.cadence[row])
    needs = table.needs(K, allowance, G)
    limit = G if table.by_groups else conf.top_groups
    unmet = (L > needs.pace * (1 + REL_TOL)) | ~needs.fresh | (needs.groups > limit)
    lost = float(table.weight[unmet].sum())
    if lost > conf.allowed + 1e-9:
        return None
    live = np.flatnonzero(~unmet)
    weight = table.weight[live]
    sync = float(weight_sync_factor(inst, L))
    values = {"supply": needs.supply[live] * sync, "groups": needs.groups[live]}
    values |= {"steady": needs.steady[live], "peak": needs.peak[live]}
    values = {f: values[f] for f in families}
    own = own_levels(inst, pairs, row, families)
    floors = {f: max(eta(values[f], weight, conf.allowed - lost), own[f]) for f in families}
    share = None if needs.share is None else needs.share[live]
    above = np.zeros(live.size, dtype=bool)
    for f in families:
        above |= values[f] > floors[f]
    if share is not None:  # the exact supply row binds where the weakest shape's share falls short
        above |= values["supply"] > floors["supply"] * share.min(axis=1, where=share > 0, initial=1.0)
    free = float(weight[~above].sum())
    cuts, corners = list(class_cuts), np.zeros((0, 2))
    if table.by_groups:
        corners, cuts = _corners_and_cuts(values, weight, floors, float(conf.needed))
    return PairNeeds(
        row=row,
        groups=live[above],
        weight=weight[above],
        count=max(0.0, conf.needed - free),
        floors=floors,
        needs={f: values[f][above] for f in families},
        share=None if share is None else share[above],
        cuts=cuts,
        corners=corners,
    )


def _corners_and_cuts(values: dict, weight: np.ndarray, floors: dict, needed: float) -> tuple[np.ndarray, list]:
    """The corners on (supply, peak) of a pair whose training groups are fixed (:func:`corners`) and the facets
    of their hull as rows on the supply and peak levels (and on the steady level, where every group's peak is
    one multiple of its steady need)."""
    supply = np.maximum(values["supply"], floors["supply"])
    peak = np.maximum(values["peak"], floors["peak"])
    points = corners(supply, peak, weight, needed)
    cuts = [({"supply": a, "peak": b}, beta) for a, b, beta in hull_2d(points)]
    if "steady" in values and values["steady"].size:
        ratio = values["peak"] / np.where(values["steady"] > 0, values["steady"], np.nan)
        rho = float(np.nanmax(ratio)) if np.isfinite(ratio).any() else np.nan
        if np.isfinite(rho) and np.allclose(ratio[np.isfinite(ratio)], rho, rtol=1e-12, atol=0.0):
            cuts += [({"supply": a, "steady": b * rho}, beta) for a, b, beta in hull_2d(points)]
    return points, cuts


def corners(supply: np.ndarray, peak: np.ndarray, weight: np.ndarray, needed: float) -> np.ndarray:
    """(C, 2) the least levels (supply, peak) a plan on time in groups of weight >= ``needed`` reaches: per peak
    threshold t (each group's peak need), the ``needed``-th smallest supply need, by weight, among the groups
    with peak at most t; dominated points left out (none when the groups cannot weigh ``needed``)."""
    if supply.size == 0 or weight.sum() < needed - 1e-9:
        return np.zeros((0, 2))
    by_supply = np.argsort(supply, kind="stable")
    s, p, w = supply[by_supply], peak[by_supply], weight[by_supply]
    thresholds = np.unique(p)
    inside = p[None, :] <= thresholds[:, None]  # (T, n)
    reached = np.cumsum(np.where(inside, w[None, :], 0.0), axis=1) >= needed - 1e-9
    ok = reached[:, -1]
    first = np.argmax(reached, axis=1)
    points = np.column_stack([s[first[ok]], thresholds[ok]])
    keep = np.ones(points.shape[0], dtype=bool)  # thresholds ascend: a point is kept if its supply falls
    keep[1:] = points[1:, 0] < np.minimum.accumulate(points[:, 0])[:-1]
    return points[keep]
