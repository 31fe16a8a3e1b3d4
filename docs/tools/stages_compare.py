"""The plans of docs/stages.md side by side: the one-stage plan sized for the average tokens per attempt (its
fleet then held fixed through the stages: the shortest staged run it allows, and that run replayed stage by
stage by `simulate`), the staged plan at one fixed capacity and the staged plan that re-plans per stage
(30 min per switch), each replayed too.

    python docs/tools/stages_compare.py STAGED.yaml ONE-STAGE.yaml
"""

from __future__ import annotations

import sys

from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.simulation.runner import simulate_plan
from trainground.solver.solve import solve_instance
from trainground.solver.stages.solve import StagedPlanner

SEED = 0  # the replays' seed (one replication each)


def fleet_run(staged, plan):
    """The staged instance with its fleet pinned to ``plan``'s counts (pool sized to them, groups, hosts),
    solved for the shortest makespan with no deadline in the way."""
    edits = {
        "gpu_pools[0].gpus": plan.inference_gpus + plan.training_gpus,
        "training.min_groups": plan.training_groups,
        "training.max_groups": plan.training_groups,
        "schedule.deadline": 30 * 86400,
        "schedule.cadence.max": 3000,
    }
    for i, node in enumerate(plan.local_nodes):
        edits[f"environment.node_types[{i}].max_nodes"] = node.count
    for i, vm in enumerate(plan.cloud_vms):
        edits[f"environment.cloud.vm_types[{i}].max_vms"] = vm.count
    pinned = edited(staged, edits)
    return pinned, StagedPlanner(pinned).solve("makespan")


def replayed(inst, result) -> float:
    """The simulated makespan of one replay of ``result``'s plan (seed SEED)."""
    report = simulate_plan(inst, result.plan, metrics=result.metrics, seed=SEED)
    return report.simulated["makespan_s"]


def main(staged_path: str, single_path: str) -> None:
    staged = load_instance(staged_path)
    single = edited(load_instance(single_path), {"planning.basis": "steady_state"})
    deadline = staged.schedule.deadline
    average = solve_instance(single).plan
    pinned, at_stages = fleet_run(staged, average)
    fixed = StagedPlanner(staged).solve()
    replan_inst = edited(staged, {"stages.capacity": "replan", "stages.switch_time": 1800})
    replan = StagedPlanner(replan_inst).solve()
    rows = [
        ("one stage, average tokens", average, average.total_cost, None),
        ("  the same fleet, staged run", at_stages.plan, None, replayed(pinned, at_stages)),
        ("staged, capacity: fixed", fixed.plan, fixed.plan.total_cost, replayed(staged, fixed)),
        ("staged, capacity: replan", replan.plan, replan.plan.total_cost, replayed(replan_inst, replan)),
    ]
    print(
        f"{'plan':<30} {'$/hour':>8} {'makespan':>10} {'vs deadline':>12} {'replayed':>10} {'late':>9} {'total cost':>12}"
    )
    for name, plan, total, span in rows:
        late = plan.makespan_s - deadline
        when = f"{late / 3600:+.1f} h" if late > 0 else "on time"
        sim = f"{span / 86400:.3f} d" if span is not None else "-"
        sim_late = "-" if span is None else (f"{(span - deadline) / 3600:+.1f} h" if span > deadline else "on time")
        cost = f"${total:,.0f}" if total is not None else "-"
        print(
            f"{name:<30} {plan.hourly_cost:>8,.0f} {plan.makespan_s / 86400:>8.3f} d {when:>12} {sim:>10} {sim_late:>9} "
            f"{cost:>12}"
        )
    print()
    print("cadence per stage (s):")
    for label, plan in (("same fleet", at_stages.plan), ("fixed", fixed.plan), ("replan", replan.plan)):
        print(f"  {label:<11}" + "  ".join(f"{s.name} {s.cadence_s:,.0f}" for s in plan.stages))
    print(
        "replan's capacity per stage: "
        + "; ".join(
            f"{s.name}: {s.inference[0].replicas:,} replicas, {s.training_groups:,} groups, ${s.hourly_cost:,.0f}/h"
            for s in replan.plan.stages
        )
    )
    saved = fixed.plan.total_cost - replan.plan.total_cost
    print(f"re-planning saves ${saved:,.0f} ({saved / fixed.plan.total_cost:.1%}) after its switches")


if __name__ == "__main__":
    main(*sys.argv[1:3])
