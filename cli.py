"""The `trainground` command line: the command group; each command lives in commands/ (parse, load, call, render)."""

from __future__ import annotations

import click

from trainground.commands.batch import batch
from trainground.commands.calibrate import calibrate
from trainground.commands.common import protect_stdout
from trainground.commands.init import init
from trainground.commands.plan import explain, schema, solve
from trainground.commands.regimes import regimes
from trainground.commands.report import report
from trainground.commands.risk import risk
from trainground.commands.simulate import simulate
from trainground.commands.tradeoffs import compare, frontier, sweep


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trainground")
def main() -> None:
    """Size the training ground of an agentic-RL run: inference, training, sandboxes, cadence, as one MIP."""
    protect_stdout()


for command in (
    init,
    explain,
    solve,
    frontier,
    compare,
    regimes,
    sweep,
    batch,
    simulate,
    risk,
    report,
    calibrate,
    schema,
):
    main.add_command(command)


if __name__ == "__main__":
    main()
