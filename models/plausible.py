"""Bare numbers that are durations are seconds; warn where that reading is implausible for the field.

``deadline: 10`` is valid (ten seconds) but almost surely meant ``10d``: such a file then fails with an
infeasibility wall and no word about units. These checks read the document as written (before
validation turns every duration into seconds), so a value written with a unit is never questioned.
"""

from __future__ import annotations

import math
import os
from typing import Any

from trainground.models.limits import LIMITS
from trainground.models.shape import plain_numbers, shape_error
from trainground.models.units import SECONDS_PER_UNIT, format_duration, parse_duration

HOUR, MINUTE = 3600.0, 60.0

# field path -> (smallest plausible seconds, why, units to suggest in order: the first that makes it plausible)
RULES: dict[str, tuple[float, str, tuple[str, ...]]] = {
    "schedule.deadline": (HOUR, "under an hour", ("d", "h")),
    "schedule.extra_time": (MINUTE, "under a minute", ("h", "m")),
    "training.update_time.reference_time": (10.0, "under 10 s", ("m",)),
    "environment.occupancy.median": (10.0, "under 10 s", ("m",)),
    "environment.occupancy.mean": (10.0, "under 10 s", ("m",)),
    "environment.occupancy.p99": (10.0, "under 10 s", ("m",)),
    "reliability.gpu_mtbf": (1000 * HOUR, "under 1,000 h for one GPU", ("h",)),
}
LONGEST = {"schedule.deadline": 366 * 86400.0}  # a suggestion beyond this would be implausible too


def unit_warnings(document: dict[str, Any]) -> list[str]:
    """'path: 10 is read as 10 s (under an hour); did you mean 10d?' for each implausible bare number."""
    out = []
    for path, (least, why, units) in RULES.items():
        value = _at(document, path)
        if not _bare(value) or value <= 0 or value >= least:
            continue
        if path == "schedule.extra_time" and value == 0:
            continue
        out.append(f"{path}: {value:g} is read as {value:g} s ({why}); did you mean {_suggest(path, value, units)}?")
    deadline, cadence = _at(document, "schedule.deadline"), _at(document, "schedule.cadence.min")
    if _bare(deadline) and deadline >= HOUR and not isinstance(cadence, bool):
        try:
            shortest = parse_duration(cadence) if cadence is not None else 1.0
        except ValueError:
            shortest = None
        if isinstance(shortest, float) and deadline < shortest:
            out.append(
                f"schedule.deadline: {deadline:g} is read as {format_duration(deadline)}, under one cadence "
                f"(cadence.min {format_duration(shortest)}), so no plan can meet it; check its unit (h, d)"
            )
    return out


