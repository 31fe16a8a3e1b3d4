"""The per-step metrics verl, slime and AReaL log, as each framework's source names them, and the framework a
log is from (docs/calibrate.md has the table with the versions).

A *phase* is a timed part of a step: ``timing_s/<name>`` (verl's ``marked_timer`` phases through
``compute_timing_metrics``, ``verl/trainer/ppo/metric_utils.py``; ``timing/<name>`` before the 2025 rename),
``perf/<name>_time`` (slime's ``Timer`` phases, ``log_perf_data_raw``), ``timeperf/<name>`` (AReaL's
``record_timing``). Each scheme says which phases generate, which run on the training GPUs, which are weight
sync, checkpoint and validation, which sit inside another (never summed) and how the step time is logged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trainground.calibrate.metricslog import E2E, Records, read_records
from trainground.calibrate.tables import FORMATS, UNITS, Table, read_table, split_unit
from trainground.models.load import InstanceError, Problem

NAMES = ("verl", "slime", "areal")
AGENT_LOOP = "timing_s/agent_loop/generate_sequences/"


@dataclass(frozen=True)
class Scheme:
    name: str
    label: str  # how the framework is named in messages
    prefixes: tuple[str, ...]  # a phase key is PREFIX + name + suffix
    suffix: str
    step: tuple[str, ...]  # step-number keys, the first present read
    step_time: tuple[str, ...]  # keys of the whole step's time, the first present read
    generation: tuple[str, ...]  # phase names
    trainer: tuple[str, ...]  # phase names: passes on the training GPUs (the update time written is their sum)
    actor: tuple[str, ...]  # the actor update among them
    sync: tuple[str, ...] = ()
    checkpoint: tuple[str, ...] = ()
    validation: tuple[str, ...] = ()
    wait: tuple[str, ...] = ()  # the trainer waiting for rollouts
    nested: tuple[str, ...] = ()  # phases timed inside another phase: never added to a sum
    trainer_total: tuple[str, ...] = ()  # a phase holding every trainer pass (slime's ``train``)
    partition: tuple[str, ...] = ()  # phases that add up to the step when the step time is not logged
    stalls_inside: bool | None = None  # None: whether a save or validation is inside the step time is read
    response_mean: tuple[str, ...] = ()
    prompt_mean: tuple[str, ...] = ()
    total_tokens: tuple[str, ...] = ()  # prompt + response tokens of the step
    throughput: tuple[str, ...] = ()  # tokens / (step time x every GPU of the job)
    rate: tuple[str, ...] = ()  # response tokens / (generation time x generating GPUs), logged
    staleness_mean: tuple[str, ...] = ()
    loop: tuple[str, ...] = ()  # per-trajectory times of the step: min, mean, max
    mark: str = ""  # a regex one of the framework's keys matches

    def phase_name(self, key: str) -> str | None:
        """The phase a key times, or None: not a phase key, or a statistic below one (``.../max``)."""
        for prefix in self.prefixes:
            if key.startswith(prefix) and key.endswith(self.suffix):
                name = key[len(prefix) : len(key) - len(self.suffix)] if self.suffix else key[len(prefix) :]
                return name if name and "/" not in name else None
        return None


SCHEMES = {
    "verl": Scheme(
        "verl",
        "verl",
        ("timing_s/timing_s/", "timing_s/", "timing/"),  # the fully-async trainer's param_sync is prefixed twice
        "",
        step=("step", "training/global_step", "_step"),
        step_time=("timing_s/step", "timing/step", "perf/time_per_step"),
        generation=("gen", "gen_max"),
        trainer=("old_log_prob", "old", "ref", "values", "update_critic", "update_actor"),
        actor=("update_actor",),
        sync=("update_weights", "sync_rollout_weights", "param_sync"),
        checkpoint=("save_checkpoint",),
        validation=("testing",),
        wait=("wait_prev_gen", "wait_for_enough_samples"),
        nested=("generate_sequences", "reshard", "step", "generate_async"),
        response_mean=("response_length/mean",),
        prompt_mean=("prompt_length/mean",),
        total_tokens=("perf/total_num_tokens",),
        throughput=("perf/throughput",),
        loop=(AGENT_LOOP + "min", AGENT_LOOP + "mean", AGENT_LOOP + "max"),
        mark=r"^timing(_s)?/[a-z_]+$",
    ),
    "slime": Scheme(
        "slime",
        "slime",
        ("perf/",),
        "_time",
        step=("rollout/step", "step", "_step"),
        step_time=("perf/step_time", "perf/total_train_time"),
        generation=("rollout",),
        trainer=("log_probs", "ref_log_probs", "actor_train", "critic_train"),
        actor=("actor_train",),
        sync=("update_weights",),
        checkpoint=("save_model",),
        wait=("train_wait",),
        nested=(
            "log_probs",
            "ref_log_probs",
            "actor_train",
            "critic_train",
            "data_preprocess",
            "cp_seq_kl_prep",
            "update_weights_pause",
            "longest_sample_non_generation",
            "longest_effective_sample_non_generation",
            "step",
            "total_train",
        ),
        trainer_total=("train",),
        partition=("train_wait", "train"),
        stalls_inside=True,
        rate=("perf/tokens_per_gpu_per_sec",),
        staleness_mean=("staleness/mean",),
        mark=r"^perf/[a-z_]+_time$",
    ),
    "areal": Scheme(
        "areal",
        "AReaL",
        ("timeperf/",),
        "",
        step=("step", "global_step", "_step"),
        step_time=(E2E,),
        generation=("rollout",),
        trainer=("critic_values", "recompute_logp", "ref_logp", "teacher_logp", "compute_advantage", "train_step"),
        actor=("train_step",),
        sync=("update_weights",),
        checkpoint=("save", "checkpoint_for_recover"),
        validation=("eval",),
        stalls_inside=True,
        mark=r"^(timeperf/[a-z_]+|#End to end# execution time)$",
    ),
}
TRAINGROUND = ("iteration", "training_gpus")

# verl's trainers, told apart by the keys only one of them logs. RayPPOTrainer (verl/trainer/ppo/ray_trainer.py)
# generates then trains, on the same GPUs (it asserts actor_rollout_ref.hybrid_engine); the one-step-off trainer
# (recipe/one_step_off_policy, later verl/experimental/one_step_off_policy) generates batch i+1 on its own GPUs
# while batch i trains: its trainer times its wait for the batch (``wait_prev_gen``, ``gen`` in later versions),
# the batch's generation beside it (``generate_sequences``, then ``generate_async``) and ``sync_rollout_weights``;
# the fully-async trainer (recipe/fully_async_policy, later verl/experimental/fully_async_policy) reads samples
# off a queue (``gen`` is that wait) and logs ``fully_async/*`` counters and its weight sync, ``timing_s/param_sync``
# (``timing_s/timing_s/param_sync`` from v0.8 on, where its timer's name already holds the prefix).
ONE_STEP_OFF = ("wait_prev_gen", "generate_async", "sync_rollout_weights")
FULLY_ASYNC = ("fully_async/", "timing_s/param_sync", "timing_s/timing_s/param_sync")
OVERLAPPED = ("generate_async", "generate_sequences")  # one-step-off: the batch's generation, beside the step
PARTIAL = "fully_async/partial/partial_ratio"  # share of a batch's samples generated across a publish
THRESHOLD = "fully_async/static/staleness_threshold"  # the rollouter's setting, logged with its status


def verl_trainer(keys) -> str:
    """Which of verl's trainers wrote a log with these keys: fully_async, one_step_off or ray_trainer."""
    keys = list(keys)
    if any(k.startswith(FULLY_ASYNC[0]) or k in FULLY_ASYNC[1:] for k in keys):
        return "fully_async"
    if any(k in (f"timing_s/{n}" for n in ONE_STEP_OFF) for k in keys):
        return "one_step_off"
    return "ray_trainer"


