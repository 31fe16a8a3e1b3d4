"""A framework's step log (calibrate/frameworks.py: the table and the framework) as the rows the step figures are
fitted on: per step, the trainer's busy time (every training-GPU pass), the generation time, the step time less
weight sync, saves and validations (each its own term), and what else the log holds.

A cell that is NaN, not a number or negative is *missing* for the figures that use its key, counted per key;
the row stays. A row is set aside only when nothing in it can be used: no step number (counted, and the log is
refused above ``--max-bad-rows`` of them), or no timed phase at all (a validation-only record such as verl's
``step:0 - val-core/...``, counted apart). A repeated step (a restart) keeps its last row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainground.calibrate.frameworks import OVERLAPPED, PARTIAL, SCHEMES, THRESHOLD, LoadedLog, Scheme, verl_trainer
from trainground.calibrate.logs import MAX_BAD_SHARE, Steps, check_repeats, last_rows
from trainground.calibrate.metricslog import EVAL_MARK
from trainground.calibrate.phases import Terms, fallback_step, lenient_sum, stalls_inside, strict_sum
from trainground.calibrate.tables import NUMBER, Table


@dataclass
class FrameworkSteps:
    """What a framework's step log holds beyond the Steps rows: per kept row, NaN where missing."""

    name: str
    scheme: Scheme | None = None
    trainer: str = ""  # verl: the trainer that wrote the log (frameworks.verl_trainer)
    keys: list[str] = field(default_factory=list)  # every key the log holds
    partial: np.ndarray | None = None  # verl fully-async: share of a batch's samples generated across a publish
    threshold: np.ndarray | None = None  # verl fully-async: the rollouter's staleness_threshold, as logged
    terms: Terms = field(default_factory=Terms)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # top-level phase key -> seconds
    logged_step: np.ndarray | None = None  # the step time as logged (or summed)
    wall_s: np.ndarray | None = None  # the wall time per step: logged step + the stalls outside it
    step_keys: list[str] = field(default_factory=list)  # the keys the step time came from
    step_logged: bool = True  # False: the sum of the phases
    inside: dict[str, bool] = field(default_factory=dict)  # stall -> inside the logged step time
    weight_sync_s: np.ndarray | None = None
    checkpoint_s: np.ndarray | None = None
    validation_s: np.ndarray | None = None
    wait_s: np.ndarray | None = None
    response_tokens: np.ndarray | None = None  # response (output) tokens of the step
    responses: np.ndarray | None = None  # responses (trajectories) of the step
    token_keys: list[str] = field(default_factory=list)
    rate: np.ndarray | None = None  # slime: logged response tokens / (rollout time x rollout GPUs)
    staleness_mean: np.ndarray | None = None
    loop: np.ndarray | None = None  # (steps, 3): min, mean, max of the step's per-trajectory times
    gpus_from_throughput: bool = False
    job_gpus: np.ndarray | None = None  # verl: perf/throughput's divisor, every GPU of the job, per step
    missing: dict[str, list] = field(default_factory=dict)  # key -> [cells present but not usable, first row]
    no_timing: int = 0  # records with no timed phase (validation-only records)


