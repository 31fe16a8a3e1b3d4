"""The independent check of a staged plan (MODEL.md §12), written from MODEL.md on its own.

Each stage's decisions are checked as a one-stage plan of the instance that stage runs as by
:func:`solver.verify.verify_plan` (rows 1–7 and the stage's costs at its cadence, with the
verifier's own laws); what spans the stages is recomputed here from the plan alone: the stages
named and counted as the instance lists them, one K, the shared counts under ``fixed``, the run's
makespan ``T = Σ_p n_p·L_p + extra_time (+ switch_time per change of capacity under replan)``
against the deadline, the run's costs and budgets. Binding rows name their stage
(``throughput[late]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.models.stage_rules import stage_instance
from trainground.solver.tolerances import REL_TOL
from trainground.solver.verify import COST_TOL, MAKESPAN_TOL, verify_plan

CAPACITY_ROWS = ("throughput", "pool_capacity")
"""Binding rows that size the inference fleet: a stage where one binds is a stage the GPUs are sized for."""


@dataclass
class StagedCheck:
    violations: list[str] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)
    metrics: Metrics | None = None
    stages: list[dict] = field(default_factory=list)  # per stage: its figures and binding rows

    @property
    def ok(self) -> bool:
        return not self.violations


def _capacity(plan: Plan) -> tuple:
    return (
        tuple((r.shape, r.replicas) for r in plan.inference),
        plan.training_groups,
        tuple((c.type, c.count) for c in plan.local_nodes),
        tuple((c.type, c.count) for c in plan.cloud_vms),
    )


def verify_staged(inst: Instance, plan: Plan) -> StagedCheck:
    """Every check of a staged plan; ``stages`` holds each stage's figures for the plan's rows."""
    out = StagedCheck()
    spec = inst.stages
    rows = plan.stages or []
    if spec is None or [(r.name, r.iterations) for r in rows] != [(s.name, s.iterations) for s in spec.list]:
        out.violations.append("stages: the plan's stages are not the instance's (names and iterations, in order)")
        return out
    parts = [r.plan for r in rows]
    if any(p is None for p in parts):
        out.violations.append("stages: a stage carries no plan of its own")
        return out
    checks = []
    for stage, row, part in zip(spec.list, rows, parts):
        assert part is not None
        si = stage_instance(inst, stage)
        check = verify_plan(si, part)
        out.violations += [f"stage {stage.name}: {v}" for v in check.violations]
        if abs(row.cadence_s - part.cadence_s) > MAKESPAN_TOL * part.cadence_s:
            out.violations.append(f"stages[{stage.name}].cadence_s: {row.cadence_s!r} is not its plan's")
        checks.append(check)
    if out.violations:
        return out
    _check_shared(inst, plan, parts, out)  # type: ignore[arg-type]
    T = _check_run(inst, plan, parts, out)  # type: ignore[arg-type]
    _stage_rows(inst, checks, T, out)
    return out


def _check_shared(inst: Instance, plan: Plan, parts: list[Plan], out: StagedCheck) -> None:
    """One K for every stage; under ``fixed`` one capacity, the plan's."""
    assert inst.stages is not None
    if len({p.versions_kept for p in parts}) != 1 or parts[0].versions_kept != plan.versions_kept:
        out.violations.append("versions_kept: K must be one for every stage and the plan's")
    if inst.stages.capacity == "fixed":
        for stage, part in zip(inst.stages.list, parts):
            if _capacity(part) != _capacity(plan):
                out.violations.append(f"stage {stage.name}: capacity: fixed, but its counts are not the plan's")


def _check_run(inst: Instance, plan: Plan, parts: list[Plan], out: StagedCheck) -> float:
    """MODEL §12's makespan, deadline and costs, and the budgets of §3.8 (replan: the largest stage hourly
    cost); returns the recomputed makespan T."""
    assert inst.stages is not None
    spec, sched = inst.stages, inst.schedule
    durations = [s.iterations * p.cadence_s for s, p in zip(spec.list, parts)]
    switches = 0
    if spec.capacity == "replan":
        switches = sum(1 for a, b in zip(parts, parts[1:]) if _capacity(a) != _capacity(b))
    T = math.fsum(durations) + sched.extra_time + spec.switch_time * switches
    if abs(T - plan.makespan_s) > MAKESPAN_TOL * T:
        out.violations.append(f"makespan_s: plan says {plan.makespan_s!r}, recomputed Σ n_p·L_p (+ switches) = {T!r}")
    if T > sched.deadline * (1 + REL_TOL):
        out.violations.append(f"deadline: makespan {T:g} s > {sched.deadline:g} s")
    step = sched.cadence.step
    if T + min(s.iterations for s in spec.list) * step > sched.deadline * (1 + REL_TOL):
        out.binding.append("deadline")
    hourly_of = [p.hourly_cost for p in parts]  # each checked against its counts by verify_plan
    if spec.capacity == "fixed":
        hourly, total = hourly_of[0], hourly_of[0] * T / 3600.0
    else:
        paid = [h * d for h, d in zip(hourly_of, durations)] + [hourly_of[-1] * sched.extra_time]
        paid += [b.hourly_cost * spec.switch_time for a, b in zip(parts, parts[1:]) if _capacity(a) != _capacity(b)]
        hourly, total = max(hourly_of), math.fsum(paid) / 3600.0
    for name, mine, theirs in (("hourly_cost", hourly, plan.hourly_cost), ("total_cost", total, plan.total_cost)):
        if abs(mine - theirs) > COST_TOL * max(1.0, abs(mine)):
            out.violations.append(f"{name}: plan says {theirs:.10g}, recomputed {mine:.10g}")
    limits = inst.limits
    for name, limit, value in (
        ("max_hourly_cost", limits.max_hourly_cost, hourly),
        ("max_total_cost", limits.max_total_cost, total),
    ):
        if limit is not None and value > limit * (1 + REL_TOL):
            out.violations.append(f"{name}: {value:.10g} > {limit:.10g}")
    return T


def _stage_rows(inst: Instance, checks: list, T: float, out: StagedCheck) -> None:
    """Each stage's figures and binding rows (named with the stage), which stage sizes the fleet, and the
    run's metrics: those of the first stage that sizes it (else the one with the largest token demand),
    with the run's time margin."""
    assert inst.stages is not None
    sizing = None
    for stage, check in zip(inst.stages.list, checks):
        metrics = check.metrics
        binding = [b for b in check.binding if b != "deadline"]
        sizes = any(b.split("[")[0] in CAPACITY_ROWS for b in binding)
        if sizes and sizing is None:
            sizing = metrics
        out.binding += [f"{b}[{stage.name}]" if "[" not in b else f"{b[:-1]}, {stage.name}]" for b in binding]
        out.stages.append(
            {
                "token_demand_per_s": metrics.token_demand_per_s,
                "token_supply_per_s": metrics.token_supply_per_s,
                "update_time_s": metrics.update_time_s,
                "inflight_mean": metrics.inflight_mean,
                "mean_version_gap": metrics.mean_version_gap,
                "binding": binding,
                "sizes_fleet": sizes,
            }
        )
    if sizing is None:
        sizing = max((c.metrics for c in checks), key=lambda m: m.token_demand_per_s)
    deadline = inst.schedule.deadline
    out.metrics = sizing.model_copy(update={"time_margin": (deadline - T) / deadline})
