"""calibrate: run logs -> fitted instance fields with bootstrap intervals, and a new instance file."""

from __future__ import annotations

import click

from trainground.commands.common import Finite, guarded, write_and_show


def _steps(path: str | None, origin: float | None, mapping: dict, max_bad: float, fmt: str, training_gpus):
    """The step log and, for a framework's, what else it holds; ``auto`` decides from every record and says
    what it found, a named ``--format`` that does not fit the log names what does."""
    if path is None:
        return None, None
    from trainground.calibrate.frameworks import load_log
    from trainground.calibrate.logs import read_steps
    from trainground.calibrate.stepreader import read_framework_steps

    loaded = load_log(path, fmt, mapping)
    if loaded.framework is None:
        steps = read_steps(path, origin, mapping, max_bad)
        if loaded.how:
            steps.notes.insert(0, f"--format {fmt}: {loaded.how}")
        return steps, None
    steps, extra = read_framework_steps(loaded, training_gpus, max_bad)
    steps.notes.insert(0, f"--format {fmt}: {loaded.how}")
    return steps, extra


def _trajectory_log(trajectories, pool_files, mapping: dict, timeout, max_bad: float):
    """The trajectory log and its clock's origin: one file, or one per pool merged."""
    from trainground.calibrate.logs import read_trajectories

    if not pool_files:
        return read_trajectories(trajectories, mapping, timeout, max_bad)
    from trainground.calibrate.pools import merge

    return merge([(name, *read_trajectories(file, mapping, timeout, max_bad)) for name, file in pool_files])


def _steps_alone(path: str, steps, framework, inst, inference_gpus, regime):
    """A step log without a trajectory log, calibrated for what it holds: a framework's (its phases), or
    trainground's own (the updates alone)."""
    from trainground.calibrate.fit import calibrate_steps

    if framework is None:
        from trainground.calibrate.updates_alone import calibrate_update

        if regime is not None:
            raise click.UsageError(
                "--regime is written with a framework's step log (its phases show the run); trainground's own step "
                "log holds the updates alone: set regime: in the instance instead (docs/model.md §14)"
            )
        return calibrate_update(steps)
    return calibrate_steps(steps, framework, inst, inference_gpus, regime=regime)


def _regime(ctx, param, value: str | None):
    """--regime: colocated, pipelined-0, pipelined-1, async, async-inflight or admission-K."""
    if value is None:
        return None
    from trainground.calibrate.regime import parse

    try:
        return parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _holdout(cal, steps, framework) -> None:
    if framework is None:
        raise click.UsageError("--holdout checks a framework's step log (--steps with verl's, slime's or AReaL's)")
    from trainground.calibrate.holdout import holdout

    cal.holdout, sentence = holdout(steps, framework, regime=cal.regime.regime if cal.regime is not None else None)
    cal.notes.append(sentence)


def _gpus(ctx, param, value: str | None) -> float | dict[str, float] | None:
    """--inference-gpus N or NAME=N,NAME=N."""
    if value is None:
        return None
    try:
        if "=" not in value:
            count = float(value)
            if count <= 0 or count != int(count):
                raise ValueError
            return count
        out = {}
        for item in value.split(","):
            name, _, count = item.partition("=")
            out[name.strip()] = float(count)
            if not name.strip() or out[name.strip()] <= 0 or out[name.strip()] != int(out[name.strip()]):
                raise ValueError
        return out
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a GPU count N >= 1 nor NAME=N,... per pool") from None


