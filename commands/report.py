"""report: one self-contained HTML page of an instance's answer, to read or send."""

from __future__ import annotations

import sys

import click

from trainground.commands.common import (
    OBJECTIVE,
    STATUS_EXIT,
    Finite,
    ProgressLine,
    basis_option,
    edits_option,
    guarded,
    load_with_warnings,
    with_basis,
)


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--out", default="report.html", show_default=True, type=click.Path(dir_okay=False), help="The HTML file.")
@click.option("--objective", type=OBJECTIVE, help="Override the instance's objective.")
@click.option("--time-limit", type=Finite(min=0, min_open=True), help="Seconds for the solve and its levers.")
@click.option(
    "--levers-time",
    type=Finite(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="S",
    help="Seconds all the lever re-solves may take together (within what --time-limit leaves), as solve's.",
)
@click.option(
    "--simulate",
    "replications",
    type=click.IntRange(min=1, max=10**4),
    metavar="R",
    help="Also replay the plan R times (docs/model.md §10) and show the simulated verdict.",
)
@click.option(
    "--confidence-curve",
    "alphas",
    metavar="A1,A2,...",
    default="0.5,0.8,0.9,0.95",
    show_default=True,
    help="The confidences of the price-of-certainty curve (with an uncertainty section; empty: none).",
)
@click.option(
    "--samples", type=click.IntRange(min=1, max=10**6), default=10_000, show_default=True, help="Risk scenarios."
)
@click.option("--frontier/--no-frontier", "with_frontier", default=True, show_default=True, help="Walk the frontier.")
@click.option(
    "--frontier-basis",
    type=click.Choice(["steady_state", "hold"]),
    default=None,
    help="The basis of the frontier's plans (default: the plan's, so the frontier's cheapest point is the plan; "
    "steady_state walks faster, without replays).",
)
@basis_option
@edits_option
@guarded
def report(
    instance,
    out,
    objective,
    time_limit,
    levers_time,
    replications,
    alphas,
    samples,
    with_frontier,
    frontier_basis,
    basis,
    edits,
) -> None:
    """Write one self-contained HTML page for INSTANCE (no network: plots embedded): the plan, why it holds
    (replays, allowance), levers, risk and the price of certainty (with an uncertainty section), the frontier.

    Its numbers are those of `solve --json` (embedded in the page as JSON). Exit codes as `solve`'s:
    0 optimal, 3 infeasible, 4 time limit, 2 invalid input, 1 internal error.
    """
    from trainground.solver.stopwatch import Stopwatch

    try:
        confidences = [float(a) for a in alphas.split(",") if a.strip()]
    except ValueError:
        raise click.BadParameter(f"{alphas!r}: a comma-separated list of numbers in [0, 1]") from None
    if any(not 0 <= a <= 1 for a in confidences):
        raise click.BadParameter(f"{alphas!r}: every confidence must lie in [0, 1]", param_hint="--confidence-curve")
    progress = ProgressLine()
    clock = Stopwatch(time_limit, progress)
    inst, _ = load_with_warnings(instance, with_basis(edits, basis))  # a bad file costs no import of the solver
    from trainground.drivers.report import gather
    from trainground.render.report import report_html
    from trainground.simulation.output import write_atomic_bytes

    with progress:
        found = gather(
            inst,
            objective,
            clock=clock,
            replications=replications,
            levers_time=levers_time,
            alphas=confidences,
            samples=samples,
            with_frontier=with_frontier,
            frontier_basis=frontier_basis,
            on_step=lambda text: progress(f"{inst.name}: {text}"),
        )
    text = report_html(found, instance)
    write_atomic_bytes(out, text.encode("utf-8"))
    click.echo(f"wrote {out} ({len(text.encode('utf-8')) / 1024:,.0f} KiB)")
    sys.exit(STATUS_EXIT[found.answer.result.status])
