"""A staged plan (MODEL.md §12) assembled from its stages' one-stage plans: the run's makespan, costs and stage rows.

Both staged models (:mod:`solver.stages.model`, :mod:`solver.stages.compact`) give each stage's decisions as a
one-stage plan of the instance that stage runs as; :func:`run_plan` makes the run's plan of them, which the
staged verifier (:mod:`solver.verify.stages`) recomputes on its own.
"""

from __future__ import annotations

from trainground.models.instance import Instance
from trainground.models.result import Plan, StagePlan, capacity_changes
from trainground.solver.laws import calculus as calc


def run_plan(inst: Instance, insts: list[Instance], parts: list[Plan]) -> Plan:
    """The run's plan of its stages' plans ``parts`` (each with its own start-up, :func:`own_startup`)."""
    assert inst.stages is not None
    stages = inst.stages
    durations, makespan, changes = run_span(inst, insts, parts)
    hourly_of = [p.hourly_cost for p in parts]
    paid = [h * d for h, d in zip(hourly_of, durations)] + [hourly_of[-1] * inst.schedule.extra_time]
    paid += [parts[p + 1].hourly_cost * stages.switch_time for p in changes]
    if stages.capacity == "fixed":
        hourly, total = hourly_of[0], hourly_of[0] * makespan / 3600.0
    else:
        hourly, total = max(hourly_of), sum(paid) / 3600.0
    top = _largest(parts)
    return top.model_copy(
        update={
            "cadence_s": sum(s.iterations * p.cadence_s for s, p in zip(stages.list, parts)) / inst.workload.iterations,
            "makespan_s": makespan,
            "startup_s": parts[0].startup_s if inst.counts_startup else None,
            "hourly_cost": hourly,
            "total_cost": total,
            "stages": [
                _stage_row(s.name, s.iterations, p, d, stages.capacity)
                for s, p, d in zip(stages.list, parts, durations)
            ],
        }
    )


def own_startup(si: Instance, plan: Plan) -> Plan:
    """A stage's one-stage plan with its own start-up (MODEL §8) at the groups it has: the pair's row may
    count the update at fewer groups than the stage's (the shared count's ``extra_groups``)."""
    if not si.counts_startup or plan.startup_s is None:
        return plan
    span = plan.startup_s + (si.workload.iterations - 1) * plan.cadence_s + final_update(si, plan)
    span += si.schedule.extra_time
    return plan.model_copy(update={"makespan_s": span, "total_cost": plan.hourly_cost * span / 3600.0})


def final_update(si: Instance, plan: Plan) -> float:
    """U(m) of stage instance ``si`` at ``plan``'s training groups, s."""
    t = si.training
    return float(calc.update_time(t.update_time, plan.training_groups * t.gpus_per_group))


def run_span(inst: Instance, insts: list[Instance], parts: list[Plan]) -> tuple[list[float], float, list[int]]:
    """Each stage's duration (its part of the run: n_p·L_p, with the start-up counted the first stage's fill
    less one cadence and the last stage's final update), the run's makespan T (MODEL §12) and the stages after
    which the capacity changes (replan; none under fixed)."""
    assert inst.stages is not None
    stages = inst.stages
    durations = [s.iterations * p.cadence_s for s, p in zip(stages.list, parts)]
    if inst.counts_startup:
        assert parts[0].startup_s is not None
        durations[0] += parts[0].startup_s - parts[0].cadence_s
        durations[-1] += final_update(insts[-1], parts[-1])
    changes = capacity_changes(parts) if stages.capacity == "replan" else []
    return durations, sum(durations) + inst.schedule.extra_time + stages.switch_time * len(changes), changes


def _largest(parts: list[Plan]) -> Plan:
    """The stage plan whose counts stand for the run's: under ``fixed`` every stage's are equal (the first);
    under ``replan`` the stage with the largest hourly cost (the most the run holds at once)."""
    return max(parts, key=lambda p: p.hourly_cost)


def _stage_row(name: str, iterations: int, plan: Plan, duration: float, capacity: str) -> StagePlan:
    """A stage's row before verification (the verifier fills demand, supply, update time, load, gap, binding)."""
    own = capacity == "replan"
    return StagePlan(
        name=name,
        iterations=iterations,
        cadence_s=plan.cadence_s,
        duration_s=duration,
        token_demand_per_s=0.0,
        token_supply_per_s=0.0,
        update_time_s=0.0,
        inflight_mean=0.0,
        mean_version_gap=0.0,
        inference=plan.inference if own else None,
        training_groups=plan.training_groups if own else None,
        local_nodes=plan.local_nodes if own else None,
        cloud_vms=plan.cloud_vms if own else None,
        hourly_cost=plan.hourly_cost if own else None,
        plan=plan,
    )