def lenient(table: Table, key: str, missing: dict[str, list], minimum: float | None = 0.0) -> np.ndarray:
    """A column as floats, NaN for a cell that is empty, NaN, infinite, not a number or below ``minimum``; the
    cells that were there but unusable are counted in ``missing[key]``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(key)
    if pa.types.is_boolean(col.type) or pa.types.is_null(col.type):
        col = pc.cast(col, pa.float64())
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        text = col.cast(pa.string())
        good = pc.match_substring_regex(text, NUMBER, ignore_case=True).fill_null(False)
        col = pc.cast(pc.if_else(good, text, None), pa.float64())
        bad_text = pc.and_(pc.invert(good), pc.is_valid(text)).to_numpy(zero_copy_only=False)
    else:
        bad_text = np.zeros(len(col), bool)
    values = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=True)
    empty = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.zeros(values.size, bool)
    values[empty] = np.nan
    unusable = ~empty & ~np.isfinite(values)
    if minimum is not None:
        unusable |= np.isfinite(values) & (values < minimum)
    values[unusable] = np.nan
    unusable |= bad_text
    if unusable.any():
        first = int(np.argmax(unusable))
        count, row = missing.get(key, [0, first])
        missing[key] = [count + int(unusable.sum()), min(row, first)]
    return values * table.scales[key] if key in table.scales else values


def _first(table: Table, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if table.has(k)), None)


def _terms(scheme: Scheme, keys: list[str], trainer: str = "") -> Terms:
    """The log's top-level phase keys by role; ``timing_s/`` wins over ``timing/`` for a phase logged as both.
    verl's one-step-off and fully-async trainers time their wait for a batch generated beside the step as
    ``gen``: it is the wait there, and the batch's own generation (one-step-off) is ``overlapped``."""
    names: dict[str, str] = {}
    for key in keys:
        name = scheme.phase_name(key)
        if name is not None and name not in scheme.nested and name not in names:
            names[name] = key
    t = Terms()
    roles = {
        "generation": scheme.generation,
        "passes": scheme.trainer,
        "sync": scheme.sync,
        "checkpoint": scheme.checkpoint,
        "validation": scheme.validation,
        "wait": scheme.wait,
        "partition": scheme.partition,
    }
    placed = set(scheme.trainer_total)
    for role, wanted in roles.items():
        setattr(t, role, [names[n] for n in wanted if n in names])
        placed |= set(wanted)
    nested_passes = [
        k for k in keys if (n := scheme.phase_name(k)) in scheme.trainer and n in scheme.nested and k not in t.passes
    ]
    t.passes += nested_passes
    total = [names[n] for n in scheme.trainer_total if n in names]
    t.trainer = total or list(t.passes)
    if not all(n in names for n in scheme.partition):
        t.partition = []
    t.other = [key for name, key in names.items() if name not in placed]
    if trainer in ("one_step_off", "fully_async"):
        t.wait = t.generation + [k for k in t.wait if k not in t.generation]
        t.generation = []
        if trainer == "one_step_off":
            t.overlapped = [k for k in (p + n for n in OVERLAPPED for p in scheme.prefixes) if k in keys][:1]
    return t


def read_framework_steps(
    loaded: LoadedLog, training_gpus: float | None, max_bad: float = MAX_BAD_SHARE
) -> tuple[Steps, FrameworkSteps]:
    """The rows of the update law and the cadence, and the rest of what the log holds (see the module)."""
    table, scheme = loaded.table, SCHEMES[loaded.framework]
    extra = FrameworkSteps(scheme.name, scheme)
    step_key = "iteration" if table.has("iteration") else _first(table, scheme.step)
    if step_key is None:
        table.fail(None, None, f"no step number ({', '.join(scheme.step)}): name it with --columns iteration=KEY")
    step = lenient(table, step_key, {})
    table.skip(~np.isfinite(step), step_key, lambda row: "is empty or not a number: a record needs its step")
    extra.keys = list(table.columns)
    extra.trainer = verl_trainer(extra.keys) if scheme.name == "verl" else ""
    terms = _terms(scheme, list(table.columns), extra.trainer)
    phase_keys = list(dict.fromkeys(terms.generation + terms.passes + terms.trainer + terms.sync + terms.checkpoint))
    rest = terms.validation + terms.wait + terms.partition + terms.other + terms.overlapped
    phase_keys += [k for k in rest if k not in phase_keys]
    values = {k: lenient(table, k, extra.missing) for k in phase_keys}
    step_time_key = _first(table, scheme.step_time)
    logged_all = lenient(table, step_time_key, extra.missing) if step_time_key else None
    timed = np.zeros(table.rows, bool)
    for v in [*values.values(), *([logged_all] if logged_all is not None else [])]:
        timed |= np.isfinite(v)
    extra.no_timing = int((np.isfinite(step) & ~timed).sum())
    keep = table.settle(max_bad)
    notes = [table.skipped_note()] if keep is not None else []
    keep = (np.ones(table.rows, bool) if keep is None else keep) & timed
    if not keep.any():
        table.fail(None, None, f"no record holds a timed phase ({', '.join(scheme.prefixes)}...) with its step number")
    rows = last_rows(step, keep)
    check_repeats(table, int(keep.sum()), rows.size, step_key)
    if int(keep.sum()) > rows.size:
        repeated = plural(int(keep.sum()) - rows.size, "record repeats", "records repeat")
        notes.append(
            f"{Path(table.file).name}: {repeated} an earlier step number (a restart re-ran them): the last record "
            "of each step is kept"
        )
    values = {k: v[rows] for k, v in values.items()}
    extra.terms, extra.values = terms, values
    n = rows.size
    if logged_all is not None:
        logged, extra.step_keys = logged_all[rows], [step_time_key]
    else:
        logged, extra.step_keys = fallback_step(values, terms, n)
        extra.step_logged = False
    if table.has(EVAL_MARK):
        _unlogged_validation(values, terms, logged, lenient(table, EVAL_MARK, {})[rows])
    fixed = True if not extra.step_logged else scheme.stalls_inside
    extra.inside, stall_notes = stalls_inside(values, terms, logged, fixed)
    notes += stall_notes
    stall = {name: np.sum([np.nan_to_num(values[k]) for k in keys], axis=0) for name, keys in terms.stalls().items()}
    stall = {name: s for name, s in stall.items() if isinstance(s, np.ndarray)}
    inside = sum((s for name, s in stall.items() if extra.inside.get(name)), np.zeros(n))
    outside = sum((s for name, s in stall.items() if not extra.inside.get(name, True)), np.zeros(n))
    extra.logged_step, extra.wall_s = logged, logged + outside
    extra.weight_sync_s = _role(values, terms.sync)
    extra.checkpoint_s = _role(values, terms.checkpoint)
    extra.validation_s = _role(values, terms.validation)
    extra.wait_s = _role(values, terms.wait)
    trainer = strict_sum(values, terms.trainer, n)
    generation = strict_sum(values, terms.generation or terms.overlapped, n)
    gpus, gpu_notes = _training_gpus(table, scheme, extra, training_gpus, rows)
    steps = Steps(
        table.file,
        step[rows],
        trainer if trainer is not None else np.full(n, np.nan),
        gpus,
        generation_s=generation,
        notes=notes + gpu_notes,
    )
    steps.step_s = logged - inside
    steps.update_source = " + ".join(terms.trainer) or None
    taken = [k for name, keys in terms.stalls().items() if extra.inside.get(name) for k in keys]
    steps.step_source = (extra.step_keys[0] if extra.step_logged else "the sum of " + " + ".join(extra.step_keys)) + (
        " less " + ", ".join(taken) if taken else ""
    )
    _tokens(table, scheme, extra, rows)
    if extra.response_tokens is None and scheme.name == "verl":
        note = _rank_tokens(table, scheme, extra, rows, gpus)
        steps.notes += [note] if note else []
    _missing_note(table, extra, steps)
    gaps = int(steps.iteration[-1] - steps.iteration[0] + 1 - n) if n else 0
    if gaps > 0:
        steps.notes.append(
            f"{Path(table.file).name}: {plural(gaps, 'step number', 'step numbers')} between the first and the last "
            f"{'has' if gaps == 1 else 'have'} no record: the figures are of the steps logged"
        )
    return steps, extra


