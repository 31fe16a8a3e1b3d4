"""The price of certainty (MODEL.md §9): the best plan for each confidence α of a list, one confidence
solve per α over the same scenario set, with the deterministic optimum as the reference point.

Each point is a full MODEL.md §6 result with its ``confidence`` object; a higher α never gives a
cheaper plan (the plans for α are feasible for every smaller α), which :func:`curve` checks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.solver.solve import Planner

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
                p = r.plan
                row.update(
                    total_cost=p.total_cost,
                    hourly_cost=p.hourly_cost,
                    makespan_s=p.makespan_s,
                    cadence_s=p.cadence_s,
                    inference_gpus=p.inference_gpus,
                    training_gpus=p.training_gpus,
                    nodes=p.node_count,
                    vms=p.vm_count,
                )
            if r.confidence is not None:
                c = r.confidence
                row.update(
                    in_sample=c.in_sample,
                    out_of_sample=c.out_of_sample,
                    out_of_sample_low=c.out_of_sample_interval[0],
                    out_of_sample_high=c.out_of_sample_interval[1],
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
) -> CertaintyCurve:
    """The deterministic optimum, then the confidence plan for each α (sorted ascending)."""
    if inst.uncertainty is None:
        raise ValueError(f"{inst.name}: the price of certainty needs an uncertainty section (docs/model.md §9)")
    objective = objective or inst.objective
    total = len(alphas) + 1
    base = Planner(with_alpha(inst, None)).solve(objective)
    points = []
    for k, alpha in enumerate(sorted(alphas), start=1):
        if on_progress is not None:
            on_progress(k, total)
        points.append((alpha, Planner(with_alpha(inst, alpha)).solve(objective)))
    if on_progress is not None:
        on_progress(total, total)
    return CertaintyCurve(instance=inst.name or "", objective=objective, deterministic=base, points=points)
