"""regimes: which way of running RL (MODEL.md §14) is cheapest for this run, each regime's optimum side by side."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from trainground.commands.common import (
    EXIT_INFEASIBLE,
    EXIT_INVALID,
    EXIT_OK,
    OBJECTIVE,
    console,
    edits_option,
    guarded,
    load_with_edits,
)
from trainground.drivers.tradeoffs.regimes import SPEC_HELP, parse_regime


@click.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option(
    "--regime",
    "specs",
    multiple=True,
    metavar="SPEC",
    help=f"A regime to compare (repeat for several): {SPEC_HELP}. Default: MODEL §14's list (colocated, "
    "pipelined-0, pipelined-1, drop, drop-inflight, admission-4, admission-8, admission-16).",
)
@click.option(
    "--basis",
    type=click.Choice(["hold", "steady_state"]),
    default="steady_state",
    show_default=True,
    help="Plan every regime on this basis (planning.basis). On hold, pipelined k = 1 is not planned yet (its row "
    "says so).",
)
@click.option("--objective", type=OBJECTIVE, help="Rank by this criterion [default: the instance's objective].")
@click.option(
    "--json", "as_json", is_flag=True, help="Print every row (its regime, status, reason, §6 result) as JSON."
)
@click.option("--out", "out", metavar="FOLDER", help="Also write regimes.json and regimes.png (cost against gap) here.")
@edits_option
@guarded
def regimes(
    instance: str,
    specs: tuple[str, ...],
    basis: str,
    objective: str | None,
    as_json: bool,
    out: str | None,
    edits,
) -> None:
    """Should this run go async, and how far ahead? The optimum of each regime of MODEL §14, side by side.

    Each regime replaces the instance's regime section (its rollout timeout, concurrency cap and weight-sync
    time are kept); each row is the verified optimum of that regime's own model, with the cost, makespan,
    GPUs, sandboxes, launch peak, consumed gaps and generation busy share of its plan; a regime with no
    plan says why in one line (the diagnosis's conflict, or that the regime is not planned yet). The best
    under the objective is starred. Exit 0 when some regime has a plan, 3 when none has.
    """
    try:
        parsed = [parse_regime(text) for text in specs] or None
    except ValueError as exc:
        click.echo(f"--regime: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    inst = load_with_edits(instance, tuple(edits) + (f"planning.basis={basis}",))
    from trainground.drivers.tradeoffs.regimes import compare_regimes
    from trainground.render.regimes import regimes_png, render_regimes

    found = compare_regimes(inst, parsed, objective)
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "regimes.json").write_text(json.dumps(found.to_json(), indent=2) + "\n", encoding="utf-8")
        (folder / "regimes.png").write_bytes(regimes_png(found))
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
    else:
        render_regimes(console(), found)
        if out is not None:
            click.echo(f"written: {Path(out) / 'regimes.json'}, {Path(out) / 'regimes.png'}")
    sys.exit(EXIT_OK if found.best is not None else EXIT_INFEASIBLE)
