"""risk: a plan over N scenarios of the instance's uncertainty (MODEL.md §9), optionally replayed by the simulator."""

from __future__ import annotations

import click

from trainground.commands.common import (
    PROGRESS_AFTER_S,
    SolvingBar,
    basis_option,
    edits_option,
    guarded,
    load_with_edits,
    show_bar,
    with_basis,
    write_and_show,
)
from trainground.models.load import InstanceError, Problem


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    help="A `solve --json` result to assess (default: the instance's optimal plan).",
)
@click.option(
    "--samples", type=click.IntRange(min=1, max=10**6), default=10_000, show_default=True, help="Scenarios N."
)
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the scenarios (default: uncertainty.seed).")
@click.option("--json", "as_json", is_flag=True, help="Print the docs/model.md §9 risk keys as JSON.")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for risk.json and the plots (PNG).")
@click.option(
    "--simulate",
    "replays",
    type=click.IntRange(min=1, max=10**4),
    metavar="R",
    help="Also replay the first R scenarios trajectory by trajectory (docs/model.md §10).",
)
@click.option(
    "--sim-iterations",
    type=click.IntRange(min=1, max=10**6),
    help="Iterations each replay simulates (default 100, at most n; the deadline pro rata).",
)
@basis_option
@edits_option
@guarded
def risk(instance, plan_file, samples, seed, as_json, out, replays, sim_iterations, basis, edits) -> None:
    """How likely a plan for INSTANCE is to finish on time when its inputs are uncertain.

    The plan (verified against INSTANCE) keeps its capacity; each scenario draws every factor of the
    instance's `uncertainty` section and the plan runs at the cadence the scenario allows. Exit codes:
    0 assessed (on time or not), 2 invalid input (no uncertainty section, a plan that does not fit),
    3 or 4 when the instance has no optimal plan to assess, 1 internal error.
    """
    from trainground.commands.simulate import plan_to_replay
    from trainground.drivers.risk import assess, replay

    inst = load_with_edits(instance, with_basis(edits, basis))
    if inst.uncertainty is None:
        raise InstanceError(instance, [Problem("uncertainty", "risk needs an uncertainty section (docs/model.md §9)")])
    from trainground.models.regime_rules import refuse_regime_replays, refuse_unplanned

    if plan_file is None:  # before the solve (a plan file may name another basis, which assess reads)
        refuse_unplanned(inst, instance)
    if replays:
        refuse_regime_replays(inst, instance)  # a scenario's replay reads the seed's regime only
    inst, plan, metrics, allowance = plan_to_replay(inst, plan_file)
    report = assess(inst, plan, samples, seed, allowance)
    if replays:
        with SolvingBar("replaying scenarios", show_bar(as_json), after_s=PROGRESS_AFTER_S) as bar:
            report.replays = replay(inst, plan, metrics, report, replays, sim_iterations, on_progress=bar)
    write_and_show(
        report, report.to_json(), report_file="risk.json", out=out, as_json=as_json, plots=_plots, printer=_printer
    )


def _plots(report) -> dict[str, bytes]:
    from trainground.render.risk import risk_pngs

    return risk_pngs(report)


def _printer(console, report) -> None:
    from trainground.render.risk import render_risk

    render_risk(console, report)
