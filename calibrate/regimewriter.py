"""The calibrated instance's ``regime`` section (MODEL.md §14) and its ``schedule.extra_time`` (§2: T = n·L +
extra_time), each fitted field with its comment.

The regime is written with the terms the regime's rows hold: a colocated run's ``switch_time`` (what a step
spends neither generating nor training: calibrate/regime.py) and, in a batch mode, ``weight_sync_time`` (per
published version, part of each iteration; under async it is §13's, the commented reliability section's). It
must pass the rules of ``models.regime_rules``
on the ``--into`` instance (a colocated run's shapes in the training pool): a regime said with --regime that
does not is bad input, one read from a log is not written and a note says why.

Validation passes are one-off time over the run, not part of an iteration: ``extra_time`` is the passes a run of
the instance's iterations makes, ceil(n / every) (verl validates every ``test_freq`` steps and after the last),
times the median pass. It replaces the ``--into`` instance's own extra_time, which a note gives.
"""

from __future__ import annotations

import math
from pathlib import Path

from trainground.calibrate.fit import Calibration
from trainground.calibrate.yamlfields import Fields, comment, enough, number
from trainground.models.errors import InstanceError, Problem
from trainground.models.load import load_instance
from trainground.models.regime_rules import regime_errors


def write_regime(doc: dict, cal: Calibration, fields: Fields, into: Path) -> None:
    """``doc['regime']`` from the calibration's regime, when it has one that the instance admits."""
    finding = cal.regime
    if finding is None or finding.regime is None:
        return
    regime = finding.regime
    own = load_instance(into)
    problems = regime_errors(own.model_copy(update={"regime": regime}))
    if problems:
        if finding.source == "--regime":
            raise InstanceError(str(into), [Problem(p.path, f"--regime {regime.label}: {p.rule}") for p in problems])
        cal.notes.append(
            f"regime not written: {into.name} does not admit the log's {regime.label} regime ("
            + "; ".join(f"{p.path}: {p.rule}" for p in problems)
            + ")"
        )
        return
    source = (
        "said with --regime"
        if finding.source == "--regime"
        else f"read from {Path(cal.steps or '').name} (the notes give the evidence)"
    )
    section: dict = {"mode": fields.put(regime.mode, f"calibrated: {source}")}
    section |= regime.model_dump(include={"staleness", "steps_ahead", "in_flight_updates"}, exclude_defaults=True)
    switch = cal.step_figures.get("switch_time_s")
    if regime.mode == "colocated" and switch is not None and enough(cal, switch, "regime.switch_time"):
        section["switch_time"] = fields.put(number(switch.value), comment(switch, switch.note))
    sync = cal.step_figures.get("weight_sync_s")
    if regime.batched and sync is not None and enough(cal, sync, "regime.weight_sync_time"):
        section["weight_sync_time"] = fields.put(number(sync.value), comment(sync, sync.note))
    if own.regime is not None and own.regime != regime:
        cal.notes.append(f"regime: {into.name}'s own ({own.regime.label}) replaced by the {regime.label} regime")
    doc["regime"] = section


def write_extra_time(doc: dict, cal: Calibration, fields: Fields) -> None:
    """``schedule.extra_time``: the validation passes of a run of the instance's iterations (a step log's
    validation time per pass and how often the passes came)."""
    figure = cal.step_figures.get("validation_s")
    if figure is None or not enough(cal, figure, "schedule.extra_time (validation passes)"):
        return
    if figure.every is None:
        return
    iterations = int(doc.get("workload", {}).get("iterations", 0))
    passes = math.ceil(iterations / figure.every)
    total = passes * figure.value
    schedule = doc.setdefault("schedule", {})
    before = schedule.get("extra_time")
    if before not in (None, 0, 0.0, "0s", "0"):
        cal.notes.append(
            f"schedule.extra_time: the --into instance's {before} replaced by the validation passes' {total:,.6g} s "
            "(add any other one-off time back by hand)"
        )
    how = (
        f"validation passes over the run, ceil({iterations:,} iterations / every {figure.every:g} steps) = {passes:,}"
        f" x {figure.value:,.4g} s per pass"
    )
    schedule["extra_time"] = fields.put(number(total), comment(figure, how))
    cal.notes.append(f"schedule.extra_time: {how} = {total:,.6g} s (one-off time, not in the cadence)")
