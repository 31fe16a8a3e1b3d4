"""explain, solve, schema: one instance, one answer."""

from __future__ import annotations

import json
import sys

import click

from commands.common import (
    OBJECTIVE,
    STATUS_EXIT,
    ProgressLine,
    basis_option,
    console,
    edits_option,
    guarded,
    load_with_edits,
    load_with_warnings,
    with_basis,
)
from models.result import Status
from render.tables import render_explanation, render_result


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--cadence", type=float, help="Seconds per outer iteration (default: the deadline pace).")
@click.option("--inference-gpus", type=int, help="Inference card count, for the per-card thresholds.")
@click.option("--json", "as_json", is_flag=True, help="Print docs/model.md §6 keys as JSON.")
@edits_option
@guarded
def explain(instance: str, cadence: float | None, inference_gpus: int | None, as_json: bool, edits) -> None:
    """The seed article's arithmetic on INSTANCE, each figure with its formula (no optimisation)."""
    from solver.explain import explain as run_explain

    if cadence is not None and not cadence > 0:
        raise click.BadParameter(f"must be > 0, got {cadence}", param_hint="--cadence")
    if inference_gpus is not None and inference_gpus <= 0:
        raise click.BadParameter(f"must be > 0, got {inference_gpus}", param_hint="--inference-gpus")
    result = run_explain(load_with_edits(instance, edits), cadence, inference_gpus)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    render_explanation(console(), result)


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--objective", type=OBJECTIVE, help="Override the instance's objective.")
@click.option(
    "--time-limit", type=click.FloatRange(min=0, min_open=True), help="Seconds; returns the incumbent and its gap."
)
@click.option("--json", "as_json", is_flag=True, help="Print the docs/model.md §6 result as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the JSON result to this file.")
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1),
    metavar="ALPHA",
    help="Plan to be on time in at least ALPHA of the uncertainty section's scenarios (docs/model.md §9).",
)
@click.option(
    "--simulate",
    "replications",
    type=click.IntRange(min=1, max=10**4),
    is_flag=False,
    flag_value=1,
    default=None,
    metavar="[R]",
    help="Replay the plan R times (default 1, the full run) and print the simulated verdict.",
)
@click.option(
    "--levers/--no-levers",
    "with_levers",
    default=True,
    show_default=True,
    help="Re-solve with each limit relaxed one step and show what it would save (JSON key 'levers').",
)
@click.option(
    "--levers-time",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="S",
    help="Seconds all the lever re-solves may take together (within what --time-limit leaves).",
)
@basis_option
@edits_option
@guarded
def solve(
    instance: str,
    objective: str | None,
    time_limit: float | None,
    as_json: bool,
    out: str | None,
    confidence: float | None,
    replications: int | None,
    with_levers: bool,
    levers_time: float,
    basis: str | None,
    edits,
) -> None:
    """Cheapest (or fastest) plan for INSTANCE, solved exactly and verified; under the default basis, hold,
    one that finishes on time in its own replays (docs/model.md §11).

    Exit codes: 0 optimal, 3 infeasible (diagnosis printed), 4 time limit, 2 invalid input, 1 internal error.
    """
    from solver.stopwatch import Stopwatch

    progress = ProgressLine()
    clock = Stopwatch(time_limit, progress)  # the time limit covers the whole command, loading included
    inst, warnings = load_with_warnings(instance, with_basis(edits, basis))
    inst = with_confidence(instance, inst, confidence)
    load_seconds = clock.elapsed()
    from drivers.hold import solve_planned
    from solver.pairs import TableCache

    cache = TableCache(8)  # the solve's pair quantities, which the levers' re-solves of edited copies share
    with progress:
        result = confident_solve(instance, lambda: solve_planned(inst, objective, clock=clock, cache=cache))
        if result.status == Status.INFEASIBLE:  # checked here only to import the diagnosis's modules when it runs
            from drivers.diagnose import diagnosed

            result = diagnosed(inst, result, clock=clock, notes=warnings)
    result.timings.load = load_seconds
    from commands.simulate import simulated_verdict, startup_estimate

    simulated = simulated_verdict(inst, result, replications, as_json) if replications else None
    found = None
    if with_levers and result.status == "optimal" and result.confidence is None:  # levers re-solve deterministic limits
        from drivers.levers import levers

        # the levers share what the command's --time-limit leaves (and --levers-time at most)
        budget = levers_time if time_limit is None else min(levers_time, max(0.0, time_limit - clock.elapsed()))
        found = levers(inst, result, budget, cache, allowance=result.hold.allowance_s if result.hold else 0.0)
    payload = result.to_json()
    if found is not None:
        payload["levers"] = found.to_json()
    if simulated is not None:
        from simulate.verdicts import verdict_of

        payload["simulation"] = verdict_of(simulated)
    if out:
        from simulate.output import write_json

        write_json(out, payload)
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    else:
        render_result(console(), result)
        if result.hold is not None and result.plan is not None:
            from render.hold import render_hold

            render_hold(console(), result)
        if result.confidence is not None and result.plan is not None:
            render_confidence_answer(instance, inst, result, objective)
        from render.levers import render_levers

        render_levers(console(), found)
        if result.plan is not None:
            from render.simulate import render_solve_verdict

            render_solve_verdict(console(), inst.counts_startup, startup_estimate(inst, result), simulated)
    sys.exit(STATUS_EXIT[result.status])


def with_confidence(file: str, inst, confidence: float | None):
    """``inst`` planned for ``confidence`` (MODEL §9) when one is given; it needs an uncertainty section."""
    if confidence is None:
        return inst
    if inst.uncertainty is None:
        from models.load import InstanceError, Problem

        raise InstanceError(
            file, [Problem("uncertainty", "--confidence needs an uncertainty section (docs/model.md §9)")]
        )
    return inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": confidence})})


def confident_solve(file: str, solve):
    """``solve()``, with an uncertainty section a confidence solve cannot read reported as bad input."""
    from models.load import InstanceError, Problem
    from solver.confidence_table import Unsupported

    try:
        return solve()
    except Unsupported as exc:
        raise InstanceError(file, [Problem(exc.path, exc.rule)]) from None


def render_confidence_answer(file: str, inst, result, objective: str | None) -> None:
    """The confidence report, and what the plan holds beyond the deterministic optimum (a second solve)."""
    from render.confidence import render_confidence
    from solver.confidence import what_drove
    from solver.scenarios import draw
    from solver.solve import Planner

    deterministic = inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": None})})
    base = Planner(deterministic).solve(objective)
    base_plan = base.plan if base.plan is not None else None
    render_confidence(console(), result, base_plan, what_drove(inst, result.plan, base_plan, draw(inst)))


@click.command()
@guarded
def schema() -> None:
    """Print the JSON Schema of instance files (for editor autocompletion)."""
    from models.instance import Instance

    click.echo(json.dumps(Instance.model_json_schema(mode="validation"), indent=2))
