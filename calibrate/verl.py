"""verl's per-step metrics as a step log.

verl's ``file`` tracking backend (``trainer.logger=[...,file]``; class ``FileLogger`` in
``verl/utils/tracking.py``) writes one JSON object per training step, ``{"step": N, "data": {...}}``,
to ``$VERL_FILE_LOGGER_PATH``. The metrics read here are named in verl's source:

- ``timing_s/gen`` and ``timing_s/update_actor``: ``compute_timing_metrics`` in
  ``verl/trainer/ppo/metric_utils.py`` prefixes ``timing_s/`` to the phases timed with
  ``marked_timer("gen", ...)`` and ``marked_timer("update_actor", ...)`` in
  ``verl/trainer/ppo/ray_trainer.py``;
- ``perf/total_num_tokens``, ``perf/time_per_step`` and ``perf/throughput`` (= total tokens /
  (time x n_gpus)): ``compute_throughout_metrics`` in ``metric_utils.py``, from which the GPU count
  is ``total_num_tokens / (throughput x time_per_step)``;
- ``response_length/mean``: ``compute_data_metrics`` in ``metric_utils.py``.

A flat object (the metrics at the top level beside ``step``, as a wandb export writes them) is read too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from calibrate.logs import Steps
from models.load import InstanceError, Problem

GEN, UPDATE = "timing_s/gen", "timing_s/update_actor"
TOKENS, STEP_TIME, THROUGHPUT = "perf/total_num_tokens", "perf/time_per_step", "perf/throughput"
RESPONSE = "response_length/mean"


def looks_like_verl(path: str | Path) -> bool:
    """A JSONL file whose first record carries verl's update timing (nested under ``data`` or flat)."""
    path = Path(path)
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".json") or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        record = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(record, dict) and UPDATE in _metrics(record)


def _metrics(record: dict) -> dict:
    data = record.get("data")
    return data if isinstance(data, dict) else record


def read_verl_steps(path: str | Path) -> tuple[Steps, dict]:
    """The step log (iteration, update_s, training_gpus, generation_s) and the mean response length."""
    file = str(path)
    rows: list[tuple[float, float, float, float, float]] = []
    lengths: list[float] = []
    for line_no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"row {len(rows) + 1} (line {line_no})"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InstanceError(file, [Problem(where, f"not valid JSON: {exc.msg}")]) from None
        if not isinstance(record, dict):
            raise InstanceError(file, [Problem(where, "each line must be a JSON object")])
        metrics = _metrics(record)
        step = record.get("step", metrics.get("training/global_step"))
        values = [_metric(file, where, "step", step)] + [
            _metric(file, where, name, metrics.get(name)) for name in (UPDATE, GEN, TOKENS, STEP_TIME, THROUGHPUT)
        ]
        rows.append(tuple(values))
        if isinstance(metrics.get(RESPONSE), (int, float)):
            lengths.append(float(metrics[RESPONSE]))
    if not rows:
        raise InstanceError(file, [Problem("", "empty file: no step records")])
    step, update, gen, tokens, step_time, throughput = (np.array(col) for col in zip(*rows))
    gpus = np.rint(tokens / (throughput * step_time))
    steps = Steps(file, step, update, gpus, generation_s=gen, step_s=step_time)
    return steps, {
        "response_length_mean": float(np.mean(lengths)) if lengths else None,
        "training_gpus": float(gpus[0]),
    }


def _metric(file: str, where: str, name: str, value) -> float:
    if value is None:
        raise InstanceError(file, [Problem(f"{where}, column '{name}'", "missing (verl writes it every step)")])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InstanceError(file, [Problem(f"{where}, column '{name}'", f"must be a number >= 0, got {value!r}")])
    if name in (STEP_TIME, THROUGHPUT) and value == 0:
        raise InstanceError(file, [Problem(f"{where}, column '{name}'", "must be > 0")])
    return float(value)
