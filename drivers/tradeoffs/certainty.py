"""The price of certainty (MODEL.md §9): the best plan for each confidence α of a list, one confidence
solve per α over the same scenario set, with the deterministic optimum as the reference point.

Each point is a full MODEL.md §6 result with its ``confidence`` object, planned on the instance's basis: under
hold (MODEL §11) each runs its allowance loop, whose replays draw a scenario each, so a point carries its
allowance and its replays' realised cost. The points share the work that does not depend on α: the pair
table (:class:`solver.table.pairs.TableCache`), the scenario set's needs (:class:`solver.confidence.table.ScenarioTable`)
and the replays of plans already replayed (:class:`drivers.replays.ReplayCache`). With one allowance for every α
(steady_state: none), a higher α never gives a cheaper plan: its plans are feasible for every smaller α.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainground.drivers.hold import neighbour_start, planner_for
from trainground.drivers.replays import ReplayCache
from trainground.models.instance import Instance
from trainground.models.result import Result, key_columns
from trainground.models.stage_rules import refuse_confidence
from trainground.solver.confidence.table import ScenarioTable, Unsupported
from trainground.solver.table.pairs import TableCache
from trainground.solver.uncertainty import scenarios as sc

CSV_COLUMNS = (
    "confidence",
    "status",
    "objective_value",
    "total_cost",
    "hourly_cost",
    "makespan_s",
    "cadence_s",
    "inference_gpus",
    "training_gpus",
    "nodes",
    "vms",
    "in_sample",
    "out_of_sample",
    "out_of_sample_low",
    "out_of_sample_high",
    "allowance_s",
    "expected_total_cost",
    "p90_total_cost",
)


@dataclass
class CertaintyCurve:
    instance: str
    objective: str
    deterministic: Result
    points: list[tuple[float, Result]]

    def rows(self) -> list[dict]:
        out = []
        for alpha, r in [(None, self.deterministic), *self.points]:
            row = {k: None for k in CSV_COLUMNS} | {
                "confidence": alpha,
                "status": str(r.status),
                "objective_value": r.objective_value,
            }
            if r.plan is not None:
                row.update({k: v for k, v in key_columns(r.plan, r.metrics).items() if k in CSV_COLUMNS})
            if r.confidence is not None:
                c = r.confidence
                row.update(
                    in_sample=c.in_sample,
                    out_of_sample=c.out_of_sample,
                    out_of_sample_low=c.out_of_sample_interval[0],
                    out_of_sample_high=c.out_of_sample_interval[1],
                )
            if r.hold is not None:
                h = r.hold
                row.update(
                    allowance_s=h.allowance_s,
                    expected_total_cost=h.expected_total_cost,
                    p90_total_cost=h.p90_total_cost,
                )
            out.append(row)
        return out

    def to_json(self) -> dict:
        return {
            "instance": self.instance,
            "objective": self.objective,
            "deterministic": self.deterministic.to_json(),
            "points": [{"confidence": a, "result": r.to_json()} for a, r in self.points],
        }


def with_alpha(inst: Instance, alpha: float | None) -> Instance:
    """``inst`` planned for confidence ``alpha`` (None: deterministic)."""
    return inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": alpha})})


def curve(
    inst: Instance,
    alphas: Sequence[float],
    objective: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    replays: ReplayCache | None = None,
) -> CertaintyCurve:
    """The deterministic optimum, then the confidence plan for each α (sorted ascending), each on the
    instance's basis (``replays``: whose replays the points may reuse; a new cache by default). A staged
    instance raises :class:`Unsupported`: confidence solves do not play stages."""
    if inst.uncertainty is None:
        raise ValueError(f"{inst.name}: the price of certainty needs an uncertainty section (docs/model.md §9)")
    for refused in refuse_confidence(inst, "the price of certainty"):  # a staged model plans no confidence
        raise Unsupported(refused.path, refused.rule)
    objective = objective or inst.objective
    total = len(alphas) + 1
    replays = replays or ReplayCache()
    cache = TableCache(8)
    base = planner_for(with_alpha(inst, None), replays, cache=cache).solve(objective)
    table = ScenarioTable(inst, sc.draw(inst)) if alphas else None
    points = []
    before = base  # under hold, each point's allowance loop starts from the Δ of the point before it (MODEL §11)
    for k, alpha in enumerate(sorted(alphas), start=1):
        if on_progress is not None:
            on_progress(k, total)
        planner = planner_for(with_alpha(inst, alpha), replays, cache=cache, table=table)
        before = planner.solve(objective, **neighbour_start(planner, before))
        points.append((alpha, before))
    if on_progress is not None:
        on_progress(total, total)
    return CertaintyCurve(instance=inst.name or "", objective=objective, deterministic=base, points=points)
