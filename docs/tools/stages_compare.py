"""The plans of docs/stages.md side by side: the one-stage plan sized for the average tokens per attempt (its
fleet then held fixed through the stages: the shortest staged run it allows), the staged plan at one fixed
capacity and the staged plan that re-plans per stage (30 min per switch).

    python docs/tools/stages_compare.py STAGED.yaml ONE-STAGE.yaml
"""

from __future__ import annotations

import sys

from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.solver.solve import solve_instance
from trainground.solver.stages import StagedPlanner


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
    return StagedPlanner(edited(staged, edits)).solve("makespan")


def main(staged_path: str, single_path: str) -> None:
    staged = load_instance(staged_path)
    single = edited(load_instance(single_path), {"planning.basis": "steady_state"})
    deadline = staged.schedule.deadline
    average = solve_instance(single).plan
    at_stages = fleet_run(staged, average)
    fixed = StagedPlanner(staged).solve().plan
    replan = StagedPlanner(edited(staged, {"stages.capacity": "replan", "stages.switch_time": 1800})).solve().plan
    rows = [
        ("one stage, average tokens", average.hourly_cost, average.makespan_s, average.total_cost),
        ("  the same fleet, staged run", at_stages.plan.hourly_cost, at_stages.plan.makespan_s, None),
        ("staged, capacity: fixed", fixed.hourly_cost, fixed.makespan_s, fixed.total_cost),
        ("staged, capacity: replan", replan.hourly_cost, replan.makespan_s, replan.total_cost),
    ]
    print(f"{'plan':<30} {'$/hour':>12} {'makespan':>11} {'vs deadline':>12} {'total cost':>14}")
    for name, hourly, span, total in rows:
        late = span - deadline
        when = f"{late / 3600:+.1f} h" if late > 0 else "on time"
        cost = f"${total:,.0f}" if total is not None else "-"
        print(f"{name:<30} {hourly:>12,.0f} {span / 86400:>9.3f} d {when:>12} {cost:>14}")
    print()
    print("cadence per stage (s):")
    for label, plan in (("same fleet", at_stages.plan), ("fixed", fixed), ("replan", replan)):
        print(f"  {label:<11}" + "  ".join(f"{s.name} {s.cadence_s:,.0f}" for s in plan.stages))
    print(
        "replan's capacity per stage: "
        + "; ".join(
            f"{s.name}: {s.inference[0].replicas:,} replicas, {s.training_groups:,} groups, ${s.hourly_cost:,.0f}/h"
            for s in replan.stages
        )
    )
    saved = fixed.total_cost - replan.total_cost
    print(f"re-planning saves ${saved:,.0f} ({saved / fixed.total_cost:.1%}) after its switches")


if __name__ == "__main__":
    main(*sys.argv[1:3])
