"""The rules of MODEL.md §12 that need the whole instance, and the instance one stage runs as."""

from __future__ import annotations

from trainground.models.errors import Problem
from trainground.models.instance import Instance
from trainground.models.stages import Stage


def stage_errors(inst: Instance) -> list[Problem]:
    """Rules of MODEL §12 that need the whole instance: iterations that sum to the workload's, unique names,
    and the sections the planner does not play stages with (each names the field to change)."""
    stages = inst.stages
    if stages is None:
        return []
    problems: list[Problem] = []
    total = sum(s.iterations for s in stages.list)
    if total != inst.workload.iterations:
        problems.append(
            Problem(
                "stages.list",
                f"the stages' iterations sum to {total}, but workload.iterations is {inst.workload.iterations}: "
                "they must be equal",
            )
        )
    seen: set[str] = set()
    for i, stage in enumerate(stages.list):
        if stage.name in seen:
            problems.append(Problem(f"stages.list[{i}].name", f"duplicate name '{stage.name}'"))
        seen.add(stage.name)
    problems += _unsupported(inst)
    return problems


def _unsupported(inst: Instance) -> list[Problem]:
    """Confidence solves (MODEL §9) and reliability (§13) do not play stages yet, so a staged instance refuses
    them (its uncertainty factors serve ``risk``)."""
    found = []
    for where, value in (
        ("uncertainty.confidence", inst.uncertainty is not None and inst.uncertainty.confidence is not None),
        ("reliability", inst.reliable),
    ):
        if value:
            found.append(Problem(where, "is not available with stages yet; remove it or remove stages"))
    return found


_STAGE_FIELDS = (  # a run-level field a stage may set for itself, and its name under the stage
    ("environment.occupancy", "occupancy"),
    ("workload.tokens_per_attempt", "tokens_per_attempt"),
    ("workload.intake_rate", "intake_rate"),
)


def switch_warnings(inst: Instance) -> list[str]:
    """A switch time under ``capacity: fixed`` does nothing (one capacity never changes): said, not refused."""
    if inst.stages is None or inst.stages.capacity != "fixed" or inst.stages.switch_time == 0:
        return []
    return [
        f"stages.switch_time: {inst.stages.switch_time:g} s applies to capacity: replan only; under fixed one "
        "capacity serves every stage and nothing switches, so it is ignored"
    ]


def factor_warnings(inst: Instance) -> list[str]:
    """Warnings for uncertainty factors whose draws miss stages: a factor on a run-level field (the lifetimes'
    ``environment.occupancy.median``, say) scales only the stages that inherit it; a stage that sets the field
    for itself takes its own path's draws (``stages.list[*].occupancy.median``), which the factor may not list."""
    if inst.stages is None or inst.uncertainty is None:
        return []
    out = []
    for factor in inst.uncertainty.factors:
        for path in factor.paths:
            for run_level, own in _STAGE_FIELDS:
                if not path.startswith(run_level):
                    continue
                suffix = own + path[len(run_level) :]
                missed = [
                    stage.name
                    for p, stage in enumerate(inst.stages.list)
                    if getattr(stage, own) is not None
                    and not {f"stages.list[*].{suffix}", f"stages.list[{p}].{suffix}"} & set(factor.paths)
                ]
                if missed:
                    who = (
                        f"stage {missed[0]} sets for itself: its draws do not reach it"
                        if len(missed) == 1
                        else f"stages {', '.join(missed[:-1])} and {missed[-1]} set for themselves: its draws do not "
                        "reach them"
                    )
                    out.append(
                        f"uncertainty factor '{factor.name}' scales {path}, which {who}; add stages.list[*].{suffix} "
                        "to its paths"
                    )
    return out


def refuse_confidence(inst: Instance, flag: str) -> list[Problem]:
    """The problem a command-line confidence solve (``flag``) of a staged instance is (none without stages):
    the option sets what ``uncertainty.confidence`` would, which :func:`_unsupported` refuses."""
    if inst.stages is None:
        return []
    return [Problem("stages", f"{flag} is not available with stages yet; remove it or remove stages")]


def stage_instance(inst: Instance, stage: Stage) -> Instance:
    """The instance stage ``stage`` runs as: its iterations and the figures it sets, everything else the
    instance's (the cadence grid's top then defaults to the stage's deadline pace); no stages, no budgets
    (budgets bound the whole run, so the staged model holds them) and no uncertainty section (its paths
    name the run's fields: :mod:`solver.uncertainty.stages` maps a scenario onto each stage)."""
    workload = inst.workload.model_copy(
        update={
            "iterations": stage.iterations,
            "tokens_per_attempt": stage.tokens_per_attempt or inst.workload.tokens_per_attempt,
            "intake_rate": stage.intake_rate or inst.workload.intake_rate,
        }
    )
    environment = inst.environment
    if stage.occupancy is not None:
        environment = environment.model_copy(update={"occupancy": stage.occupancy})
    training = inst.training.model_copy(update={"update_time": _scaled(inst.training.update_time, stage)})
    limits = inst.limits.model_copy(update={"max_hourly_cost": None, "max_total_cost": None})
    return inst.model_copy(
        update={
            "workload": workload,
            "environment": environment,
            "training": training,
            "limits": limits,
            "stages": None,
            "uncertainty": None,
        }
    )


def _scaled(law, stage: Stage):
    """The update-time law ``law`` with every time multiplied by the stage's update_time_scale."""
    scale = stage.update_time_scale
    if scale == 1.0:
        return law
    if law.law == "table":
        points = [p.model_copy(update={"seconds": p.seconds * scale}) for p in law.points]
        return law.model_copy(update={"points": points})
    return law.model_copy(update={"reference_time": law.reference_time * scale})


def stage_rows_instance(inst: Instance, stage: Stage) -> Instance:
    """The instance whose rows a stage must meet (MODEL §12: rows 2, 3, 5, 6 and 7 per stage, the deadline
    the run's): :func:`stage_instance` with its cadence grid's top pinned where it defaults and, when the
    start-up is counted (§8, and under hold), no deadline of its own. A stage's own start-up
    ``fill + (n_p - 1)·L_p + U`` is no part of the run's makespan, so it must not cut a cadence the run can
    use; without the start-up, ``n_p·L_p + extra_time`` is part of it and the deadline stays."""
    si = stage_instance(inst, stage)
    if not si.counts_startup:
        return si
    sched = si.schedule
    top = sched.cadence.max
    if top is None:
        top = (sched.deadline - sched.extra_time) / stage.iterations
    schedule = sched.model_copy(
        update={"deadline": float("inf"), "cadence": sched.cadence.model_copy(update={"max": top})}
    )
    return si.model_copy(update={"schedule": schedule})
