"""What each scenario of a confidence solve asks of a plan (MODEL.md §9), as levels per (scenario, K). No pyomo.

A plan keeping ``K`` versions at cadence ``L`` is on time in scenario ``s`` iff, at the scenario's
deadline pace ``L_dl[s, K]`` (:func:`solver.scenario_deadline.deadline_pace`: with start-up counted and MODEL
§11's allowance, it depends on K through the pipeline fill): ``L <= L_dl[s, K]``, the freshness limits
hold (``fresh[s, K]``), its update time keeps up, its token supply meets the demand and its hosts hold
the in-flight load. With every factor outside the host fields, each of the last three is one number the
plan must reach:

- **supply**: ``Σ_i x_i·supply_i(K) >= supply[s, K]`` in the model's own units (attempts/s at
  nominal per-replica supply): the scenario's token demand over its throughput multiplier
  (one multiplier for every shape, else :class:`Unsupported`);
- **groups**: ``m >= groups[s, K]``, the fewest training groups whose scenario update time keeps up
  with ``L_dl[s, K]`` (the update law must not get slower with more groups);
- **sandbox**: the hosts hold ``steady[s, K]`` and ``peak[s, K]`` environments spread over the
  backends by their shares (the host fields themselves unscaled): Little's law's load, or under hold
  the level that holds every backend's E^hold (§11 item 2).

Scenarios that ask the same of every plan are one group with a weight (:attr:`Requirements.weight`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver import calculus as calc
from trainground.solver.scenario_deadline import at_deadline
from trainground.solver.scenarios import Scenarios, update_time
from trainground.solver.tolerances import REL_TOL

HOST_FIELDS = ("environment.node_types", "environment.cloud", "environment.backends", "environment.utilisation_cap")
SUPPLY_TOL = 1e-12  # relative: two shapes' throughput multipliers are one multiplier within this


class Unsupported(ValueError):
    """An uncertainty section a confidence solve cannot turn into levels; ``path`` names the field."""

    def __init__(self, path: str, rule: str):
        super().__init__(f"{path}: {rule}")
        self.path, self.rule = path, rule


@dataclass(frozen=True)
class Requirements:
    """Per scenario group (axis 0, merged scenarios) and K (axis 1, ``kept``): what an on-time plan needs."""

    kept: np.ndarray  # (K,) versions kept, 1..max_versions_kept
    weight: np.ndarray  # (G,) scenarios in each group
    members: np.ndarray  # (S,) group of each scenario
    pace: np.ndarray  # (G, K) L_dl, s
    fresh: np.ndarray  # (G, K) freshness holds at L_dl and the attempt rate is finite
    supply: np.ndarray  # (G, K) attempts/s the nominal per-replica supply must reach
    groups: np.ndarray  # (G, K) fewest training groups (inf: none keeps up)
    steady: np.ndarray  # (G, K) in-flight environments, all backends
    peak: np.ndarray  # (G, K) peak environments, all backends
    draws: np.ndarray  # (G, F) the factors' multipliers of one member of each group

    @property
    def scenarios(self) -> int:
        return int(self.weight.sum())

    def column(self, kept: int) -> int:
        return int(np.searchsorted(self.kept, kept))


def requirements(inst: Instance, scen: Scenarios, allowance: float = 0.0) -> Requirements:
    """The levels of every scenario of ``scen`` with the run-variance allowance ``allowance`` (MODEL §11:
    on time iff T_s + Δ <= deadline), scenarios asking the same merged (exact equality)."""
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
                "time and schedule; host and backend fields cannot be scaled",
            )
    at = at_deadline(inst, scen, allowance=allowance)
    slack = 1.0 - REL_TOL  # demands carry MODEL §4's tolerance, as the nominal rows do
    theta = _throughput_multiplier(inst, at)
    with np.errstate(invalid="ignore", divide="ignore"):
        supply = np.where(np.isfinite(at.attempts), at.token_demand / inst.workload.tokens_per_attempt / theta, np.inf)
    fresh = at.fresh & np.isfinite(supply)
    supply = np.where(fresh, supply * slack, 0.0)
    steady = np.where(fresh, at.level * slack, 0.0)
    peak = np.where(fresh, at.peak * slack, 0.0)
    groups = _fewest_groups(inst, scen, at.pace)
    table = np.column_stack([at.pace, groups, fresh, supply, steady, peak])
    _, first, members, weight = np.unique(table, axis=0, return_index=True, return_inverse=True, return_counts=True)
    members = members.reshape(-1)
    return Requirements(
        kept=at.kept,
        weight=weight.astype(float),
        members=members,
        pace=at.pace[first],
        fresh=fresh[first],
        supply=supply[first],
        groups=groups[first],
        steady=steady[first],
        peak=peak[first],
        draws=scen.draws[first],
    )


def _throughput_multiplier(inst: Instance, at) -> np.ndarray:
    """(S, K) the one multiplier of every shape's per-replica supply against its nominal value."""
    shapes = inst.inference.shapes
    a = inst.inference.availability
    nominal = np.stack(
        [
            a * s.gpus_per_replica * s.tokens_per_gpu_s * calc.supply_multiplier(s.version_slowdown, at.kept)
            for s in shapes
        ],
        axis=1,
    )  # (K, shapes)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = at.supply_per_replica / nominal[None, :, :]
    live = nominal[None, :, :] > 0
    ratio = np.where(live, ratio, np.nan)
    top, bottom = np.nanmax(ratio, axis=2), np.nanmin(ratio, axis=2)
    if np.any(top - bottom > SUPPLY_TOL * np.maximum(1.0, np.abs(top))):
        raise Unsupported(
            "inference.shapes",
            "a confidence solve needs every shape's throughput scaled by one "
            "factor (per-shape factors change which shape is cheapest per scenario)",
        )
    return np.where(np.isfinite(top), top, 1.0)


def _fewest_groups(inst: Instance, scen: Scenarios, pace: np.ndarray) -> np.ndarray:
    """(S, K) the fewest admissible training groups whose update time keeps up with ``pace`` (inf: none)."""
    lo, hi = calc.group_range(inst)
    if hi < lo:
        return np.full(pace.shape, np.inf)
    counts = np.arange(lo, hi + 1)
    u = update_time(inst, scen, counts * inst.training.gpus_per_group)  # (S, counts)
    u = np.where(np.isnan(u), np.inf, u)
    finite = np.isfinite(u)
    rises = np.diff(np.where(finite, u, -np.inf), axis=1) > REL_TOL * np.abs(u[:, 1:]).clip(1.0)
    if np.any(rises & finite[:, 1:] & finite[:, :-1]):
        raise Unsupported(
            "training.update_time",
            "a confidence solve needs an update time that never grows with "
            "more groups (the table's measured points rise)",
        )
    out = np.full(pace.shape, np.inf)
    for j in range(pace.shape[1]):  # u never rises with the count: the first that keeps up
        ok = u <= pace[:, j : j + 1] * (1 + REL_TOL)
        first = np.argmax(ok, axis=1)
        out[:, j] = np.where(ok.any(axis=1), counts[first].astype(float), np.inf)
    return out
