"""The per-step metrics RL frameworks log, read as a step log: verl, slime and AReaL.

Each framework's keys, as its source names them (docs/calibrate.md has the table with units):

- verl: its ``file`` tracking backend (``FileLogger`` in ``verl/utils/tracking.py``) writes one
  ``{"step": N, "data": {...}}`` per step; a wandb export has the same keys flat. ``timing_s/<phase>``
  (``compute_timing_metrics``, ``verl/trainer/ppo/metric_utils.py``: seconds of each ``marked_timer``
  phase), ``response_length/mean`` and ``prompt_length/mean`` (tokens per response / prompt),
  ``perf/total_num_tokens`` (prompt + response tokens of the step) and ``perf/throughput``
  (``compute_throughout_metrics``: total tokens / (step time x every GPU of the job)).
- slime: ``perf/<timer>_time`` (``log_perf_data_raw``: seconds of each ``Timer`` phase, e.g.
  ``perf/actor_train_time``, ``perf/train_wait_time``, ``perf/update_weights_time``), ``perf/step_time``,
  ``staleness/mean``, step key ``rollout/step``.
- AReaL: ``timeperf/rollout``, ``timeperf/train_step``, ``timeperf/update_weights``, ``timeperf/save``
  (seconds); its staleness is a setting (``max_head_offpolicyness``), not a log.

GPU counts are not in these logs per role. Training GPUs come from a ``training_gpus`` column (``--columns
training_gpus=KEY``) or ``--training-gpus``; verl's ``perf/throughput`` divisor counts every GPU of the job
(inference pools included when they are not colocated), so it is used only when nothing else is given,
and a note says what it counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainground.calibrate.guards import check_text
from trainground.calibrate.logs import MAX_BAD_SHARE, Steps, check_repeats, take
from trainground.calibrate.tables import FORMATS, UNITS, Table, numbers, read_table, split_unit
from trainground.models.load import InstanceError, Problem

NAMES = ("verl", "slime", "areal")


@dataclass(frozen=True)
class Keys:
    """The keys of one framework per role, the first present one read."""

    step: tuple[str, ...]
    update: tuple[str, ...]
    generation: tuple[str, ...] = ()
    step_time: tuple[str, ...] = ()
    weight_sync: tuple[str, ...] = ()
    checkpoint: tuple[str, ...] = ()
    wait: tuple[str, ...] = ()  # the trainer waiting for rollouts
    response_mean: tuple[str, ...] = ()
    prompt_mean: tuple[str, ...] = ()
    total_tokens: tuple[str, ...] = ()
    throughput: tuple[str, ...] = ()  # tokens / (time x every GPU of the job)
    staleness_mean: tuple[str, ...] = ()
    loop: tuple[str, ...] = ()  # per-trajectory times of the step: min, mean, max


AGENT_LOOP = "timing_s/agent_loop/generate_sequences/"
KEYS = {
    "verl": Keys(
        step=("step", "training/global_step", "_step"),
        update=("timing_s/update_actor",),
        generation=("timing_s/gen",),
        step_time=("timing_s/step", "perf/time_per_step"),
        weight_sync=("timing_s/update_weights",),
        checkpoint=("timing_s/save_checkpoint",),
        response_mean=("response_length/mean",),
        prompt_mean=("prompt_length/mean",),
        total_tokens=("perf/total_num_tokens",),
        throughput=("perf/throughput",),
        loop=(AGENT_LOOP + "min", AGENT_LOOP + "mean", AGENT_LOOP + "max"),
    ),
    "slime": Keys(
        step=("rollout/step", "step", "_step"),
        update=("perf/actor_train_time",),
        generation=("perf/rollout_time",),
        step_time=("perf/step_time",),
        weight_sync=("perf/update_weights_time",),
        checkpoint=("perf/save_model_time",),
        wait=("perf/train_wait_time",),
        staleness_mean=("staleness/mean",),
    ),
    "areal": Keys(
        step=("step", "global_step", "_step"),
        update=("timeperf/train_step",),
        generation=("timeperf/rollout",),
        weight_sync=("timeperf/update_weights",),
        checkpoint=("timeperf/save",),
    ),
}
SNIFF = {"verl": "timing_s/", "slime": "perf/actor_train_time", "areal": "timeperf/"}


@dataclass
class FrameworkSteps:
    """What a framework's step log holds beyond the step log: per step, NaN where not logged."""

    name: str
    weight_sync_s: np.ndarray | None = None
    checkpoint_s: np.ndarray | None = None
    wait_s: np.ndarray | None = None
    response_tokens: np.ndarray | None = None  # response (output) tokens of the step
    staleness_mean: np.ndarray | None = None
    loop: np.ndarray | None = None  # (steps, 3): min, mean, max of the step's per-trajectory times
    responses: np.ndarray | None = None  # responses (trajectories) of the step
    gpus_from_throughput: bool = False