def _bare(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _suggest(path: str, value: float, units: tuple[str, ...]) -> str:
    for unit in units:
        if value * SECONDS_PER_UNIT[unit] <= LONGEST.get(path, float("inf")):
            return f"{value:g}{unit}"
    return f"{value:g}{units[-1]}"


def _at(document: Any, path: str) -> Any:
    node = document
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


# Magnitudes. A number far beyond any real run is a typo or a hostile file, and left alone it reaches numpy
# as an allocation (a cadence grid of 10^12 points, a range of 10^11 training groups) or an overflow. So every
# number, list and the document's shape are checked against the caps below as written (models.load.validate,
# before the schema builds anything), and the tables a solve will build are sized from the validated fields
# (:func:`size_errors`) before any is allocated. Each cap is far above the typical values docs/fields.md gives.

YEAR = 365.25 * 86400.0
MOST = 10**7  # GPUs in a pool, groups, replicas, nodes, VMs: above any cluster that exists
# The (cadence, K) tables of a solve are held to a memory budget, estimated from the fields before any exists. An
# entry costs TABLE_ENTRY_BYTES at the peak of a solve whose diagnosis re-solves edited copies, the largest path (the
# tables of the solve and of the copies' re-solves at once): bench/caps.py measures 282 bytes an entry on steady_state
# and 322 under hold (the seed on grids of 1 to 4 million entries, least squares over the peak RSS of the command).
# TABLE_BUDGET_BYTES is the most those tables may take on a shared two-core machine of a few GB: above the seed at a
# 0.001 s step (5.45 million entries, 792 MB measured for its solve). So a grid is refused above TABLE_ENTRIES.
TABLE_ENTRY_BYTES = 330
TABLE_BUDGET_BYTES = 2 * 10**9
TABLE_ENTRIES = TABLE_BUDGET_BYTES // TABLE_ENTRY_BYTES  # 6,060,606 (cadence, K) entries
SCENARIO_ENTRIES = 3 * 10**7  # scenarios × training-group counts of a confidence solve (S = 10^4 on the seed: 1.25e7)
MAX_DEPTH = 16  # levels of mappings and lists; the schema's deepest field is 5 levels down
MAX_VALUES = 2 * 10**6  # values in one document, an alias counted at every place it is used
MAX_ITEMS = 10**4  # items of one list (pools, shapes, backends, node and VM types, factors, table points)
MAX_SAMPLES = 10**6  # measured occupancy samples (a list or a CSV)
ANY_NUMBER = 1e15  # a number at a path without its own cap
FLOOR = 1e-6  # a positive number below this (in its field's unit) is refused; 0 is the schema's to judge
FLOOR_EXEMPT = {"freshness.max_exceedance", "freshness.max_group_drop"}  # limits on shares: tiny means "almost none"
MAX_TEXT = 10**4  # characters of a string or a key (names, field paths)
_DIGITS = 18  # a whole number with more digits is shown by its digit count

SECONDS = "s"
# normalised field path ([*] for a list item, * for a mapping key) -> (largest value, unit or noun)
CAPS: dict[str, tuple[float, str]] = {
    "workload.iterations": (MOST, "iterations"),
    "workload.batch_trajectories": (1e8, "trajectories"),
    "workload.group_size": (1e5, "attempts"),
    "workload.tokens_per_attempt": (1e9, "tokens"),
    "schedule.deadline": (10 * YEAR, SECONDS),
    "schedule.extra_time": (10 * YEAR, SECONDS),
    "schedule.cadence.min": (YEAR, SECONDS),
    "schedule.cadence.max": (YEAR, SECONDS),
    "schedule.cadence.step": (YEAR, SECONDS),
    "gpu_pools[*].gpus": (MOST, "GPUs"),
    "gpu_pools[*].gpu_hour_cost": (1e6, "$ per GPU-hour"),
    "gpu_pools[*].preemptions_per_hour": (3600.0, "per replica-hour (one a second)"),
    "inference.shapes[*].gpus_per_replica": (MOST, "GPUs"),
    "inference.shapes[*].tokens_per_gpu_s": (1e7, "tokens/s per GPU"),
    "inference.shapes[*].version_slowdown": (1e3, "per version"),
    "training.gpus_per_group": (MOST, "GPUs"),
    "training.min_groups": (MOST, "groups"),
    "training.max_groups": (MOST, "groups"),
    "training.update_time.reference_gpus": (MOST, "GPUs"),
    "training.update_time.reference_time": (10 * YEAR, SECONDS),
    "training.update_time.points[*].gpus": (MOST, "GPUs"),
    "training.update_time.points[*].seconds": (10 * YEAR, SECONDS),
    "environment.occupancy.median": (10 * YEAR, SECONDS),
    "environment.occupancy.p99": (10 * YEAR, SECONDS),
    "environment.occupancy.mean": (10 * YEAR, SECONDS),
    "environment.occupancy.sigma": (10.0, "(p99/median up to 1e10)"),
    "environment.occupancy.samples[*]": (10 * YEAR, SECONDS),
    "environment.peak_to_mean": (1e6, "(peak over mean)"),
    "environment.backends[*].cores": (1e6, "cores"),
    "environment.backends[*].memory_gb": (1e9, "GB"),
    "environment.node_types[*].cores": (MOST, "cores"),
    "environment.node_types[*].memory_gb": (1e9, "GB"),
    "environment.node_types[*].density.*": (MOST, "environments per node"),
    "environment.node_types[*].hour_cost": (1e6, "$ per node-hour"),
    "environment.cloud.vm_types[*].density.*": (MOST, "environments per VM"),
    "environment.cloud.vm_types[*].cores": (MOST, "cores"),
    "environment.cloud.vm_types[*].memory_gb": (1e9, "GB"),
    "environment.cloud.vm_types[*].hour_cost": (1e6, "$ per VM-hour"),
    "reliability.gpu_mtbf": (1000 * YEAR, SECONDS),
    "reliability.restart_time": (YEAR, SECONDS),
    "reliability.checkpoint_time": (YEAR, SECONDS),
    "reliability.checkpoint_interval": (10 * YEAR, SECONDS),
    "reliability.replica_restart_time": (YEAR, SECONDS),
    "reliability.weight_sync_time": (YEAR, SECONDS),
    "planning.replays": (1e4, "replays (each a whole simulated run)"),
    "planning.seed": (1e18, "(a seed)"),
    "stages.switch_time": (10 * YEAR, SECONDS),
    "stages.list[*].iterations": (MOST, "iterations"),
    "stages.list[*].tokens_per_attempt": (1e9, "tokens"),
    "stages.list[*].update_time_scale": (1e3, "(a factor on the update time)"),
    **{f"stages.list[*].occupancy.{p}": (10 * YEAR, SECONDS) for p in ("median", "p99", "mean", "samples[*]")},
    "stages.list[*].occupancy.sigma": (10.0, "(p99/median up to 1e10)"),
    "regime.steps_ahead": (1e4, "batches"),
    "regime.prefill_cost": (1e3, "output tokens per prefilled token"),
    "regime.context_tokens": (1e9, "tokens"),
    "regime.rollout_timeout": (10 * YEAR, SECONDS),
    "regime.max_concurrent_attempts": (1e9, "attempts"),
    "regime.switch_time": (YEAR, SECONDS),
    "regime.weight_sync_time": (YEAR, SECONDS),
    "uncertainty.samples": (1e5, "scenarios"),
    "uncertainty.seed": (1e18, "(a seed)"),
    **{f"uncertainty.factors[*].{p}": (1e3, "(a multiplier)") for p in ("mean", "sd", "median", "low", "mode", "high")},
    "uncertainty.factors[*].sigma": (10.0, "(sigma of a log-multiplier)"),
}
CAPS |= {limit.path: limit.cap for limit in LIMITS if limit.cap is not None}  # the limits' own (models/limits.py)
_SECTIONS = [
    "workload",
    "schedule",
    "gpu_pools",
    "inference",
    "training",
    "environment",
    "freshness",
    "reliability",
    "limits",
    "planning",
    "stages",
    "regime",
    "uncertainty",
]
CAPS = dict(sorted(CAPS.items(), key=lambda item: _SECTIONS.index(item[0].split(".")[0].split("[")[0])))  # file order
LIST_CAPS = {"environment.occupancy.samples": MAX_SAMPLES, "stages.list[*].occupancy.samples": MAX_SAMPLES}


class Huge(int):
    """A whole number written with more digits than Python turns into an int (over 4,300): the parsers
    return this in its place, so that the check of magnitudes names its field."""

    digits: int

    def __new__(cls, digits: int):
        out = super().__new__(cls, 0)
        out.digits = digits
        return out


def magnitude_errors(document: Any) -> list[tuple[str, str]]:
    """(field path, rule) for a document nested too deep or holding too many values (the first finding
    stops the walk: nothing below it can be trusted), else for every list longer than its cap and every
    number above its field's cap."""
    shape = shape_error(document, MAX_DEPTH, MAX_VALUES)
    if shape:
        return [shape]
    out: list[tuple[str, str]] = []
    stack: list[tuple[Any, str, str]] = [(document, "", "")]
    while stack:
        node, path, norm = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if len(str(key)) > MAX_TEXT:
                    out.append(
                        (path, f"a key of {len(str(key)):,} characters, above the {MAX_TEXT:,} an instance may hold")
                    )
                    continue
                star = f"{norm}.*" if norm else "*"
                named = f"{norm}.{key}" if norm else str(key)
                stack.append((value, f"{path}.{key}" if path else str(key), named if named in _KNOWN else star))
        elif isinstance(node, list):
            most = LIST_CAPS.get(norm, MAX_ITEMS)
            if len(node) > most:
                out.append((path, f"lists {len(node):,} items, above the {most:,} an instance may list"))
                continue
            item = f"{norm}[*]"
            largest = CAPS.get(item, (ANY_NUMBER, ""))[0]
            if plain_numbers(node) and FLOOR <= min(node, default=FLOOR) and max(node, default=0) <= largest:
                continue  # a list of samples: checked at C speed, walked only when one is too large
            out += [(f"{path}[{i}]", rule) for i, v in enumerate(node) if (rule := number_rule(v, item))]
            stack += [(v, f"{path}[{i}]", item) for i, v in enumerate(node) if isinstance(v, (dict, list))]
        else:
            rule = number_rule(node, norm)
            if rule:
                out.append((path, rule))
    return sorted(out)


def _prefixes(paths) -> set[str]:
    """Every normalised path of a capped field and every path above one ('gpu_pools[*]', 'gpu_pools')."""
    out = set()
    for path in paths:
        while path:
            out.add(path)
            path = path[: max(path.rfind("."), path.rfind("["), 0)]
    return out


_KNOWN = _prefixes([*CAPS, *LIST_CAPS])


def number_rule(value: Any, norm: str) -> str | None:
    """The rule a number at ``norm`` breaks, if it is above its cap (a duration string read in seconds), or a
    string longer than MAX_TEXT."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return f"a string of {len(value):,} characters, above the {MAX_TEXT:,} an instance may hold"
    if isinstance(value, Huge):
        return f"a whole number of {value.digits:,} digits is beyond any plausible value"
    largest, unit = CAPS.get(norm, (ANY_NUMBER, ""))
    if isinstance(value, str):
        if unit != SECONDS:
            return None
        try:
            value = parse_duration(value)
        except ValueError:
            return None  # the schema says what is wrong with it
    if not isinstance(value, (int, float)) or value != value or math.isinf(value):
        return None  # nan and inf: the schema's finite-number rule says so
    huge_int = isinstance(value, int) and abs(value) >= 10**_DIGITS
    if 0 < value < FLOOR and norm not in FLOOR_EXEMPT:
        seconds = " s" if unit == SECONDS else ""
        return (
            f"must be 0 or at least {FLOOR:g}{seconds}, a plausibility floor (see docs/fields.md): a plan "
            f"spanning so many orders of magnitude cannot be checked, got {value:g}{seconds}"
        )
    if value <= largest and not huge_int:  # a negative number is the schema's to refuse (must be > 0)
        return None
    shown = f"a number of {len(str(abs(value))):,} digits" if huge_int else None
    shown = shown or (f"{value:,}" if isinstance(value, int) else f"{value:g}") + (" s" if unit == SECONDS else "")
    return f"must be at most {cap_text(largest, unit)}, a plausibility cap (see docs/fields.md), got {shown}"


def cap_text(largest: float, unit: str) -> str:
    """A cap as the messages and docs/fields.md show it: '10,000,000 GPUs', '10 years (315,576,000 s)'."""
    if unit == SECONDS:
        return f"{largest / YEAR:g} year{'s' if largest > YEAR else ''} ({largest:,.0f} s)"
    return f"{largest:,.15g}" + (f" {unit}" if unit else "")


FILE_CAP_VARIABLE = "TRAINGROUND_MAX_FILE_MB"
FILE_CAP_MB = 10.0  # an instance file or an occupancy CSV; the seed instance is 2 kB, 10^6 samples ~8 MB


def file_cap_bytes() -> int:
    """The largest instance or samples file read, in bytes: ``$TRAINGROUND_MAX_FILE_MB`` megabytes, else 10 MB.
    Raises ValueError when the variable is not a positive number."""
    text = os.environ.get(FILE_CAP_VARIABLE, "").strip()
    if not text:
        return int(FILE_CAP_MB * 1e6)
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = math.nan
    if not math.isfinite(megabytes) or megabytes <= 0:
        raise ValueError(f"must be a positive number of megabytes (the cap on a file's size), got {text!r}")
    return int(megabytes * 1e6)


def too_large(size: int, cap: int) -> str:
    return (
        f"file is {size / 1e6:.3g} MB, above the {cap / 1e6:g} MB cap on what trainground reads; "
        f"set {FILE_CAP_VARIABLE} to a larger number of megabytes to read it"
    )


def size_errors(inst: Any) -> list[tuple[str, str]]:
    """(field path, rule) for each table a solve would build (docs/model.md §2) that is larger than
    its cap, from the validated fields alone: the cadence grid × the versions kept K (TABLE_ENTRIES, the entries
    the memory budget holds) and, with an ``uncertainty`` section, its scenarios × the training-group counts
    (SCENARIO_ENTRIES; the counts alone stay within TABLE_ENTRIES: a pool holds at most MOST GPUs)."""
    out = []
    sched, c = inst.schedule, inst.schedule.cadence
    top = c.max if c.max is not None else (sched.deadline - sched.extra_time) / inst.workload.iterations
    # finite: the step is at least FLOOR and the top at most 10 years, so at most ~3e14 steps
    spans = (top - c.min) / c.step if top >= c.min else -1.0
    kept = inst.freshness.max_versions_kept
    if (spans + 1) * kept > TABLE_ENTRIES:
        points = math.floor(spans * (1 + 1e-12) + 1e-9) + 1
        coarsest = (top - c.min) / max(TABLE_ENTRIES // kept - 1, 1)
        out.append(
            (
                "schedule.cadence.step",
                f"a step of {c.step:g} s from {c.min:g} s to {top:g} s makes {points:,} cadence grid points; "
                f"times K = {kept:,} versions kept that is {points * kept:,} (cadence, K) entries, "
                f"{table_memory(points * kept)}: use a step of at least {coarsest:.3g} s or a narrower "
                "cadence.min..max",
            )
        )
    if getattr(inst, "stages", None) is not None:
        out += _stage_grid_errors(inst, kept)
    t = inst.training
    fit = next(p.gpus for p in inst.gpu_pools if p.name == t.pool) // t.gpus_per_group
    counts = max(0, (fit if t.max_groups is None else min(t.max_groups, fit)) - t.min_groups + 1)
    scenarios = inst.uncertainty.samples if inst.uncertainty is not None else 0
    if scenarios * counts > SCENARIO_ENTRIES:
        out.append(
            (
                "uncertainty.samples",
                f"{scenarios:,} scenarios × {counts:,} training-group counts (min_groups..max_groups, or as many "
                f"as the pool holds) = {scenarios * counts:,} entries, above the {SCENARIO_ENTRIES:,} a confidence "
                "solve tabulates: draw fewer scenarios or set training.max_groups",
            )
        )
    return out


def table_memory(entries: int) -> str:
    """What ``entries`` (cadence, K) entries would take, against the budget: 'about 3.2 GB of tables at 320 bytes
    an entry, above the 2 GB budget (6,250,000 entries)'."""
    return (
        f"about {entries * TABLE_ENTRY_BYTES / 1e9:.3g} GB of tables at {TABLE_ENTRY_BYTES} bytes an entry, above the "
        f"{TABLE_BUDGET_BYTES / 1e9:g} GB a solve may take ({TABLE_ENTRIES:,} entries, docs/fields.md)"
    )


def _stage_grid_errors(inst: Any, kept: int) -> list[tuple[str, str]]:
    """A staged instance (docs/model.md §12) tabulates each stage's cadence grid, whose top defaults to the
    stage's own deadline pace (deadline - extra_time)/iterations: a short stage's grid reaches far. The stages'
    grids together, times K, are held to the table cap; the error names the stage with the most points."""
    sched, c = inst.schedule, inst.schedule.cadence
    points = []
    for stage in inst.stages.list:
        top = c.max if c.max is not None else (sched.deadline - sched.extra_time) / stage.iterations
        points.append(math.floor((top - c.min) / c.step * (1 + 1e-12) + 1e-9) + 1 if top >= c.min else 0)
    if sum(points) * kept <= TABLE_ENTRIES:
        return []
    most = max(range(len(points)), key=points.__getitem__)
    name = inst.stages.list[most].name
    return [
        (
            f"stages.list[{most}].iterations",
            f"the {len(points):,} stages' cadence grids hold {sum(points):,} points, times K = {kept:,} versions "
            f"kept {sum(points) * kept:,} (cadence, K) entries, {table_memory(sum(points) * kept)}; "
            f"stage {name!r} alone has {points[most]:,} (its grid's top defaults to its deadline pace, "
            f"(deadline - extra_time)/{inst.stages.list[most].iterations:,} iterations): set schedule.cadence.max, "
            "a coarser step or fewer stages",
        )
    ]
