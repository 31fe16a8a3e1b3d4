"""The scenario side of one pair's confidence model (MODEL.md §9, docs/confidence.md). No pyomo.

At pair ``p`` (cadence ``L``, ``K`` versions kept, ``m`` training groups: a confidence solve has a pair per
count worth having, :func:`solver.table.pairs.build`'s ``every_count``), the scenario groups split three ways:

- **unmet**: the pair cannot be on time there whatever its counts (``L`` past the deadline pace, freshness, the
  update time of ``m`` groups does not keep up, the goodput is gone). If they weigh more than the
  ``S - ceil(α·S)`` scenarios that may be late, the pair holds no plan;
- **free**: every need at or under the level every plan of the pair reaches anyway — ``η`` (the need after the
  hardest groups that may be late, by weight: some on-time group is at least that hard) or what the pair's own
  rows give (its attempt rate, the environments its nominal split holds);
- **uncertain**: the rest, each a binary of the pair's model (:mod:`solver.confidence.model`).

The least (supply, peak) levels of plans on time often enough are the *corners* of :func:`corners`, exact: the
cheapest corner bounds the pair's cost (:mod:`solver.confidence.planning`) and the facets of their hull are valid rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from trainground.solver.confidence.cuts import hull_2d
from trainground.solver.laws.goodput import weight_sync_factor
from trainground.solver.tolerances import RATIO_TOL, REL_TOL, WEIGHT_TOL

OWN_SLACK = 1e-6  # relative: the sandbox levels a pair's nominal split holds, taken this far under (tolerances)


@dataclass(frozen=True)
class PairNeeds:
    """What the scenarios ask of one pair's plans: the uncertain groups (``groups``, ``weight``) with their
    needs per family above the ``floors``, the weight they must reach on time (``count``), per-shape supply
    shares where shapes' multipliers differ, and the corners (supply, peak) every plan's levels lie above,
    whose hull gives the rows :attr:`cuts`."""

    row: int
    groups: np.ndarray  # (U,) scenario groups, indices of the table's
    weight: np.ndarray  # (U,)
    count: float  # weight of uncertain groups on time needed: ceil(α·S) minus the free groups'
    floors: dict[str, float]  # per family (supply, steady where it has a split, peak), the level every plan reaches
    needs: dict[str, np.ndarray]  # per family, (U,) the uncertain groups' needs
    share: np.ndarray | None  # (U, shapes) each shape's supply multiplier over the largest (None: all equal)
    corners: np.ndarray  # (C, 2) supply and peak levels of the corners
    ratio: float | None  # every group's peak need over its steady need, where that is one number

    @cached_property
    def cuts(self) -> list[tuple[dict[str, float], float]]:
        """Rows Σ_f a_f·level_f >= β: the facets of the corners' hull on the supply and peak levels, and the
        same on the steady level where every group's peak is one multiple of its steady need."""
        out = []
        for a, b, beta in hull_2d(self.corners):
            out.append(({"supply": a, "peak": b}, beta))
            if self.ratio is not None and "steady" in self.floors:
                out.append(({"supply": a, "steady": b * self.ratio}, beta))
        return out


def eta(values: np.ndarray, weight: np.ndarray, budget: float) -> float:
    """The need after the hardest groups of weight at most ``budget`` (sorted by need, ties kept in order): a
    plan late in at most ``budget`` of these weights meets at least this need (0 when all may be late)."""
    order = np.argsort(-values, kind="stable")
    spent = np.cumsum(weight[order])
    cut = int(np.searchsorted(spent, budget + WEIGHT_TOL, side="right"))
    return float(values[order[cut]]) if cut < order.size else 0.0


def own_levels(inst, pairs, row: int) -> dict[str, float]:
    """The level of each family every plan of pair ``row`` reaches by its own rows: its attempt rate (with the
    rows' tolerance) and the environments spread by share its nominal split holds."""
    shares = np.array([b.share for b in inst.environment.backends])
    active = shares > 0
    out = {"supply": float(pairs.attempts[row]) * (1 - REL_TOL)}
    for name, loads in (("steady", pairs.inflight[row]), ("peak", pairs.peak[row])):
        out[name] = float(np.min(loads[active] / shares[active])) * (1 - OWN_SLACK) if active.any() else 0.0
    return out


