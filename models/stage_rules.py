"""The rules of MODEL.md §12 that need the whole instance, and the instance one stage runs as."""

from __future__ import annotations

from trainground.models.errors import Problem
from trainground.models.instance import Instance
from trainground.models.stages import Stage


def stage_errors(inst: Instance) -> list[Problem]:
    """Rules of MODEL §12 that need the whole instance: iterations that sum to the workload's, unique names,
    and the combinations the planner does not play stages in (each names the field to change)."""
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
    if stages.capacity == "fixed" and stages.switch_time > 0:
        problems.append(Problem("stages.switch_time", "applies to capacity: replan only; remove it or set 0"))
    problems += _unsupported(inst)
    return problems


def _unsupported(inst: Instance) -> list[Problem]:
    """Staged plans are solved on the steady-state basis without start-up (MODEL §12, §2–§4); the hold basis,
    the start-up of §8, uncertainty and reliability do not play stages yet, so a staged instance refuses them."""
    found = []
    if inst.planning.basis == "hold":
        found.append(
            Problem(
                "planning.basis",
                "a staged instance is planned on planning.basis: steady_state (replays that play the stages in "
                "order are not available yet); set planning: {basis: steady_state}",
            )
        )
    for where, value in (
        ("schedule.count_startup", inst.schedule.count_startup),
        ("uncertainty", inst.uncertainty is not None),
        ("reliability", inst.reliable),
    ):
        if value:
            found.append(Problem(where, "is not available with stages yet; remove it or remove stages"))
    return found


def stage_instance(inst: Instance, stage: Stage) -> Instance:
    """The instance stage ``stage`` runs as: its iterations and the figures it sets, everything else the
    instance's (the cadence grid's top then defaults to the stage's deadline pace); no stages, no budgets
    (budgets bound the whole run, so the staged model holds them)."""
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
