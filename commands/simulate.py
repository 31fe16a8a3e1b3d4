"""simulate: replay a plan trajectory by trajectory (MODEL.md §10) and set each figure beside the model's."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from trainground.commands.common import (
    EXIT_INTERNAL,
    PROGRESS_AFTER_S,
    STATUS_EXIT,
    SolvingBar,
    basis_option,
    edits_option,
    guarded,
    load_with_edits,
    require_dask,
    show_bar,
    with_basis,
    write_and_show,
)
from trainground.models.errors import InstanceError, Problem

MAX_ITERATIONS = 10**6  # simulate --iterations: a replication holds every attempt of the run it replays
MAX_REPLICATIONS = 10**4  # simulate --replications, solve/compare/frontier --simulate


def _same_regime(inst, plan_file: str, data: dict) -> None:
    """A plan file names the regime it was solved under (MODEL §14's "regime" object: mode, staleness, steps_ahead,
    in_flight_updates; absent for the seed's) and replays only an instance under the same: the rows differ, so the
    verifier would refuse the plan field by field; this says why in one line."""
    from trainground.models.regime import Regime
    from trainground.models.regime_rules import described

    said = data.get("regime")
    keys = ("mode", "staleness", "steps_ahead", "in_flight_updates")
    if said is not None and not (isinstance(said, dict) and set(said) <= set(keys)):
        why = f"must be the object {{{', '.join(keys)}}} a solve writes, or absent (the seed's regime); got {said!r}"
        raise InstanceError(plan_file, [Problem("regime", why)])
    from trainground.solver.mip.assemble import regime_json

    r, own = inst.regime, regime_json(inst)
    if said == own or (said is not None and own is not None and all(said.get(k) == own[k] for k in keys)):
        return
    if said is None:
        plan = "without a regime section"
    else:
        try:
            plan = f"under regime {Regime.model_validate(said).label}"
        except ValueError:
            plan = f"under regime {said!r}"
    here = "the instance has no regime section" if own is None else f"the instance's regime is {described(r)}"
    why = f"the plan was solved {plan}, and {here}: replay a plan solved for this instance (docs/model.md §14)"
    raise InstanceError(plan_file, [Problem("regime", why)])


def plan_to_replay(inst, plan_file: str | None):
    """(instance, plan, metrics, allowance): the plan of ``--plan`` (checked against the instance on the basis the
    plan was sized on, when its file names one) or the plan `solve` prints for the instance, with the verifier's
    metrics and its allowance Δ (MODEL §11; 0 under steady_state); exits with the solve's code when there is no
    optimal plan."""
    from trainground.simulation.runner import basis_of, checked_metrics, plan_of, read_result

    if plan_file is not None and inst.stages is not None:
        raise InstanceError(
            plan_file,
            [
                Problem(
                    "plan.stages",
                    "a staged plan is read from its solve, not a file (its stages' placements are not in the JSON); drop --plan",
                )
            ],
        )
    if plan_file is not None:
        data = read_result(plan_file)
        _same_regime(inst, plan_file, data)
        plan = plan_of(plan_file, data)
        basis, allowance = basis_of(plan_file, data)
        if basis != inst.planning.basis:
            inst = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": basis})})
        return inst, plan, checked_metrics(inst, plan, plan_file, allowance), allowance
    from trainground.drivers.hold import solve_planned

    result = solve_planned(inst)
    if result.plan is None or result.status != "optimal":
        click.echo(
            f"{inst.name}: {result.status}: no optimal plan to simulate"
            + (f" ({result.message})" if result.message else ""),
            err=True,
        )
        sys.exit(STATUS_EXIT[result.status] or EXIT_INTERNAL)
    return inst, result.plan, result.metrics, result.allowance_s


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    help="A `solve --json` result to replay (default: the instance's optimal plan).",
)
@click.option(
    "--iterations",
    type=click.IntRange(min=1, max=MAX_ITERATIONS),
    help="Simulate N iterations instead of the instance's n (deadline pro rata; with stages, each stage's).",
)
@click.option(
    "--replications",
    type=click.IntRange(min=1, max=MAX_REPLICATIONS),
    default=1,
    show_default=True,
    help="Independent replications, each with its own seed.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    help="Base seed [default: 0; under planning.basis hold, planning.seed + planning.replays, so that no "
    "replication is one of the replays that set the plan's allowance].",
)
@click.option(
    "--launch",
    type=click.Choice(["even", "poisson"]),
    default="even",
    show_default=True,
    help="Group launches evenly spaced at the attempt rate, or a Poisson process.",
)
@click.option(
    "--trace",
    "trace_dir",
    type=click.Path(file_okay=False),
    help="Write replication 0's trajectories and iterations into this folder.",
)
@click.option("--trace-format", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the docs/model.md §10 report as JSON.")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for simulate.json and the plots (PNG).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes for the replications.")
@click.option("--scheduler", metavar="ADDRESS", help="Run the replications on a Dask cluster (e.g. tcp://host:8786).")
@click.option(
    "--scenarios",
    is_flag=True,
    help="Replication r replays the plan in one scenario of the uncertainty section, drawn with seed + r "
    "(docs/model.md §9): the inputs vary as well as the run.",
)
@basis_option
@edits_option
@guarded
def simulate(
    instance,
    plan_file,
    iterations,
    replications,
    seed,
    launch,
    trace_dir,
    trace_format,
    as_json,
    out,
    workers,
    scheduler,
    scenarios,
    basis,
    edits,
) -> None:
    """Replay a plan for INSTANCE trajectory by trajectory and compare it with the model.

    Groups launch at the plan's attempt rate, lifetimes come from the occupancy law, sandboxes
    are the plan's nodes and VMs, batches take whole groups within the version cap (docs/model.md §10).
    Exit codes: 0 simulated (on time or not), 2 invalid input or a plan that does not fit the
    instance, 3 or 4 when the instance has no optimal plan to replay, 1 internal error.
    """
    from trainground.simulation.runner import SchedulerUnavailable, TraceSpec, simulate_plan
    from trainground.simulation.trace import have_pyarrow

    if workers is not None and scheduler:
        raise click.UsageError("give --workers or --scheduler, not both (a Dask cluster sizes itself)")
    require_dask(scheduler)
    if trace_dir and trace_format == "parquet" and not have_pyarrow():
        raise click.BadParameter(
            "parquet needs pyarrow: pip install 'trainground[parquet]'", param_hint="--trace-format"
        )
    inst = load_with_edits(instance, with_basis(edits, basis))
    if scenarios and inst.uncertainty is None:
        raise InstanceError(
            instance, [Problem("uncertainty", "--scenarios needs an uncertainty section (docs/model.md §9)")]
        )
    own = inst.regime is not None and inst.regime.own_replay
    if inst.regime is not None and not own:  # MODEL §14: an async drop run with regime fields set has no replay
        from trainground.models.regime_rules import refuse_unreplayed

        refuse_unreplayed(inst, instance)
    inst, plan, metrics, _ = plan_to_replay(inst, plan_file)
    if seed is None:
        from trainground.simulation.verdicts import fresh_seed

        seed = fresh_seed(inst)
    regime = inst.regime
    if regime is not None and regime.own_replay:  # MODEL §14: the regime's replay
        refuse_batch_options(
            instance,
            "a batch regime" if regime.batched else "an admission run",
            launch=launch,
            trace_dir=trace_dir,
            workers=workers,
            scheduler=scheduler,
            scenarios=scenarios,
        )
        if regime.batched:
            from trainground.simulation.batch_report import batch_report as regime_report
        else:
            from trainground.simulation.admission_report import admission_report as regime_report

        found = regime_report(inst, plan, metrics, replications, seed, iterations)
        write_and_show(
            found,
            found.to_json(),
            report_file="simulate.json",
            out=out,
            as_json=as_json,
            plots=_no_plots,
            printer=_batch_printer,
        )
        return
    setups = None
    if scenarios:
        from trainground.models.regime_rules import refuse_regime_replays
        from trainground.simulation.scenarios import scenario_setups

        refuse_regime_replays(inst, instance)

        setups = scenario_setups(inst, plan, metrics, replications, seed, launch, iterations)
    trace = TraceSpec(Path(trace_dir), trace_format) if trace_dir else None
    with SolvingBar("simulating", show_bar(as_json), after_s=PROGRESS_AFTER_S) as bar:
        try:
            report = simulate_plan(
                inst,
                plan,
                metrics=metrics,
                replications=replications,
                seed=seed,
                iterations=iterations,
                launch=launch,
                workers=workers,
                scheduler=scheduler,
                trace=trace,
                on_progress=bar,
                setups=setups,
            )
        except SchedulerUnavailable as exc:
            click.echo(f"trainground: {exc}", err=True)
            sys.exit(EXIT_INTERNAL)
    write_and_show(
        report, report.to_json(), report_file="simulate.json", out=out, as_json=as_json, plots=_plots, printer=_printer
    )


def refuse_batch_options(file: str, what: str = "a batch regime", **given) -> None:
    """A batch or admission regime's replay (``what`` names it) has no launch order, trace or worker processes yet:
    InstanceError naming the option."""
    unused = [name for name, value in given.items() if value not in (None, False, "even")]
    if unused:
        option = {"trace_dir": "--trace"}.get(unused[0], "--" + unused[0].replace("_", "-"))
        raise InstanceError(
            file, [Problem("regime.mode", f"{option} does not apply to {what}'s replay (MODEL §14); drop it")]
        )


def _no_plots(report) -> dict[str, bytes]:
    return {}


def _batch_printer(console, report) -> None:
    from trainground.render.regimes import render_batch_replay

    render_batch_replay(console, report)


def _plots(report) -> dict[str, bytes]:
    from trainground.render.simplots import simulation_pngs

    return simulation_pngs(report)


def _printer(console, report) -> None:
    from trainground.render.simulate import render_simulation

    render_simulation(console, report)


def simulated_verdicts(inst, results, replications: int, quiet: bool) -> list[dict | None]:
    """`compare` / `frontier` with --simulate R: the verdict of each result's plan (None without one)."""
    from trainground.simulation.verdicts import verdicts

    with SolvingBar("simulating plans", show_bar(quiet), after_s=PROGRESS_AFTER_S) as bar:
        return verdicts(inst, results, replications, on_progress=bar)


def simulate_option(func):
    """`--simulate [R]`: replay the plans shown R times (default 1, the full run) and show the verdict."""
    return click.option(
        "--simulate",
        "replications",
        type=click.IntRange(min=1, max=MAX_REPLICATIONS),
        is_flag=False,
        flag_value=1,
        default=None,
        metavar="[R]",
        help="Replay each plan shown R times (default 1, the full run, docs/model.md §10) and show "
        "the simulated on-time verdict.",
    )(func)
