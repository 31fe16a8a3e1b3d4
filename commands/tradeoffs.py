"""frontier, compare, sweep: many solves of one instance, to see the trade-offs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from trainground.commands.common import (
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_TIME_LIMIT,
    OBJECTIVE,
    Finite,
    SolvingBar,
    basis_option,
    confidence_input,
    console,
    edits_option,
    guarded,
    load_with_edits,
    show_bar,
    with_basis,
)
from trainground.commands.simulate import simulate_option, simulated_verdicts
from trainground.models.units import parse_duration
from trainground.render.tradeoffs import render_comparison, render_frontier, render_sweep


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--out",
    default="frontier-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for frontier.csv, frontier.json and frontier.png.",
)
@click.option("--json", "as_json", is_flag=True, help="Print frontier.json (every point a docs/model.md §6 result).")
@click.option("--all", "show_all", is_flag=True, help="Print every corner (default: at most 12, evenly spread).")
@click.option(
    "--time-limit",
    type=Finite(min=0, min_open=True),
    help="Seconds for the whole walk (both criteria): when they run out it stops with the plans found (exit 4).",
)
@click.option(
    "--resolution",
    type=Finite(min=0, max=1),
    default=None,
    metavar="SHARE",
    help="Least makespan between two points, as a share of the frontier's makespan range (each point exact, both "
    "ends exact); 0: every point, one solve per admissible makespan. Default: 0.005 on a grid of more than 5,000 "
    "cadences, or on a staged instance whose stages' grids give more than 5,000 combinations of a cadence per stage "
    "(a couple of hundred points at most); 0.025 on such a staged instance that re-plans its stages (40 at most); "
    "else 0.",
)
@click.option(
    "--confidence-curve",
    "alphas",
    metavar="A1,A2,...",
    help="Instead: the price of certainty, the best plan's cost for each confidence (docs/model.md §9), "
    "written as certainty.csv, certainty.json and certainty.png.",
)
@simulate_option
@basis_option
@edits_option
@guarded
def frontier(
    instance: str,
    out: str,
    as_json: bool,
    show_all: bool,
    time_limit: float | None,
    resolution: float | None,
    alphas: str | None,
    replications: int | None,
    basis: str | None,
    edits,
) -> None:
    """Every plan no other beats on both makespan and cost: makespan vs total cost, and vs hourly cost.

    Exact over the instance's cadence grid: one model, re-solved with the makespan capped just
    below the last plan found until no faster plan exists. The tables list the frontier's
    corners: the plans where its slope changes (the vertices of its lower convex hull, each
    the cheapest plan for some price put on a day of schedule), plus both ends; at most 12,
    evenly spread, unless --all. "$ per day saved" is the slope to the next slower corner. Budgets are the instance's limits (--set
    limits.max_total_cost=...). With --simulate [R], each corner's plan is replayed R times
    (MODEL.md §10) and the tables show its simulated makespan and on-time verdict. --time-limit bounds the
    whole walk. On a fine grid (more than 5,000 cadences, or on a staged instance more than 5,000 combinations of
    its stages' cadences) the walk skips plans closer in makespan than --resolution of the range to the last one
    found (each point shown is still exact); --resolution 0 walks every point.
    Exit codes: 0, 3 no feasible plan, 4 the time limit ended a walk, 2 invalid input.
    """
    inst = load_with_edits(instance, with_basis(edits, basis))  # a bad file costs no import of the solver
    if alphas is not None:
        certainty(instance, inst, alphas, Path(out), as_json)
        return
    from trainground.drivers.tradeoffs.frontier import csv_columns, csv_rows, frontiers
    from trainground.render.plots import frontier_png
    from trainground.simulation.output import write_atomic_bytes, write_csv, write_json

    with SolvingBar("frontier", show_bar(as_json)) as bar:
        found = frontiers(inst, on_progress=bar, time_limit=time_limit, resolution=resolution)
    if replications:
        _simulate_corners(inst, found, replications, show_all, as_json)
    folder = Path(out)
    payload = found.to_json()
    write_csv(folder / "frontier.csv", csv_columns(found), csv_rows(found))
    write_json(folder / "frontier.json", payload)
    write_atomic_bytes(folder / "frontier.png", frontier_png(found))
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    else:
        render_frontier(console(), found, folder, show_all)
    if any(front.stopped == "time_limit" for front in found.frontiers.values()):
        sys.exit(EXIT_TIME_LIMIT)
    sys.exit(EXIT_OK if found.feasible else EXIT_INFEASIBLE)


def _simulate_corners(inst, found, replications: int, show_all: bool, quiet: bool) -> None:
    """Attach to each frontier the simulated verdict of the corners its table shows (all with --all; a plan
    on both frontiers is replayed once)."""
    from trainground.render.tradeoffs import shown_corners

    chosen = [(front, i) for front in found.frontiers.values() for i in shown_corners(front.corners, show_all)]
    for (front, i), verdict in zip(
        chosen, simulated_verdicts(inst, [front.points[i] for front, i in chosen], replications, quiet)
    ):
        front.simulations[i] = verdict


def certainty(file: str, inst, alphas: str, folder: Path, as_json: bool) -> None:
    """frontier --confidence-curve: the price of certainty (MODEL §9)."""
    from trainground.drivers.tradeoffs.certainty import CSV_COLUMNS, curve
    from trainground.models.load import InstanceError, Problem
    from trainground.render.confidence import curve_png, render_curve
    from trainground.simulation.output import write_atomic_bytes, write_csv, write_json
    from trainground.solver.confidence.table import Unsupported

    try:
        values = [float(a) for a in alphas.split(",")]
    except ValueError:
        raise click.BadParameter(
            f"{alphas!r}: a comma-separated list of numbers in [0, 1]", param_hint="--confidence-curve"
        ) from None
    if not values or any(not 0 <= a <= 1 for a in values):
        raise click.BadParameter(f"{alphas!r}: every confidence must lie in [0, 1]", param_hint="--confidence-curve")
    confidence_input(file, inst, "--confidence-curve")
    try:
        with SolvingBar("certainty", show_bar(as_json)) as bar:
            found = curve(inst, values, on_progress=bar)
    except Unsupported as exc:
        raise InstanceError(file, [Problem(exc.path, exc.rule)]) from None
    files = [folder / "certainty.csv", folder / "certainty.json", folder / "certainty.png"]
    write_csv(files[0], CSV_COLUMNS, found.rows())
    write_json(files[1], found.to_json())
    write_atomic_bytes(files[2], curve_png(found))
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
    else:
        render_curve(console(), found, files)
    sys.exit(EXIT_OK if any(r.plan is not None for _, r in found.points) else EXIT_INFEASIBLE)


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--baseline-inference-gpus",
    type=click.IntRange(min=1),
    metavar="N",
    help="The baseline's inference cards [default: every inference GPU of every pool beside the deadline "
    "pace's training, each pool's cards rated by its own shapes; the output says how it was chosen].",
)
@click.option(
    "--cadence",
    type=Finite(min=0, min_open=True),
    help="Pin the plans and the shorter-schedule arithmetic to this cadence (s); the baseline "
    "stays at the deadline pace.",
)
@click.option(
    "--switch-time",
    "switch_time",
    metavar="DURATION",
    help="A staged instance: the switch time re-planning per stage is charged (600s, 30m) [default: the "
    "instance's stages.switch_time].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the columns, figures and deltas as JSON.")
@simulate_option
@basis_option
@edits_option
@guarded
def compare(
    instance: str,
    baseline_inference_gpus: int | None,
    cadence: float | None,
    switch_time: str | None,
    as_json: bool,
    replications: int | None,
    basis: str | None,
    edits,
) -> None:
    """Spend inference slack on fewer cards or a shorter schedule? The article's §4 as a report.

    Side by side: the baseline (the seed's arithmetic at the deadline pace on N inference
    cards), the cheapest plan meeting the deadline ("fewer cards"), the fastest plan keeping
    the baseline's card count and the fastest keeping the cheapest plan's hourly cost
    ("shorter schedule"), and the seed's arithmetic at the shorter schedule's cadence; then
    each against the baseline ("time margin 17.3 %, supply +21 %"), pool by pool where there are
    several. The arithmetic columns rate and price their cards by the shapes of the pools they
    sit in (by the fewer-cards plan's shape mix for a given N) and are marked "arithmetic ✗"
    (infeasible as a yardstick) when those cards cannot deliver once drops count. With --simulate [R],
    each plan column is replayed R times (MODEL.md §10) and the table shows its simulated makespan
    and verdict. On a staged instance (MODEL.md §12) a last column holds the cheapest plan under the
    other capacity, and a line says what re-planning per stage saves against one fixed fleet after
    its switch costs.
    """
    inst = load_with_edits(instance, with_basis(edits, basis))  # a bad file costs no import of the solver
    from trainground.drivers.tradeoffs.compare import compare as run_compare

    result = run_compare(inst, baseline_inference_gpus, cadence=cadence, switch_time=switch_seconds(switch_time))
    if replications:
        plans = [col.result if col.kind == "plan" and col.ok else None for col in result.columns]
        for col, verdict in zip(result.columns, simulated_verdicts(inst, plans, replications, as_json)):
            col.simulation = verdict
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        render_comparison(console(), result)


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--set",
    "axes",
    multiple=True,
    metavar="PATH=V1,V2,...",
    help="A swept field and its values (split on top-level commas: {a: 1, b: 2} and [1,2] stay whole); "
    "repeat for a cartesian product. [*] edits every item of a list (inference.shapes[*].tokens_per_gpu_s).",
)
@click.option(
    "--zip",
    "zipped",
    multiple=True,
    metavar="PATH=V1,V2,...",
    help="A field varied together with the other --zip fields: their i-th values go into one point "
    "(e.g. a GPU type's price with its throughput); each needs the same number of values. The group "
    "is one axis of the product with the --set axes.",
)
@click.option("--objective", type=OBJECTIVE, help="Override every point's objective.")
@click.option(
    "--out",
    default="sweep-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for sweep.csv, sweep.json and the plots.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes; the points are cut into this many contiguous chunks, each reusing one model.",
)
@click.option(
    "--time-limit",
    type=Finite(min=0, min_open=True),
    help="Seconds for the whole sweep: each solve gets what is left; points reached after it are rows "
    "with status time_limit, not solved (exit 4).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the rows and counts as JSON.")
@basis_option
@guarded
def sweep(
    instance: str,
    axes,
    zipped,
    objective: str | None,
    out: str,
    workers: int,
    time_limit: float | None,
    as_json: bool,
    basis: str | None,
) -> None:
    """Solve every point of the product of --set PATH=V1,V2,... edits to INSTANCE; one row per point.

    --zip PATH=V1,V2,... fields vary together (the i-th value of each in the same point) as one axis
    of that product.

    An invalid point is a row with the loader's message, an infeasible one a row with its
    diagnosis. Writes sweep.csv, sweep.json (every point's docs/model.md §6 result) and plots:
    the objective and key decisions against each swept field, and a heatmap for two fields.
    Exit codes: 0 the sweep ran (whatever each point's status), 1 some point hit an
    internal error, 2 invalid options or base file (no point valid), 4 --time-limit left points unsolved
    or cut a solve short.
    """
    from trainground.drivers.tradeoffs.sweep_axes import SweepError, parse_axes
    from trainground.models.edits import refuse_invalid

    if not axes and not zipped:
        raise click.UsageError("give at least one --set PATH=V1,V2,... or --zip PATH=V1,V2,...")
    try:
        parsed = parse_axes(with_basis(axes, basis), zipped)
    except SweepError as exc:
        raise click.BadParameter(str(exc), param_hint="--set/--zip") from None
    # The base file first, before the solver is imported: invalid whatever the swept values, it is refused
    # (a required field a swept path supplies may be missing; a bad value a swept path replaces may not be).
    refuse_invalid(instance, [f"{axis.path}={','.join(axis.texts)}" for axis in parsed])
    from trainground.drivers.tradeoffs import sweep as driver
    from trainground.render.sweep_plots import sweep_pngs
    from trainground.simulation.output import write_atomic_bytes, write_csv, write_json

    with SolvingBar("sweep", show_bar(as_json)) as bar:
        report = driver.run_sweep(instance, parsed, objective, workers=workers, on_progress=bar, time_limit=time_limit)
    folder = Path(out)
    files = [folder / "sweep.csv", folder / "sweep.json"]
    write_csv(files[0], report.csv_columns(), report.csv_rows())
    document = report.to_json()
    write_json(files[1], document)
    for name, png in sweep_pngs(report).items():
        write_atomic_bytes(folder / name, png)
        files.append(folder / name)
    if as_json:
        payload = {
            **document,
            "points": [{k: v for k, v in row.items() if k != "result"} for row in report.rows],
            "files": [str(f) for f in files],
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        render_sweep(console(), report, files)
    if report.rows and report.counts.get("invalid") == len(report.rows):  # nothing to solve: the input is at fault
        click.echo(
            f"{instance}: no point of the sweep is a valid instance; the first: {report.rows[0]['message']}", err=True
        )
        sys.exit(EXIT_INVALID)
    if report.counts.get("error"):
        sys.exit(EXIT_INTERNAL)
    sys.exit(EXIT_TIME_LIMIT if report.counts.get("time_limit") else EXIT_OK)


def switch_seconds(text: str | None) -> float | None:
    """``--switch-time`` in seconds (None: not given); a bad duration is a usage error (exit 2)."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--switch-time") from None
    if not isinstance(seconds, float):
        raise click.BadParameter(f"{text!r} is not a duration", param_hint="--switch-time")
    return seconds