@dataclass
class LoadedLog:
    table: Table
    framework: str | None  # None: trainground's own step log
    how: str  # what was decided and why


def load_log(path: str | Path, fmt: str, mapping: dict[str, str]) -> LoadedLog:
    """The step log read into a table and the framework it is from: ``auto`` decides from every record (the
    count of records holding each framework's keys), a named ``--format`` is checked against them."""
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind in ("csv", "parquet"):
        table = read_table(path, mapping, nan_is_empty=False)
        counts, where = _counts([list(table.columns)] * 1), f"{kind.upper()} columns"
        records = None
    else:
        records = read_records(path)
        if not records.rows:
            raise InstanceError(str(path), [Problem("", _nothing(records))])
        counts = _counts([list(r) for r in records.rows])
        if records.kind == "console":  # records of the other frameworks' shapes, found by their own parsers
            counts = {n: counts[n] if n == records.framework else records.counts.get(n, 0) for n in NAMES}
        where = "records"
        table = as_table(records, mapping)
    own = all(table.has(c) for c in TRAINGROUND) and (table.has("update_s") or table.has("update_start"))
    found = max(counts, key=lambda n: counts[n]) if any(counts.values()) else None
    if fmt == "auto":
        if found is None:
            if own:
                return LoadedLog(table, None, f"{path.name}: read as trainground's step log (iteration, training_gpus)")
            raise InstanceError(str(path), [Problem("", _unknown(table, records))])
        return LoadedLog(table, found, _decided(path, found, counts, where, records))
    if fmt == "steps":
        if not own and found is not None:
            raise InstanceError(str(path), [Problem("--format steps", _elsewhere("steps", found, counts, where))])
        return LoadedLog(table, None, "")
    if counts.get(fmt, 0) == 0:
        theirs = (
            _elsewhere(fmt, found, counts, where)
            if found
            else (
                "it is trainground's step log (iteration, update_s, training_gpus): use --format steps"
                if own
                else _unknown(table, records)
            )
        )
        raise InstanceError(str(path), [Problem(f"--format {fmt}", theirs)])
    return LoadedLog(table, fmt, _decided(path, fmt, counts, where, records))