def sniff(path: str | Path) -> str | None:
    """The framework whose keys the log's first record (or header) holds, None for a plain step log."""
    keys = set(framework_table(path, {}, probe=True).columns)
    for name, mark in SNIFF.items():
        if any(k.startswith(mark) for k in keys):
            return name
    return None


def framework_table(path: str | Path, mapping: dict[str, str], probe: bool = False) -> Table:
    """The log's columns: JSONL read record by record (verl's nested ``data`` flattened; NaN allowed, as
    Python's json writes it), CSV and Parquet as any log. ``probe``: the first record only."""
    path = Path(path)
    if FORMATS.get(path.suffix.lower()) != "jsonl" or not path.is_file():
        return read_table(path, mapping)
    check_text(path, "jsonl")
    records: list[dict] = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise InstanceError(str(path), [Problem(f"line {line_no}", f"not valid JSON: {exc}")]) from None
            if not isinstance(record, dict):
                raise InstanceError(str(path), [Problem(f"line {line_no}", "each line must be a JSON object")])
            data = record.get("data")
            records.append(
                {**{k: v for k, v in record.items() if k != "data"}, **data} if isinstance(data, dict) else record
            )
            if probe:
                break
    if not records:
        raise InstanceError(str(path), [Problem("", "empty file: no step records")])
    return _as_table(str(path), records, mapping)


def _as_table(file: str, records: list[dict], mapping: dict[str, str]) -> Table:
    import pyarrow as pa

    keys = list(dict.fromkeys(k for r in records for k in r))
    columns = {}
    for key in keys:
        cells = [r.get(key) for r in records]
        try:
            numeric = [None if v is None else float(v) for v in cells if not isinstance(v, (str, dict, list))]
            if len(numeric) != len(cells):
                raise TypeError
            columns[key] = pa.array(numeric, pa.float64())
        except (TypeError, ValueError):
            columns[key] = pa.array(
                [None if v is None else json.dumps(v) if not isinstance(v, str) else v for v in cells]
            )
    table = Table(file, "jsonl", columns, len(records))
    for name, spec in mapping.items():
        source, unit = split_unit(spec)
        if source in table.columns:
            table.columns[name] = table.columns.pop(source)
            table.sources[name] = source
        if unit is not None:
            table.scales[name] = UNITS[unit]
    return table


def _first(table: Table, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if table.has(k)), None)


