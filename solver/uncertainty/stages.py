"""A staged plan (MODEL.md §12) in the scenarios of MODEL §9: each stage at its realised cadence, the run's
makespan and cost. No pyomo; arrays over scenarios.

A scenario multiplies the fields its factors' paths reach, the stages' own fields included
(``stages.list[*].tokens_per_attempt``, ``stages.list[1].occupancy.median``, ``...update_time_scale``);
each stage then runs as the instance it is in that scenario (:func:`models.stage_rules.stage_instance`
of the scaled instance). :func:`stage_scenarios` gives those per-stage scales: a stage that sets a
field takes its own path's multipliers, one that inherits it takes the instance's, and a stage's
``update_time_scale`` multiplies its update law's times. Each stage's realised cadence is that of
:func:`solver.uncertainty.scenarios.evaluate` on its own plan; the run's makespan sums the stages' parts as §12 does
(with the start-up, the first stage's fill and the last stage's update), its cost bills each stage's
hourly cost at the scenario's prices over its part (one hourly cost under ``fixed``).
"""

from __future__ import annotations

import numpy as np

from trainground.models.instance import Instance
from trainground.models.stage_rules import stage_instance
from trainground.solver.tolerances import REL_TOL
from trainground.solver.uncertainty import admission, batch, drop
from trainground.solver.uncertainty import scenarios as sc


def stage_scenarios(inst: Instance, scen: sc.Scenarios, p: int) -> sc.Scenarios:
    """The scenarios of stage ``p``'s instance: the run's scales on the fields the stage inherits, the stage's
    own paths' scales on the fields it sets, and its update_time_scale's on its update law's times."""
    assert inst.stages is not None
    stage, prefix = inst.stages.list[p], f"stages.list[{p}]"
    scale = {path: v for path, v in scen.scale.items() if not path.startswith("stages.")}
    for field, target in (
        ("tokens_per_attempt", "workload.tokens_per_attempt"),
        ("intake_rate", "workload.intake_rate"),
    ):
        if getattr(stage, field) is not None:
            scale.pop(target, None)
            own = scen.scale.get(f"{prefix}.{field}")
            if own is not None:
                scale[target] = own
    if stage.occupancy is not None:
        scale = {path: v for path, v in scale.items() if not path.startswith("environment.occupancy")}
        for path, v in scen.scale.items():
            if path.startswith(f"{prefix}.occupancy"):
                scale["environment.occupancy" + path[len(f"{prefix}.occupancy") :]] = v
    factor = scen.scale.get(f"{prefix}.update_time_scale")
    if factor is not None:
        law = inst.training.update_time
        times = (
            [f"training.update_time.points[{i}].seconds" for i in range(len(law.points))]
            if law.law == "table"
            else ["training.update_time.reference_time"]
        )
        for path in times:
            scale[path] = scale[path] * factor if path in scale else factor.copy()
    return sc.Scenarios(scen.factors, scen.draws, scale, scen.seed)


def evaluate_staged(inst: Instance, plan, scen: sc.Scenarios, allowance: float = 0.0) -> sc.Outcome:
    """``plan`` (a staged plan fitting ``inst``, each stage's own plan in ``plan.stages[p].plan``) in every
    scenario, on time iff T_s + allowance <= deadline. ``cadence``: the stages' iteration-weighted mean
    realised cadence; ``attempts``: the largest stage attempt rate."""
    assert inst.stages is not None and plan.stages
    stages, n = inst.stages, inst.workload.iterations
    run = sc.values_of(inst, scen)
    parts, hourly, cadences, attempts = [], [], [], []
    for p, (stage, row) in enumerate(zip(stages.list, plan.stages)):
        si, sp = stage_instance(inst, stage), stage_scenarios(inst, scen, p)
        part_plan = row.plan
        out = sc.evaluate(si, part_plan, sp)
        part = stage.iterations * out.cadence
        if inst.counts_startup:
            update = np.nan_to_num(sc.update_time(si, sp, part_plan.training_gpus), nan=np.inf)
            if p == 0:  # fill + (n_1 - 1)·L_1 = T_s of the stage alone less its update and extra time
                part = out.makespan - update - sc.values_of(si, sp).extra
            if p == len(stages.list) - 1:
                part = part + update
        parts.append(np.where(np.isfinite(out.cadence), part, np.inf))
        hourly.append(sc.hourly_cost(inst, part_plan, scen))
        cadences.append(stage.iterations * out.cadence)
        attempts.append(out.attempts)
    changes = plan.capacity_changes() if stages.capacity == "replan" else []
    with np.errstate(invalid="ignore"):
        makespan = sum(parts) + run.extra + stages.switch_time * len(changes)
        if stages.capacity == "fixed":
            rate, total = hourly[0], hourly[0] * makespan / 3600.0
        else:
            paid = sum(h * d for h, d in zip(hourly, parts)) + hourly[-1] * run.extra
            paid = paid + sum(hourly[p + 1] * stages.switch_time for p in changes)
            rate, total = np.max(np.stack(hourly), axis=0), paid / 3600.0
    return sc.Outcome(
        cadence=np.asarray(sum(cadences)) / n,
        attempts=np.max(np.stack(attempts), axis=0),
        makespan=makespan,
        deadline=run.deadline,
        hourly_cost=rate,
        total_cost=total,
        on_time=makespan + allowance <= run.deadline * (1 + REL_TOL),
        allowance=allowance,
    )


def evaluate_any(inst: Instance, plan, scen: sc.Scenarios, allowance: float = 0.0) -> sc.Outcome:
    """:func:`evaluate_staged` for a staged instance, :func:`solver.uncertainty.drop.evaluate` for an async drop run
    with regime fields set, :func:`solver.uncertainty.batch.evaluate` for a batch run and
    :func:`solver.uncertainty.admission.evaluate` for an admission run (MODEL §14),
    :func:`solver.uncertainty.scenarios.evaluate` for any other."""
    if inst.stages is not None:
        return evaluate_staged(inst, plan, scen, allowance)
    if drop.applies(inst):
        return drop.evaluate(inst, plan, scen, allowance)
    if batch.applies(inst):
        return batch.evaluate(inst, plan, scen, allowance)
    if admission.applies(inst):
        return admission.evaluate(inst, plan, scen, allowance)
    return sc.evaluate(inst, plan, scen, allowance)
