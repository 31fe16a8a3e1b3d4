"""What each scenario of a confidence solve asks of a plan (MODEL.md §9), as levels per scenario group. No pyomo.

A plan keeping ``K`` versions at cadence ``L`` with ``m`` training groups is on time in scenario ``s`` iff, at
the scenario's deadline pace ``L_dl`` (:func:`solver.uncertainty.deadline.deadline_pace`, with MODEL §11's
allowance): ``L <= L_dl``, the freshness limits hold, the update time of ``m`` groups keeps up, the token
supply meets the demand and the hosts hold the in-flight load. Each of the last two is one number the plan's
capacity must reach (:class:`Needs`):

- **supply**: ``Σ_i x_i·c_i >= supply[s]`` in the model's own units (``c_i`` the pair's per-replica supply in
  attempts/s): the scenario's attempts over its throughput multiplier (``share``: when shapes' multipliers
  differ, the largest, with each shape's share of it for the exact row);
- **sandbox**: the hosts hold ``steady[s]`` and ``peak[s]`` environments spread over the backends by their
  shares (the host fields themselves unscaled): Little's law's load, or under hold the level that holds every
  backend's E^hold (§11 item 2).

``L_dl`` depends on ``m`` where the makespan does (start-up counted: U(m); §13: the goodput γ(m)), so
:meth:`ScenarioTable.needs` gives the needs of one count exactly, with ``groups[s]`` that count where its
update time keeps up (inf where not); without a count, those at the largest pace any count has (U = 0,
γ = 1), each then a lower bound, with ``groups[s]`` the fewest count whose update time keeps up there (the
update law must not get slower with more groups). Scenarios with equal draws are one group with a weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.table.pairs import shape_availability, supply_multipliers
from trainground.solver.tolerances import REL_TOL
from trainground.solver.uncertainty.deadline import Pace, at_deadline
from trainground.solver.uncertainty.scenarios import Scenarios, from_draws, update_time, values_of

HOST_FIELDS = ("environment.node_types", "environment.cloud", "environment.backends", "environment.utilisation_cap")
SUPPLY_TOL = 1e-12  # relative: two shapes' throughput multipliers are one multiplier within this


class Unsupported(ValueError):
    """An uncertainty section a confidence solve cannot turn into levels; ``path`` names the field."""

    def __init__(self, path: str, rule: str):
        super().__init__(f"{path}: {rule}")
        self.path, self.rule = path, rule


@dataclass(frozen=True)
class Needs:
    """Per scenario group (axis 0): what an on-time plan keeping one K (and, exactly, with one count of
    training groups) needs. A group with ``fresh`` False can never be on time."""

    pace: np.ndarray  # (G,) L_dl, s
    fresh: np.ndarray  # (G,) freshness holds at L_dl and the attempt rate is finite
    groups: np.ndarray  # (G,) the count given where it keeps up, or the fewest that keep up (inf: none does)
    supply: np.ndarray  # (G,) attempts/s the nominal per-replica supply must reach, before the pair's weight sync
    steady: np.ndarray  # (G,) in-flight environments, all backends
    peak: np.ndarray  # (G,) peak environments, all backends
    share: np.ndarray | None = None  # (G, shapes) each shape's multiplier over the largest (None: all equal)


class ScenarioTable:
    """A confidence solve's scenarios merged into groups (equal draws) and their needs, computed on first use
    and kept by (K, allowance, training groups): the one cache of these numbers, owned by the solve's
    :class:`solver.confidence.planning.Confidence` (its rounds of MODEL §11 ask again at other allowances)."""

    def __init__(self, inst: Instance, scen: Scenarios):
        _check(inst, scen)
        _, first, members, weight = np.unique(
            scen.draws, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
        self.inst = inst
        self.scen = from_draws(inst, scen.draws[first], scen.seed)  # one member of each group
        self.values = values_of(inst, self.scen)
        self.weight = weight.astype(float)
        self.members = members.reshape(-1)
        self._kept = np.arange(1, inst.freshness.max_versions_kept + 1)
        self._nominal = _nominal_supply(inst, self._kept)
        self._counts, self._updates = _update_table(inst, self.scen)
        self._needs: dict[tuple[int, float, int | None], Needs] = {}
        self._paces: dict[tuple[int, float], Pace] = {}  # the paces without groups, by (K, allowance)

    @property
    def scenarios(self) -> int:
        return int(self.weight.sum())

    def needs(self, kept: int, allowance: float = 0.0, groups: int | None = None) -> Needs:
        """The needs at ``kept`` versions with the allowance ``allowance``: exact for ``groups`` training groups,
        lower bounds for every count without them."""
        key = (int(kept), float(allowance), None if groups is None else int(groups))
        if key not in self._needs:
            self._needs[key] = self._compute(*key)
        return self._needs[key]

    def _compute(self, kept: int, allowance: float, groups: int | None) -> Needs:
        inst = self.inst
        start = None if groups is None else self._paces.get((kept, allowance))
        if groups is not None and start is None:  # the paces without groups start the root's search
            self.needs(kept, allowance)
            start = self._paces.get((kept, allowance))
        at = at_deadline(inst, self.scen, [kept], allowance, groups, self.values, start)
        if groups is None and at.paces is not None:
            self._paces[(kept, allowance)] = at.paces
        live = self._nominal[kept - 1] > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = at.supply_per_replica[:, 0, :] / self._nominal[kept - 1][None, :]  # (G, shapes)
        top = np.max(np.where(live[None, :], theta, 0.0), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(live[None, :], theta / np.where(top > 0, top, 1.0)[:, None], 0.0)
            supply = np.where(
                top > 0, at.attempts[:, 0] * self.values.tokens / inst.workload.tokens_per_attempt / top, np.inf
            )
        uniform = np.all(np.abs(share[:, live] - 1.0) <= SUPPLY_TOL)
        fresh = at.fresh[:, 0] & np.isfinite(supply)
        slack = 1.0 - REL_TOL  # demands carry MODEL §4's tolerance, as the nominal rows do
        if groups is None or at.keeps_up is None:
            need = self._fewest(at.pace[:, 0])
        else:
            need = np.where(at.keeps_up[:, 0], float(groups), np.inf)
        return Needs(
            pace=at.pace[:, 0],
            fresh=fresh,
            groups=need,
            supply=np.where(fresh, supply * slack, 0.0),
            steady=np.where(fresh, at.level[:, 0] * slack, 0.0),
            peak=np.where(fresh, at.peak[:, 0] * slack, 0.0),
            share=None if uniform else share,
        )

    def _fewest(self, pace: np.ndarray) -> np.ndarray:
        """(G,) the fewest admissible training groups whose update time keeps up with ``pace`` (inf: none)."""
        if self._counts.size == 0:
            return np.full(pace.shape, np.inf)
        ok = self._updates <= pace[:, None] * (1 + REL_TOL)  # U never rises with the count: the first that keeps up
        first = np.argmax(ok, axis=1)
        return np.where(ok.any(axis=1), self._counts[first].astype(float), np.inf)


def _check(inst: Instance, scen: Scenarios) -> None:
    """Unsupported for the uncertainty a confidence solve cannot turn into levels (the field named)."""
    if inst.holds and inst.freshness.max_mean_gap is not None:
        raise Unsupported(
            "freshness.max_mean_gap",
            "a confidence solve under hold does not limit the consumed gap (docs/model.md §11 item 3) per "
            "scenario yet: remove the limit, or add --basis steady_state",
        )
    for prefix in HOST_FIELDS:
        if scen.scales(prefix):
            path = next(p for p in scen.scale if p.startswith(prefix))
            raise Unsupported(
                path,
                "a confidence solve takes factors on demand, throughput, lifetimes, update "
                "time, schedule and reliability; host and backend fields cannot be scaled",
            )


def _nominal_supply(inst: Instance, kept: np.ndarray) -> np.ndarray:
    """(K, shapes) tokens/s one replica delivers at the nominal values, before weight sync (MODEL §2, §13)."""
    a = shape_availability(inst)
    per = np.array([a[i] * s.gpus_per_replica * s.tokens_per_gpu_s for i, s in enumerate(inst.inference.shapes)])
    return supply_multipliers(inst, kept) * per[None, :]


def _update_table(inst: Instance, scen: Scenarios) -> tuple[np.ndarray, np.ndarray]:
    """(counts,) the admissible training-group counts and (G, counts) their update time in every scenario group
    (inf outside a table's range); Unsupported when a table's update time rises with more groups."""
    lo, hi = calc.group_range(inst)
    if hi < lo:
        return np.zeros(0, dtype=int), np.zeros((scen.size, 0))
    counts = np.arange(lo, hi + 1)
    u = update_time(inst, scen, counts * inst.training.gpus_per_group)  # (G, counts)
    u = np.where(np.isnan(u), np.inf, u)
    finite = np.isfinite(u)
    rises = np.diff(np.where(finite, u, -np.inf), axis=1) > REL_TOL * np.abs(u[:, 1:]).clip(1.0)
    if np.any(rises & finite[:, 1:] & finite[:, :-1]):
        raise Unsupported(
            "training.update_time",
            "a confidence solve needs an update time that never grows with "
            "more groups (the table's measured points rise)",
        )
    return counts, u
