"""The pair table's cache: a sweep point reuses the run's Demand (the quantities no inference shape or
pool price changes), so a cached Demand must equal a fresh computation whatever field a point edits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainground.models.edits import apply_edit
from trainground.models.load import InstanceError, read_document, validate
from trainground.models.units import parse_duration
from trainground.solver.table.pairs import Pairs, TableCache, build

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = (
    "cadence",
    "kept",
    "makespan",
    "groups",
    "exceedance",
    "drop",
    "attempts",
    "inflight",
    "peak",
    "supply_per_replica",
)
SWAPS = {
    "mean": "median",
    "median": "mean",
    "consumer": "post_publish",
    "post_publish": "consumer",
    "drop": "downweight",
    "downweight": "drop",
    "independent": "comonotone",
    "comonotone": "independent",
}
# Fields the bundled files leave unset, and other laws, each edited in as well.
EXTRA_EDITS = [
    ("freshness.max_mean_gap", 3.0),
    ("freshness.max_exceedance", 0.05),
    ("freshness.max_group_drop", 0.3),
    ("training.max_groups", 700),
    ("training.min_groups", 3),
    ("schedule.cadence.max", 450.0),
    (
        "training.update_time",
        {"law": "table", "points": [{"gpus": 800, "seconds": 900}, {"gpus": 8000, "seconds": 200}]},
    ),
    ("training.update_time", {"law": "amdahl", "reference_gpus": 7000, "reference_time": 300, "serial_fraction": 0.1}),
    ("environment.occupancy", {"distribution": "empirical", "samples": [300, 800, 1044, 2000, 9000, 14000]}),
]


def _leaves(node, path: str = ""):
    """(path, value) of every scalar of a document, in MODEL.md path syntax."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _leaves(child, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _leaves(child, f"{path}[{i}]")
    else:
        yield path, node


def _changed(value):
    """Another valid-looking value of the same kind, or None for names."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + max(1, value // 10)
    if isinstance(value, float):
        return value * 0.9 if value else 0.1
    if isinstance(value, str):
        if value in SWAPS:
            return SWAPS[value]
        try:
            return parse_duration(value) * 0.9
        except ValueError:
            return None
    return None


def _edits(document: dict):
    for path, value in _leaves(document):
        if path in ("schema_version", "name", "objective"):
            continue
        new = _changed(value)
        if new is not None:
            yield path, new
    yield from EXTRA_EDITS


def _same(a: Pairs, b: Pairs) -> bool:
    return (
        all(np.array_equal(getattr(a, c), getattr(b, c), equal_nan=True) for c in COLUMNS)
        and a.rejected == b.rejected
        and a.grid_points == b.grid_points
    )


@pytest.mark.parametrize(
    ("name", "setting"),
    [
        ("seed-week-75.yaml", {}),
        ("seed-week-75.yaml", {"freshness.max_mean_gap": 6.0}),  # the mean gap reads littles_law_uses
        ("large-three-pools.yaml", {}),
        ("seed-lossy.yaml", {}),
    ],
)
def test_a_cached_demand_equals_a_fresh_one_for_every_edit(name, setting):
    file = ROOT / "instances" / name
    document = read_document(file)
    for path, value in setting.items():
        document = apply_edit(document, path, value)
    base = validate(document, str(file), file.parent)
    tried = differ = 0
    base_table = build(base)
    for path, value in _edits(document):
        try:
            inst = validate(apply_edit(document, path, value), str(file), file.parent)
        except InstanceError:
            continue
        cache = TableCache()
        build(base, cache)  # the cache holds the base file's Demand, as after a sweep's first point
        warm = build(inst, cache)
        cold = build(inst)
        assert _same(warm, cold), f"{name}: {path}={value!r} reused a stale Demand"
        tried += 1
        differ += not _same(cold, base_table)
    assert tried >= 25 and differ >= 10  # the edits reached the fields, and many of them change the table


def test_a_throughput_sweep_reuses_the_demand():
    file = ROOT / "instances" / "seed-week-75.yaml"
    document = read_document(file)
    cache = TableCache()
    first = build(validate(document, str(file), file.parent), cache)
    faster = build(
        validate(apply_edit(document, "inference.shapes[0].tokens_per_gpu_s", 90), str(file), file.parent), cache
    )
    assert len(cache._demand) == 1  # one Demand served both points
    assert not np.array_equal(first.supply_per_replica[0], faster.supply_per_replica[0])
    longer = build(validate(apply_edit(document, "schedule.deadline", "8d"), str(file), file.parent), cache)
    assert len(cache._demand) == 2 and longer.grid_points > first.grid_points


def test_the_cache_fills_each_attempt_rate_once_and_as_the_fill_does(monkeypatch):
    """TableCache.fill keeps every rate's start-up fill (MODEL §8): a re-solve that moves a pool size or a
    limit reads them back, and only rates not met before reach startup.fill."""
    from trainground.solver.laws import calculus as calc
    from trainground.solver.laws import startup

    inst = validate(read_document(ROOT / "instances" / "seed-week-75.yaml"), "seed", ROOT)
    occ = calc.occupancy_of(inst.environment.occupancy)
    cache, asked = TableCache(), []
    real = startup.fill
    monkeypatch.setattr(
        startup, "fill", lambda occ, rates, *rest: asked.append(np.size(rates)) or real(occ, rates, *rest)
    )
    first = np.array([9.0, 11.5, 10.455, 12.0])
    second = np.array([12.0, 10.455, 14.25, 9.0, 14.25])
    a = cache.fill(inst, occ, first)
    b = cache.fill(inst, occ, second)
    assert asked == [4, 1]  # the second call met one new rate
    assert np.array_equal(a, startup.run_fill(inst, first))
    assert np.array_equal(b, startup.run_fill(inst, second))
    assert b[0] == a[3] and b[1] == a[2] and b[2] == b[4]