UNLOGGED_VALIDATION = "eval N lines (estimated: the step's unlogged time above the other steps')"


def _unlogged_validation(values: dict, terms: Terms, logged: np.ndarray, marked: np.ndarray) -> None:
    """slime logs no time for a validation (``eval N``): the steps it ran in are found from the lines, and its
    time estimated as such a step's unlogged time (the step less every logged phase) above the median unlogged
    time of the other steps; its own term like a logged one."""
    marked = np.nan_to_num(marked) > 0
    logged_phases = terms.generation + terms.trainer + terms.sync + terms.checkpoint + terms.other
    unlogged = logged - lenient_sum(values, logged_phases, logged.size)
    others = unlogged[~marked & np.isfinite(unlogged)]
    if not marked.any() or not others.size:
        return
    values[UNLOGGED_VALIDATION] = np.where(marked, np.maximum(unlogged - np.median(others), 0.0), np.nan)
    terms.validation.append(UNLOGGED_VALIDATION)


def plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def _role(values: dict[str, np.ndarray], keys: list[str]) -> np.ndarray | None:
    return np.sum([values[k] for k in keys], axis=0) if keys else None


def _missing_note(table: Table, extra: FrameworkSteps, steps: Steps) -> None:
    name = Path(table.file).name
    if extra.no_timing:
        steps.notes.append(
            f"{name}: {plural(extra.no_timing, 'record holds', 'records hold')} no timed phase (validation-only "
            "records such as verl's step-0 val-core/*, or a metrics line without timings): not steps, left out"
        )
    if extra.missing:
        cells = sum(c for c, _ in extra.missing.values())
        ranked = sorted(extra.missing.items(), key=lambda kv: -kv[1][0])[:6]
        which = ", ".join(f"{k} {c:,} (first: {table.where(r, k).split(',')[0]})" for k, (c, r) in ranked)
        steps.notes.append(
            f"{name}: {plural(cells, 'cell is', 'cells are')} NaN, negative or not a number ({which}): each is missing "
            "for the figures that use its key, its row kept for the others"
        )