def pair_needs(conf, pairs, row: int, allowance: float, families: tuple[str, ...]) -> PairNeeds | None:
    """The scenario side of pair ``row``'s model with the allowance ``allowance`` (None: the pair holds no plan);
    ``families``: the levels its model has (supply, steady where it has a steady split, peak)."""
    table, inst = conf.table, conf.inst
    K, G, L = int(pairs.kept[row]), int(pairs.groups[row]), float(pairs.cadence[row])
    needs = table.needs(K, allowance, G)
    unmet = (L > needs.pace * (1 + REL_TOL)) | ~needs.fresh | (needs.groups > G)
    lost = float(table.weight[unmet].sum())
    if lost > conf.allowed + WEIGHT_TOL:
        return None
    live = np.flatnonzero(~unmet)
    weight = table.weight[live]
    sync = float(weight_sync_factor(inst, L))
    values = {"supply": needs.supply[live] * sync, "steady": needs.steady[live], "peak": needs.peak[live]}
    own = own_levels(inst, pairs, row)
    floors = {f: max(eta(values[f], weight, conf.allowed - lost), own[f]) for f in values}
    share = None if needs.share is None else needs.share[live]
    above = np.zeros(live.size, dtype=bool)
    for f in families:
        above |= values[f] > floors[f]
    if share is not None:  # the exact supply row binds where the weakest shape's share falls short
        above |= values["supply"] > floors["supply"] * share.min(axis=1, where=share > 0, initial=1.0)
    free = float(weight[~above].sum())
    clipped = {f: np.maximum(values[f], floors[f]) for f in ("supply", "peak")}
    return PairNeeds(
        row=row,
        groups=live[above],
        weight=weight[above],
        count=max(0.0, conf.needed - free),
        floors={f: floors[f] for f in families},
        needs={f: values[f][above] for f in families},
        share=None if share is None else share[above],
        corners=corners(clipped["supply"], clipped["peak"], weight, float(conf.needed)),
        ratio=_ratio(values["steady"], values["peak"]),
    )


def _ratio(steady: np.ndarray, peak: np.ndarray) -> float | None:
    """The one multiple every group's peak need is of its steady need (None: there is none)."""
    ratio = peak / np.where(steady > 0, steady, np.nan)
    if ratio.size == 0 or not np.isfinite(ratio).all():
        return None
    return float(ratio[0]) if np.allclose(ratio, ratio[0], rtol=RATIO_TOL, atol=0.0) else None


def corners(supply: np.ndarray, peak: np.ndarray, weight: np.ndarray, needed: float) -> np.ndarray:
    """(C, 2) the least levels (supply, peak) a plan on time in groups of weight >= ``needed`` reaches: per peak
    threshold t (each group's peak need), the ``needed``-th smallest supply need, by weight, among the groups
    with peak at most t; dominated points left out (none when the groups cannot weigh ``needed``)."""
    if supply.size == 0 or weight.sum() < needed - WEIGHT_TOL:
        return np.zeros((0, 2))
    by_supply = np.argsort(supply, kind="stable")
    s, p, w = supply[by_supply], peak[by_supply], weight[by_supply]
    thresholds = np.unique(p)
    inside = p[None, :] <= thresholds[:, None]  # (T, n)
    reached = np.cumsum(np.where(inside, w[None, :], 0.0), axis=1) >= needed - WEIGHT_TOL
    ok = reached[:, -1]
    first = np.argmax(reached, axis=1)
    points = np.column_stack([s[first[ok]], thresholds[ok]])
    keep = np.ones(points.shape[0], dtype=bool)  # thresholds ascend: a point is kept if its supply falls
    keep[1:] = points[1:, 0] < np.minimum.accumulate(points[:, 0])[:-1]
    return points[keep]