def _pool_files(ctx, param, value: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for item in value:
        name, eq, file = item.partition("=")
        if not eq or not name.strip() or not file.strip():
            raise click.BadParameter(f"{item!r} is not NAME=FILE (e.g. h100=logs/h100.csv)")
        out.append((name.strip(), file.strip()))
    return out


def _mapping(ctx, param, value: str | None) -> dict[str, str]:
    """--columns NAME=COLUMN[:UNIT],... or a YAML/JSON file of NAME: COLUMN[:UNIT]; names checked."""
    from pathlib import Path

    from trainground.calibrate.logs import STEP_COLUMNS, TRAJECTORY_COLUMNS

    if not value:
        return {}
    if "=" not in value and Path(value).is_file():
        from trainground.models.load import read_document

        pairs = [(str(k), str(v)) for k, v in read_document(Path(value)).items()]
    else:
        pairs = []
        for item in value.split(","):
            name, eq, column = item.partition("=")
            if not eq or not name.strip() or not column.strip():
                raise click.BadParameter(f"{item!r} is not NAME=COLUMN (e.g. start=ts_begin)")
            pairs.append((name.strip(), column.strip()))
    known = TRAJECTORY_COLUMNS + STEP_COLUMNS
    for name, _ in pairs:
        if name not in known:
            raise click.BadParameter(f"{name!r} is not a column calibrate reads (have: {', '.join(known)})")
    return dict(pairs)


@click.command()
@click.option(
    "--trajectories",
    "trajectories",
    type=click.Path(dir_okay=False),
    help="Trajectory log (CSV, JSONL or Parquet): start, end, output_tokens [backend, effective, group, ...]; "
    "without one, a verl --steps log's agent loop gives the lifetimes (step-level, wider interval).",
)
@click.option(
    "--steps",
    "steps_file",
    type=click.Path(dir_okay=False),
    help="Step log: iteration, update_s (or update_start/update_end), training_gpus [inference_gpus, "
    "boundary]; or the per-step metrics of verl, slime or AReaL as they write them: a console log (any other "
    "extension), JSONL or a wandb CSV export (--format).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "steps", "verl", "slime", "areal"]),
    default="auto",
    show_default=True,
    help="What --steps is: trainground's step log, or a framework's metrics; auto decides from the keys of every "
    "record and says what it found.",
)
@click.option(
    "--training-gpus",
    type=click.IntRange(min=1),
    help="Training GPUs of a framework step log (they are not in it per role).",
)
@click.option(
    "--into",
    "into",
    type=click.Path(dir_okay=False),
    help="Instance giving what logs cannot know (pools, prices, deadline); the fitted fields replace its own.",
)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False),
    help="Write the calibrated instance (YAML) here; needs --into.",
)
@click.option(
    "--inference-gpus",
    callback=_gpus,
    help="Inference GPUs allocated during the log: N, or per pool NAME=N,... (pools of the log's pool column "
    "or of --pool) for a tokens/s figure per pool.",
)
@click.option(
    "--pool",
    "pool_files",
    multiple=True,
    callback=_pool_files,
    help="NAME=FILE: the trajectory log of one inference pool (repeat per pool; instead of --trajectories).",
)
@click.option(
    "--columns",
    "mapping",
    callback=_mapping,
    help="Column names of the logs: NAME=COLUMN[:UNIT],... (e.g. start=ts_begin,group=rollout_id,"
    "update_s=upd:ms) or a YAML/JSON file of NAME: COLUMN.",
)
@click.option(
    "--timeout",
    type=Finite(min=0, min_open=True),
    help="Seconds after which the harness cut an attempt: lifetimes this long are right-censored there.",
)
@click.option(
    "--max-bad-rows",
    "max_bad",
    type=Finite(0, 1),
    default=0.01,
    show_default=True,
    help="Share of a log's rows that may be skipped for a bad cell (counted) before the log is refused.",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    help="Write the logged run's own configuration as a plan (JSON) of the calibrated instance, for "
    "`simulate CALIBRATED --plan FILE`; needs -o.",
)
@click.option(
    "--holdout",
    is_flag=True,
    help="A framework step log: fit on its first half, predict the second half's mean step time (saves and "
    "validations left out) from the fitted figures, beside the first half's mean; with -o and --plan the first "
    "half alone is written as the instance and the plan, which is replayed (the round trip).",
)
@click.option(
    "--regime",
    callback=_regime,
    help="How the run's generation and training took turns (docs/model.md §14), written into the instance in place "
    "of what the step log shows: colocated, pipelined-0, pipelined-1 (one step off), async (the seed's: drop), "
    "async-inflight, or admission-K (async with at most K + 1 batches in flight, K >= 1).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as JSON.")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for calibrate.json and the plots (PNG).")