def _training_gpus(table: Table, scheme: Scheme, extra: FrameworkSteps, given: float | None, rows: np.ndarray):
    """The training GPUs of each step: a mapped column, --training-gpus, else verl's throughput divisor (every GPU
    of the job, said in a note). The divisor is kept apart (``job_gpus``) whenever the log has it."""
    notes: list[str] = []
    tokens, throughput, step_time = (
        _first(table, k) for k in (scheme.total_tokens, scheme.throughput, scheme.step_time)
    )
    if tokens and throughput and step_time:
        t, r, s = (lenient(table, k, {})[rows] for k in (tokens, throughput, step_time))
        with np.errstate(divide="ignore", invalid="ignore"):
            extra.job_gpus = np.where(r * s > 0, np.rint(t / (r * s)), np.nan)
    if table.has("training_gpus"):
        gpus = lenient(table, "training_gpus", extra.missing)[rows]
        return np.where(gpus > 0, gpus, np.nan), notes
    if given is not None:
        return np.full(rows.size, float(given)), notes
    if extra.job_gpus is not None:
        extra.gpus_from_throughput = True
        counts = ", ".join(f"{g:,.0f}" for g in np.unique(extra.job_gpus[np.isfinite(extra.job_gpus)])[:6])
        notes.append(
            f"training GPUs taken from {throughput}'s divisor ({counts}): it counts every GPU of the job, inference "
            "included when it is not colocated; give --training-gpus N (or --columns training_gpus=KEY) when it is not"
        )
        return extra.job_gpus.copy(), notes
    notes.append(
        "no training GPU count in the log: the update law is not fitted (give --training-gpus N or --columns "
        "training_gpus=KEY); the trainer's busy time per step is reported without it"
    )
    return np.full(rows.size, np.nan), notes


RANK_TOKENS = "global_seqlen/mean"  # verl: the step's prompt + response tokens per actor worker, the batch balanced


def _rank_tokens(table: Table, scheme: Scheme, extra: FrameworkSteps, rows: np.ndarray, gpus: np.ndarray) -> str:
    """verl before ``perf/total_num_tokens``: the step's tokens are ``global_seqlen/mean`` (the mean over the actor
    workers the batch is balanced across) times the workers, taken as the training GPUs (every GPU a
    data-parallel rank: no sequence parallelism); the note says so. Empty when the log cannot give them."""
    response, prompt = (_first(table, k) for k in (scheme.response_mean, scheme.prompt_mean))
    if not (table.has(RANK_TOKENS) and response and prompt and np.isfinite(gpus).any()):
        return ""
    t, r, p = (lenient(table, k, {})[rows] for k in (RANK_TOKENS, response, prompt))
    with np.errstate(divide="ignore", invalid="ignore"):
        extra.responses = np.where(r + p > 0, t * gpus / (r + p), np.nan)
    extra.response_tokens = extra.responses * r
    extra.token_keys = [f"{RANK_TOKENS} x training GPUs", response, prompt]
    return (
        f"{Path(table.file).name}: no perf/total_num_tokens: a step's tokens are {RANK_TOKENS} times the training "
        "GPUs (verl balances the batch over every actor worker; this reads every training GPU as a data-parallel "
        "rank, wrong under sequence parallelism)"
    )


def _tokens(table: Table, scheme: Scheme, extra: FrameworkSteps, rows: np.ndarray) -> None:
    """Response tokens and responses of each step (verl: the step's tokens over a prompt + response), the
    logged rate (slime), staleness and the agent loop's per-trajectory times."""
    skip: dict[str, int] = {}
    total, response, prompt = (
        _first(table, k) for k in (scheme.total_tokens, scheme.response_mean, scheme.prompt_mean)
    )
    if total and response and prompt:
        t, r, p = (lenient(table, k, skip)[rows] for k in (total, response, prompt))
        with np.errstate(divide="ignore", invalid="ignore"):
            extra.responses = np.where(r + p > 0, t / (r + p), np.nan)
        extra.response_tokens = extra.responses * r
        extra.token_keys = [total, response, prompt]
    if (rate := _first(table, scheme.rate)) is not None:
        extra.rate = lenient(table, rate, skip)[rows]
        extra.token_keys = [rate]
    if table.has(PARTIAL):
        extra.partial = lenient(table, PARTIAL, skip)[rows]
    if table.has(THRESHOLD):
        extra.threshold = lenient(table, THRESHOLD, skip)[rows]
    if (stale := _first(table, scheme.staleness_mean)) is not None:
        extra.staleness_mean = lenient(table, stale, skip)[rows]
    if scheme.loop and all(table.has(k) for k in scheme.loop):
        extra.loop = np.stack([lenient(table, k, skip)[rows] for k in scheme.loop], axis=1)