def _counts(key_lists: list[list[str]]) -> dict[str, int]:
    marks = {name: re.compile(s.mark) for name, s in SCHEMES.items()}
    return {name: sum(any(m.match(k) for k in keys) for keys in key_lists) for name, m in marks.items()}


def _marks(name: str) -> str:
    return {"verl": "timing_s/* or timing/*", "slime": "perf/<phase>_time", "areal": "timeperf/*"}[name]


def _decided(path: Path, name: str, counts: dict[str, int], where: str, records: Records | None) -> str:
    kind = {"console": "console log", "jsonl": "JSONL"}.get(records.kind if records else "", "export")
    if records is None:
        others = ", ".join(f"{SCHEMES[n].label}'s {_marks(n)}: {counts[n]:,}" for n in NAMES if n != name)
        return f"{path.name}: read as {SCHEMES[name].label}'s {kind}: its columns hold {_marks(name)} keys ({others})"
    total = len(records.rows)
    mark = re.compile(SCHEMES[name].mark)
    first = next((line for r, line in zip(records.rows, records.lines) if any(mark.match(k) for k in r)), None)
    if records.kind == "console":
        shapes = {"verl": "step:N lines", "slime": "perf N records", "areal": "Train step tables"}
        others = ", ".join(f"{SCHEMES[n].label}'s {shapes[n]}: {counts[n]:,}" for n in NAMES if n != name)
        held = f"{counts[name]:,} of its {total:,} {shapes[name]}"
        whole = sum(E2E in r for r in records.rows)
        if name == "areal" and whole:
            return (
                f"{path.name}: read as AReaL v0.2's console log: {whole:,} of its {total:,} steps are `(global step N) "
                f"finishes` lines, each holding the step's {E2E} and no phase time ({others})"
            )
    else:
        others = ", ".join(f"{SCHEMES[n].label}'s {_marks(n)}: {counts[n]:,}" for n in NAMES if n != name)
        held = f"{counts[name]:,} of {total:,} {where}"
    where_first = f"; the first at line {first}" if first is not None else ""
    return (
        f"{path.name}: read as {SCHEMES[name].label}'s {kind}: {held} hold {_marks(name)} keys ({others}){where_first}"
    )


def _elsewhere(fmt: str, found: str, counts: dict[str, int], where: str) -> str:
    wanted = "trainground's columns (iteration, update_s, training_gpus)" if fmt == "steps" else _marks(fmt)
    return (
        f"no {where[:-1] if where.endswith('s') else where} holds {wanted}; {counts[found]:,} hold "
        f"{SCHEMES[found].label}'s {_marks(found)}: use --format {found} (or auto)"
    )


def _unknown(table: Table, records: Records | None) -> str:
    keys = list(table.columns)[:12]
    what = (f"{len(records.rows):,} record{'s' if len(records.rows) != 1 else ''}") if records else "the columns"
    return (
        f"no framework's keys in {what} (verl's timing_s/*, slime's perf/<phase>_time, AReaL's timeperf/*) and "
        f"not trainground's step log (iteration, update_s, training_gpus); keys seen: {', '.join(keys) or 'none'}"
    )


def _nothing(records: Records) -> str:
    return (
        "no step record found: a console log needs verl's `step:N - key:value` lines, slime's `perf N: {...}` "
        "lines, AReaL's `Train step N/M done.` stats tables or its v0.2 `(global step N) finishes. … #End to end# "
        "execution time: *T*s.` lines; JSONL needs one object per line"
    )


def as_table(records: Records, mapping: dict[str, str]) -> Table:
    """Records as columns (every key of any record; a missing key is an empty cell), renamed by ``mapping``."""
    import pyarrow as pa

    keys = list(dict.fromkeys(k for r in records.rows for k in r))
    columns = {}
    for key in keys:
        cells = [r.get(key) for r in records.rows]
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in cells):
            columns[key] = pa.array([None if v is None else float(v) for v in cells], pa.float64())
        else:
            columns[key] = pa.array([None if v is None else v if isinstance(v, str) else str(v) for v in cells])
    table = Table(records.file, records.kind, columns, len(records.rows), line_of=list(records.lines) or None)
    for name, spec in mapping.items():
        source, unit = split_unit(spec)
        if source in table.columns:
            table.columns[name] = table.columns.pop(source)
            table.sources[name] = source
        if unit is not None:
            table.scales[name] = UNITS[unit]
    return table
