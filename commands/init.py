"""init: write a starter instance with every field present and explained."""

from __future__ import annotations

from pathlib import Path

import click

from trainground.commands.common import guarded

HEADER = """Starter instance written by `trainground init`: the seed article's baseline (1,000 iterations x 4,096
trajectories in one week), every field present with what it means, its unit, typical values, the seed's
value and its default. Durations are seconds as bare numbers, or strings with a unit: 600s, 10m, 168h, 7d.
Edit the numbers to your run, then: trainground solve {file}
"""


@click.command()
@click.option(
    "--pools",
    type=click.IntRange(min=1, max=26),
    default=1,
    show_default=True,
    help="GPU pools (one inference shape on each; training on the first).",
)
@click.option(
    "--backends",
    default="container",
    show_default=True,
    metavar="NAMES",
    help="Sandbox backends, comma-separated (e.g. container,microvm); they share attempts equally.",
)
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="Write to this .yaml file instead of printing.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@guarded
def init(pools: int, backends: str, out: str | None, force: bool) -> None:
    """Write a commented starter instance (YAML) with every field present and explained (stages, for responses
    that lengthen, as a commented block)."""
    from trainground.models.fields import field_docs
    from trainground.models.starter import optional_sections, starter_document
    from trainground.render.starter import commented_yaml
    from trainground.simulation.output import write_atomic

    names = tuple(n.strip() for n in backends.split(","))
    if not all(names) or len(set(names)) != len(names):
        raise click.BadParameter(
            f"give distinct, non-empty names separated by commas, got {backends!r}", param_hint="--backends"
        )
    if out is not None:
        if Path(out).suffix.lower() not in (".yaml", ".yml"):
            raise click.BadParameter(
                "init writes YAML (it carries comments): name a .yaml or .yml file", param_hint="--out"
            )
        if Path(out).exists() and not force:
            raise click.BadParameter(f"{out} exists; give --force to overwrite it", param_hint="--out")
    text = commented_yaml(
        starter_document(pools, names), field_docs(), HEADER.format(file=out or "FILE.yaml"), optional_sections()
    )
    if out is None:
        click.echo(text, nl=False)
    else:
        write_atomic(Path(out), text)
        click.echo(f"wrote {out}; edit it, then: trainground solve {out}", err=True)
