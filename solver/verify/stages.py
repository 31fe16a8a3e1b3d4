"""The independent check of a staged plan (MODEL.md §12), written from MODEL.md on its own.

Each stage's decisions are checked as a one-stage plan of the instance that stage's rows run as by
:func:`solver.verify.plan.verify_plan` (rows 1–7 and the stage's costs at its cadence, with the
verifier's own laws; under hold E^hold and the consumed gap at the stage's values; the deadline is
the run's, so a stage is held to none of its own when the start-up is counted); what spans the stages
is recomputed here from the plan alone: the stages named and counted as the instance lists them, one
K, the shared counts under ``fixed``, the run's makespan
``T = Σ_p n_p·L_p + extra_time (+ switch_time per change of capacity under replan)``, with the start-up
counted (§8, and under hold) ``+ fill_1 - L_1 + U_P``, the first stage's fill and the last stage's update
read by this module's own laws, against the deadline with the allowance Δ of §11 (T + Δ <= deadline),
the run's costs and budgets. Binding rows name their stage (``throughput[late]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.models.stage_rules import stage_rows_instance
from trainground.solver.verify import laws as laws
from trainground.solver.verify.check import COST_TOL, FILL_TOL, MAKESPAN_TOL, REL_TOL
from trainground.solver.verify.plan import verify_plan

SIZING_ROW = "throughput"
"""The binding row that sizes the inference fleet: a stage where it binds is a stage the replicas are sized for
(a full pool binds in every stage of one capacity alike)."""


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


def verify_staged(inst: Instance, plan: Plan, allowance: float = 0.0) -> StagedCheck:
    """Every check of a staged plan; ``stages`` holds each stage's figures for the plan's rows. ``allowance``:
    the run-variance allowance Δ of MODEL §11 item 4 (s), in the deadline row T + Δ <= deadline."""
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
    checks, insts = [], []
    for stage, row, part in zip(spec.list, rows, parts):
        assert part is not None
        si = stage_rows_instance(inst, stage)
        insts.append(si)
        check = verify_plan(si, part)
        out.violations += [f"stage {stage.name}: {v}" for v in check.violations]
        if abs(row.cadence_s - part.cadence_s) > MAKESPAN_TOL * part.cadence_s:
            out.violations.append(f"stages[{stage.name}].cadence_s: {row.cadence_s!r} is not its plan's")
        checks.append(check)
    if out.violations:
        return out
    _check_shared(inst, plan, parts, out)  # type: ignore[arg-type]
    T = _check_run(inst, insts, plan, parts, allowance, out)  # type: ignore[arg-type]
    _stage_rows(inst, checks, T + allowance, out)
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


def _durations(inst: Instance, insts: list[Instance], parts: list[Plan]) -> tuple[list[float], float]:
    """Each stage's part of the run (n_p·L_p; with the start-up counted, the first stage's fill less one
    cadence and the last stage's update at its groups added) and the first stage's fill (0 when not
    counted), read by :mod:`solver.verify.laws`."""
    assert inst.stages is not None
    durations = [s.iterations * p.cadence_s for s, p in zip(inst.stages.list, parts)]
    if not laws.startup_counted(inst):
        return durations, 0.0
    first, last = parts[0], parts[-1]
    law = laws.law_of(insts[0].environment.occupancy)
    fill = laws.run_at(insts[0], law, first.cadence_s, first.versions_kept, first.training_groups, True).startup
    t = insts[-1].training
    update = laws.update_time(t.update_time, last.training_groups * t.gpus_per_group)
    durations[0] += (fill if fill is not None else math.inf) - first.cadence_s
    durations[-1] += update
    return durations, fill or 0.0


def _check_run(
    inst: Instance, insts: list[Instance], plan: Plan, parts: list[Plan], allowance: float, out: StagedCheck
) -> float:
    """MODEL §12's makespan, deadline (with the allowance Δ) and costs, and the budgets of §3.8 (replan: the
    largest stage hourly cost); returns the recomputed makespan T."""
    assert inst.stages is not None
    spec, sched = inst.stages, inst.schedule
    durations, fill = _durations(inst, insts, parts)
    switches = 0
    if spec.capacity == "replan":
        switches = sum(1 for a, b in zip(parts, parts[1:]) if _capacity(a) != _capacity(b))
    T = math.fsum(durations) + sched.extra_time + spec.switch_time * switches
    if not abs(T - plan.makespan_s) <= MAKESPAN_TOL * T + FILL_TOL * fill:
        out.violations.append(
            f"makespan_s: plan says {plan.makespan_s!r}, recomputed Σ_p part_p (+ switches) + extra_time = {T!r}"
        )
    if not T + allowance <= sched.deadline * (1 + REL_TOL):
        with_allowance = f" + allowance {allowance:g} s" if allowance else ""
        out.violations.append(f"deadline: makespan {T:g} s{with_allowance} > {sched.deadline:g} s")
    step = sched.cadence.step
    if T + allowance + min(s.iterations for s in spec.list) * step > sched.deadline * (1 + REL_TOL):
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


def _stage_rows(inst: Instance, checks: list, held: float, out: StagedCheck) -> None:
    """Each stage's figures and binding rows (named with the stage), which stages size the fleet, and the
    run's metrics: those of the first stage that sizes it (else the one with the least token supply over its
    demand), with the run's time margin (deadline - T - Δ)/deadline (``held``: T + Δ)."""
    assert inst.stages is not None
    sizing = None
    for p, (stage, check) in enumerate(zip(inst.stages.list, checks)):
        metrics = check.metrics
        binding = [b for b in check.binding if b != "deadline"]
        sizes = any(b.split("[")[0] == SIZING_ROW for b in binding)
        if sizes and sizing is None:
            sizing = p
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
                "run_metrics": False,
            }
        )
    if sizing is None:
        margins = [c.metrics.token_supply_per_s / max(c.metrics.token_demand_per_s, 1e-300) for c in checks]
        sizing = min(range(len(checks)), key=margins.__getitem__)
    out.stages[sizing]["run_metrics"] = True
    deadline = inst.schedule.deadline
    out.metrics = checks[sizing].metrics.model_copy(update={"time_margin": (deadline - held) / deadline})