@guarded
def calibrate(
    trajectories,
    steps_file,
    fmt,
    training_gpus,
    into,
    output,
    inference_gpus,
    pool_files,
    mapping,
    timeout,
    max_bad,
    plan_file,
    holdout,
    regime,
    as_json,
    out,
) -> None:
    """Fit instance fields to run logs: lifetimes (censored lognormal or Kaplan–Meier), tokens/s per GPU,
    intake, group correlation, the update law, the cadence achieved and the bottleneck; stages (docs/stages.md)
    when the logged tokens per attempt trend by more than 20 % over the run; the run regime (docs/model.md §14)
    from a verl step log's evidence or --regime.

    Exit codes: 0 calibrated, 2 a bad log, instance or option (also a --holdout with -o whose log is too short
    to halve: the calibration is shown, the instance not written), 1 internal error.
    """
    from trainground.models.load import load_instance

    if output and not into:
        raise click.UsageError("-o needs --into: pools, prices and the deadline are not in the logs")
    if plan_file and not output:
        raise click.UsageError("--plan needs -o: the plan is one of the calibrated instance")
    if trajectories and pool_files or not (trajectories or pool_files or steps_file):
        raise click.UsageError(
            "give the trajectory log: --trajectories FILE, or one --pool NAME=FILE per pool (or a step log alone, "
            "--steps FILE, for what it holds)"
        )
    if holdout and output and (trajectories or pool_files):
        raise click.UsageError(
            "--holdout with -o writes the first half of a framework step log alone: drop --trajectories"
        )
    if timeout and not (trajectories or pool_files):
        raise click.UsageError("--timeout censors a trajectory log's lifetimes: give --trajectories")
    inst = load_instance(into) if into else None
    if trajectories or pool_files:
        log, origin = _trajectory_log(trajectories, pool_files, mapping, timeout, max_bad)
        steps, framework = _steps(steps_file, origin, mapping, max_bad, fmt, training_gpus)
        from trainground.calibrate.fit import calibrate as run  # once the logs are read: a bad log costs no fit

        cal = run(log, steps, inst, inference_gpus, framework=framework, regime=regime)
    else:
        steps, framework = _steps(steps_file, None, mapping, max_bad, fmt, training_gpus)
        cal = _steps_alone(steps_file, steps, framework, inst, inference_gpus, regime)
    if holdout:
        _holdout(cal, steps, framework)
    notes = []
    unwritten = None  # -o asked for the first half's instance of a hold-out that was not made: exit 2 once shown
    if output and holdout and cal.holdout is None:
        notes.append(f"calibrated instance: not written ({output}): the hold-out was not made (the notes say why)")
        why = next((n for n in cal.notes if n.startswith("hold-out not made")), "hold-out not made")
        unwritten = f"{steps_file}: --holdout: {why}; -o {output} was not written"
        output = plan_file = None
    if output:
        written = cal
        if framework is not None and not (trajectories or pool_files) and (holdout or plan_file):
            from trainground.calibrate.roundtrip import logged_calibration

            written = logged_calibration(steps, framework, inst, inference_gpus, regime, half=holdout)
        calibrated = _write_instance(written, into, output)
        notes.append(f"calibrated instance: {output}" + (" (the first half's figures alone)" if holdout else ""))
        if plan_file:
            from trainground.calibrate.roundtrip import write_logged_plan

            notes.append(write_logged_plan(written, calibrated, output, plan_file, inference_gpus))
            _round_trip(cal, written, calibrated, plan_file if holdout else None)
        cal.notes += [
            n
            for n in written.notes
            if n not in cal.notes and n.startswith(("logged run", "workload.", "no logged plan", "not written"))
        ]
    write_and_show(
        cal,
        cal.to_json(),
        report_file="calibrate.json",
        out=out,
        as_json=as_json,
        plots=_plots,
        printer=_printer,
        notes=notes,
    )
    if unwritten is not None:
        click.echo(unwritten, err=True)
        raise SystemExit(2)


def _plots(cal) -> dict[str, bytes]:
    from trainground.render.calibrate import calibration_pngs

    return calibration_pngs(cal)


def _printer(console, cal) -> None:
    from trainground.render.calibrate import render_calibration

    render_calibration(console, cal)


def _write_instance(cal, into: str, output: str) -> None:
    """Write the calibrated instance and load it back: a file this command writes must be valid."""
    from trainground.calibrate.writer import calibrated_document
    from trainground.models.load import InstanceError, load_instance
    from trainground.simulation.output import write_atomic

    write_atomic(output, calibrated_document(cal, into))
    try:
        return load_instance(output)
    except InstanceError as exc:
        raise RuntimeError(f"the calibrated instance does not load: {exc.message}") from None


def _round_trip(cal, written, inst, plan_file: str | None) -> None:
    """--holdout with --plan: the first half's plan replayed against the second half's logged step time."""
    if plan_file is None or cal.holdout is None or written.plan is None:
        return
    from trainground.calibrate.roundtrip import round_trip

    cal.holdout["round_trip"], sentence = round_trip(inst, written.plan, written, cal.holdout)
    cal.notes.append(sentence)
