"""explain, solve, schema: one instance, one answer."""

from __future__ import annotations

import json
import sys

import click

from trainground.commands.common import (
    OBJECTIVE,
    STATUS_EXIT,
    Finite,
    ProgressLine,
    basis_option,
    confidence_input,
    console,
    edits_option,
    guarded,
    load_with_edits,
    load_with_warnings,
    with_basis,
)
from trainground.render.tables import render_explanation, render_result


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--cadence", type=Finite(min=0, min_open=True), help="Seconds per outer iteration (default: the deadline pace)."
)
@click.option("--inference-gpus", type=int, help="Inference card count, for the per-card thresholds.")
@click.option(
    "--stage",
    metavar="NAME",
    help="A staged instance (docs/model.md §12): the arithmetic of this stage, at its tokens, lifetimes, "
    "intake and update time, its deadline the run's pro rata.",
)
@click.option("--json", "as_json", is_flag=True, help="Print docs/model.md §6 keys as JSON.")
@edits_option
@guarded
def explain(
    instance: str, cadence: float | None, inference_gpus: int | None, stage: str | None, as_json: bool, edits
) -> None:
    """The seed article's arithmetic on INSTANCE, each figure with its formula (no optimisation)."""
    from trainground.solver.explain import explain as run_explain
    from trainground.solver.explain import explain_stage

    if cadence is not None and not cadence > 0:
        raise click.BadParameter(f"must be > 0, got {cadence}", param_hint="--cadence")
    if inference_gpus is not None and inference_gpus <= 0:
        raise click.BadParameter(f"must be > 0, got {inference_gpus}", param_hint="--inference-gpus")
    inst = load_with_edits(instance, edits)
    if stage is None:
        result = run_explain(inst, cadence, inference_gpus)
    elif inst.stages is None:
        raise click.BadParameter(f"{instance} has no stages section (docs/model.md §12)", param_hint="--stage")
    else:
        try:
            result = explain_stage(inst, stage, cadence, inference_gpus)
        except KeyError:
            names = ", ".join(s.name for s in inst.stages.list)
            raise click.BadParameter(
                f"{stage!r} is not a stage of {instance} (have: {names})", param_hint="--stage"
            ) from None
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    render_explanation(console(), result)


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--objective", type=OBJECTIVE, help="Override the instance's objective.")
@click.option("--time-limit", type=Finite(min=0, min_open=True), help="Seconds; returns the incumbent and its gap.")
@click.option("--json", "as_json", is_flag=True, help="Print the docs/model.md §6 result as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the JSON result to this file.")
@click.option(
    "--confidence",
    type=Finite(0, 1),
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
    type=Finite(min=0, min_open=True),
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
    one that finishes on time in its own replays (docs/model.md §11). With `stages:` (responses that lengthen,
    docs/stages.md) each stage has its own cadence and a table of its own; --confidence does not take stages.

    Exit codes: 0 optimal, 3 infeasible (diagnosis printed), 4 time limit, 2 invalid input, 1 internal error.
    """
    from trainground.solver.stopwatch import Stopwatch

    progress = ProgressLine()
    clock = Stopwatch(time_limit, progress)  # the time limit covers the whole command, loading included
    inst, warnings = load_with_warnings(instance, with_basis(edits, basis))
    inst = with_confidence(instance, inst, confidence)
    load_seconds = clock.elapsed()
    from trainground.drivers.answer import answer

    def replayed(done: int, total: int) -> None:
        progress(f"{inst.name}: simulating, {done} of {total} replications")

    with progress:
        found = confident_solve(
            instance,
            lambda: answer(
                inst,
                objective,
                clock=clock,
                replications=replications,
                with_levers=with_levers,
                levers_time=levers_time,
                notes=warnings,
                on_replay=replayed,
            ),
        )
    result = found.result
    result.timings.load = load_seconds
    payload = found.to_json()
    if out:
        from trainground.simulation.output import write_json

        write_json(out, payload)
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    else:
        render_answer(found, instance)
    sys.exit(STATUS_EXIT[result.status])


def with_confidence(file: str, inst, confidence: float | None):
    """``inst`` planned for ``confidence`` (MODEL §9) when one is given; it needs an uncertainty section."""
    if confidence is None:
        return inst
    confidence_input(file, inst, "--confidence")
    return inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": confidence})})


def confident_solve(file: str, solve):
    """``solve()``, with an uncertainty section a confidence solve cannot read reported as bad input, and
    a model the planner refuses to build (a staged model too large) blamed on ``file``, not the instance's name."""
    from trainground.models.load import InstanceError, Problem
    from trainground.solver.confidence.table import Unsupported

    try:
        return solve()
    except Unsupported as exc:
        raise InstanceError(file, [Problem(exc.path, exc.rule)]) from None
    except InstanceError as exc:
        raise InstanceError(file, exc.problems) from None


def render_answer(found, source: str | None = None) -> None:
    """`solve`'s text: the result, then what was computed beside it (drivers.answer); ``source`` is the
    instance file, named in the commands a line points to."""
    result = found.result
    render_result(console(), result)
    if result.hold is not None and result.plan is not None:
        from trainground.render.hold import render_hold

        render_hold(console(), result, found.inst, source)
    if found.beyond is not None:
        from trainground.render.confidence import render_confidence

        render_confidence(console(), result, found.beyond.deterministic, found.beyond.drove)
    from trainground.render.levers import render_levers

    render_levers(console(), found.levers)
    if found.stage_levers:
        from trainground.render.stages import render_stage_levers

        render_stage_levers(console(), found.stage_levers)
    if result.plan is not None:
        from trainground.render.simulate import render_solve_verdict

        render_solve_verdict(
            console(),
            found.inst.counts_startup,
            found.startup_estimate_s,
            found.simulation,
            regime=None
            if found.inst.regime is None or found.inst.regime.is_default
            else found.inst.regime.mode
            if found.inst.regime.mode != "async"
            else found.inst.regime.staleness,
        )


@click.command()
@guarded
def schema() -> None:
    """Print the JSON Schema of instance files (for editor autocompletion)."""
    from trainground.models.instance import Instance

    click.echo(json.dumps(Instance.model_json_schema(mode="validation"), indent=2))