def read_framework_steps(
    path: str | Path,
    name: str,
    mapping: dict[str, str],
    training_gpus: float | None,
    max_bad: float = MAX_BAD_SHARE,
) -> tuple[Steps, FrameworkSteps]:
    """The step log of framework ``name`` and what else it holds. Repeated steps (a restart): the last row
    of each is kept; a step whose checkpoint was saved has the save taken out of its step time."""
    keys = KEYS[name]
    table = framework_table(path, mapping)
    step_key, update_key = _first(table, keys.step), _first(table, keys.update)
    if update_key is None or step_key is None:
        missing = [k for k, ok in ((keys.update[0], update_key), (keys.step[0], step_key)) if ok is None]
        table.fail(None, None, f"missing {', '.join(repr(m) for m in missing)}: not a {name} step log (--format?)")
    step = numbers(table, step_key, minimum=0, allow_null=False)
    update = numbers(table, update_key, minimum=0, allow_null=False)
    values = {
        role: numbers(table, key, minimum=0)
        for role in ("generation", "step_time", "weight_sync", "checkpoint", "wait", "staleness_mean")
        if (key := _first(table, getattr(keys, role))) is not None
    }
    extra = FrameworkSteps(name)
    gpus, notes = _training_gpus(table, keys, extra, training_gpus, update)
    response, responses = _response_tokens(table, keys)
    loop = None
    if keys.loop and all(table.has(k) for k in keys.loop):
        loop = np.stack([numbers(table, k, minimum=0) for k in keys.loop], axis=1)
    keep = table.settle(max_bad)
    if keep is not None:
        notes.append(table.skipped_note())
    steps = Steps(table.file, step, update, gpus, generation_s=values.get("generation"), notes=notes)
    steps.step_s = values.get("step_time")
    if steps.step_s is None:  # AReaL logs its phases, not the step: the step is their sum
        phases = [values[k] for k in ("generation", "weight_sync") if k in values]
        steps.step_s = update + sum(np.nan_to_num(p) for p in phases)
        notes.append(f"{Path(table.file).name}: step time = the sum of the logged phases (no step-time key)")
    checkpoint = values.get("checkpoint")
    if steps.step_s is not None and checkpoint is not None:  # a save is a rare outlier of its step: taken out
        steps.step_s = steps.step_s - np.nan_to_num(checkpoint)
    before = steps.rows if keep is None else int(keep.sum())
    steps, rows = take(steps, keep)
    check_repeats(table, before, rows.size, step_key)
    extra.weight_sync_s, extra.checkpoint_s, extra.wait_s, extra.staleness_mean = (
        values[k][rows] if k in values else None for k in ("weight_sync", "checkpoint", "wait", "staleness_mean")
    )
    extra.response_tokens = response[rows] if response is not None else None
    extra.responses = responses[rows] if responses is not None else None
    extra.loop = loop[rows] if loop is not None else None
    missing = int(steps.iteration[-1] - steps.iteration[0] + 1 - steps.rows) if steps.rows else 0
    if missing > 0:
        steps.notes.append(
            f"{Path(table.file).name}: {missing:,} step numbers have no row kept (absent from the log or skipped): "
            "the figures are of the steps logged"
        )
    return steps, extra


def _training_gpus(table: Table, keys: Keys, extra: FrameworkSteps, given: float | None, update) -> tuple:
    notes: list[str] = []
    if table.has("training_gpus"):
        gpus = numbers(table, "training_gpus", minimum=0, allow_null=False)
        table.skip(gpus == 0, "training_gpus", lambda row: "must be > 0")
        return gpus, notes
    if given is not None:
        return np.full(update.size, float(given)), notes
    tokens, throughput = _first(table, keys.total_tokens), _first(table, keys.throughput)
    step_time = _first(table, keys.step_time)
    if tokens and throughput and step_time:
        t, r, s = (numbers(table, k, minimum=0, allow_null=False) for k in (tokens, throughput, step_time))
        table.skip(~(r * s > 0), throughput, lambda row: "must be > 0")
        with np.errstate(divide="ignore", invalid="ignore"):
            gpus = np.rint(t / (r * s))
        extra.gpus_from_throughput = True
        counts = ", ".join(f"{g:,.0f}" for g in np.unique(gpus[np.isfinite(gpus)])[:6])
        notes.append(
            f"training GPUs taken from {throughput}'s divisor ({counts}): it counts every GPU of the job, inference "
            "included when it is not colocated; give --training-gpus N (or --columns training_gpus=KEY) when it is not"
        )
        return gpus, notes
    table.fail(None, None, "no training GPU count: give --training-gpus N or --columns training_gpus=KEY")


def _response_tokens(table: Table, keys: Keys) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Response tokens and responses of each step: the step's tokens (verl's total counts prompt and
    response) over a prompt + response."""
    total, response, prompt = (_first(table, k) for k in (keys.total_tokens, keys.response_mean, keys.prompt_mean))
    if not (total and response and prompt):
        return None, None
    t, r, p = (numbers(table, k, minimum=0) for k in (total, response, prompt))
    with np.errstate(divide="ignore", invalid="ignore"):
        responses = np.where(r + p > 0, t / (r + p), np.nan)
    return responses * r, responses
