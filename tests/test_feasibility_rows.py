"""A feasibility question (the diagnosis's probes) looks at one row per (cadence, K) pair: the fewest
training groups among the candidates (solver.solve.Planner.fewest_groups_only). Against brute-force
enumeration (tests/reference.py) on small random instances with the start-up counted (so each pair has a
row per group count, MODEL §8) and with §13's goodput: a plan exists exactly when the enumeration finds one,
also under a makespan cap that cuts the slow rows of a pair (the fewest groups are the slowest), and with a
budget the reduction is not made. A planner built for such questions (``Planner(fewest_groups=True)``, the
diagnosis's probes) lists only those rows: the same rows as the full table reduced, without ever listing
every group count (which, with many groups and a long cadence grid, does not fit in memory)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import reference
from tests.strategies import examples, instance_of, reliable_instances, small_instances
from trainground.solver.laws import calculus as calc
from trainground.solver.solve import Planner
from trainground.solver.table import pairs as pair_tables
from trainground.solver.table.pairs import build


@settings(
    max_examples=examples(20),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(small_instances() | reliable_instances(), st.floats(0.0, 1.0))
def test_a_plan_exists_iff_the_enumeration_finds_one(data, cut):
    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= 1.5
    data["limits"] = {"max_hourly_cost": None, "max_total_cost": None}
    inst = instance_of(data)
    points = reference.feasible_points(inst)
    spans = sorted(p.makespan for p in points) if points else []
    cap = spans[int(cut * (len(spans) - 1))] if spans else None
    # a table of each pair's fewest groups alone answers without a cap (a cap can leave only a pair's faster rows)
    for planner, caps in ((Planner(inst), (None, cap)), (Planner(inst, fewest_groups=True), (None,))):
        for max_makespan in caps:
            found = planner.solve("makespan", max_makespan=max_makespan, feasibility=True)
            expected = [p for p in points if max_makespan is None or p.makespan <= max_makespan * (1 + 1e-9)]
            assert (found.plan is not None) == bool(expected), (max_makespan, found.status, planner.fewest_groups)
            if found.plan is not None and max_makespan is not None:
                assert found.plan.makespan_s <= max_makespan * (1 + 1e-9)


def test_rows_of_one_pair_reduce_to_the_fewest_groups_and_budgets_keep_them_all():
    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml").read_text())
    data["schedule"]["count_startup"] = True
    data["planning"] = {"basis": "steady_state"}
    planner = Planner(instance_of(data))
    planner.solve("makespan")  # a makespan solve holds every row (solver.table.rows)
    p, every = planner.pairs, planner.candidates()
    kept = planner.fewest_groups_only(every)
    pairs = {(c, k) for c, k in zip(p.cadence[every].tolist(), p.kept[every].tolist())}
    assert kept.sum() == len(pairs) < every.sum()
    for row in np.flatnonzero(kept):
        same = every & (p.cadence == p.cadence[row]) & (p.kept == p.kept[row])
        assert p.groups[row] == p.groups[same].min()
    data["limits"] = {"max_total_cost": 1e9}
    budgeted = Planner(instance_of(data))
    budgeted.solve("makespan")
    assert np.array_equal(budgeted.fewest_groups_only(budgeted.candidates()), budgeted.candidates())


def fewest_rows(table: pair_tables.Pairs) -> list[tuple]:
    """(cadence, K, groups, makespan) of each pair's row with the fewest groups, by cadence then K."""
    first: dict[tuple, tuple] = {}
    for c, k, m, span in zip(
        table.cadence.tolist(), table.kept.tolist(), table.groups.tolist(), table.makespan.tolist()
    ):
        if (c, k) not in first or m < first[(c, k)][2]:
            first[(c, k)] = (c, k, m, span)
    return sorted(first.values())


@settings(
    max_examples=examples(50), deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(small_instances() | reliable_instances(), st.floats(1.0, 3.0))
def test_the_fewest_groups_table_is_the_full_tables_fewest_row_of_each_pair(data, looser):
    """Every update law (a table law's U is undefined outside its measured range), with and without §13."""
    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= looser
    inst = instance_of(data)
    full, fewest = pair_tables.build(inst), pair_tables.build(inst, fewest_groups=True)
    rows = list(zip(fewest.cadence.tolist(), fewest.kept.tolist(), fewest.groups.tolist(), fewest.makespan.tolist()))
    assert rows == fewest_rows(full)
    assert fewest.rejected == full.rejected


def test_many_groups_on_a_long_grid_give_one_row_a_pair():
    """20 long iterations: a 30,000 s deadline pace at a 10 s step is ~3,000 cadences × 10 K, and a pool of
    48,000 GPUs admits up to 6,000 training groups at each: the full table would list them all (about 10^8
    rows); the fewest-groups table has one row per (cadence, K) pair, its fewest on-time count."""
    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml").read_text())
    data["workload"].update(iterations=20, batch_trajectories=204800)
    data["schedule"].update(deadline=600000, cadence={"min": 60, "step": 10}, count_startup=True)
    data["gpu_pools"][0]["gpus"] = 48000
    inst = instance_of(data)
    table = pair_tables.build(inst, fewest_groups=True)
    pairs = set(zip(table.cadence.tolist(), table.kept.tolist()))
    assert table.size == len(pairs) > 20_000
    room = inst.pool("main").gpus // inst.training.gpus_per_group
    assert np.all(table.groups >= calc.min_groups_for(inst, table.cadence)) and table.groups.max() < room


def _first_rows(p) -> list[tuple[float, int, int, float]]:
    """(cadence, K, groups, makespan) of each pair's row with the fewest groups, from a full table."""
    order = np.lexsort((p.groups, p.kept, p.cadence))
    c, k, g, t = p.cadence[order], p.kept[order], p.groups[order], p.makespan[order]
    first = np.ones(c.size, dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (k[1:] != k[:-1])
    return sorted(zip(c[first].tolist(), k[first].tolist(), g[first].tolist(), t[first].tolist()))


def _fewest_table_matches(inst) -> None:
    full, fewest = build(inst), build(inst, fewest_groups=True)
    got = sorted(zip(fewest.cadence.tolist(), fewest.kept.tolist(), fewest.groups.tolist(), fewest.makespan.tolist()))
    assert got == _first_rows(full)
    assert fewest.rejected == full.rejected
    for name in ("attempts", "inflight", "supply_per_replica", "exceedance", "startup"):
        rows = {key: i for i, key in enumerate(zip(full.cadence.tolist(), full.kept.tolist(), full.groups.tolist()))}
        at = [rows[key] for key in zip(fewest.cadence.tolist(), fewest.kept.tolist(), fewest.groups.tolist())]
        assert np.array_equal(getattr(fewest, name), getattr(full, name)[at]), name


@settings(
    max_examples=examples(40), deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(small_instances() | reliable_instances(), st.sampled_from(["inverse", "amdahl", "table", "rising"]))
def test_the_fewest_table_is_the_full_tables_first_row_of_each_pair(data, law):
    """build(fewest_groups=True) finds each pair's fewest on-time group count by one search (or, where U rises with m
    or goodput enters, from the listed rows): the same rows, values and cut counts as the full table's."""
    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= 1.2
    update = data["training"]["update_time"]
    if "reference_time" not in update:
        law = "as drawn"  # the strategy drew a table law already
    if law == "amdahl":
        data["training"]["update_time"] = {**update, "law": "amdahl", "serial_fraction": 0.3}
    elif law in ("table", "rising"):
        ref = float(update["reference_time"])
        ys = [ref * 1.5, ref, ref * (1.2 if law == "rising" else 0.8), ref * 0.5]
        data["training"]["update_time"] = {
            "law": "table",
            "points": [{"gpus": g, "seconds": y} for g, y in zip((2, 4, 8, 16), ys)],
        }
    _fewest_table_matches(instance_of(data))


def test_the_fewest_table_of_the_bundled_instances_under_hold_and_a_pool_sixteen_times_larger():
    root = Path(__file__).resolve().parents[1] / "instances"
    for name in ("seed-week-75", "seed-two-pools", "two-backends-cloud", "seed-week-spot", "seed-drop-comonotone"):
        data = yaml.safe_load((root / f"{name}.yaml").read_text())
        data["planning"] = {"basis": "hold"}
        _fewest_table_matches(instance_of(data))
    data = yaml.safe_load((root / "seed-week-75.yaml").read_text())
    data["gpu_pools"][0]["gpus"] = 16 * 9970  # a diagnosis's loosest pool: 38.7 M rows in the full table
    fewest = build(instance_of(data), fewest_groups=True)
    assert fewest.size == len(set(zip(fewest.cadence.tolist(), fewest.kept.tolist()))) > 0


@settings(
    max_examples=examples(50), deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(small_instances(), st.sampled_from(["inverse", "amdahl", "table", "flat"]), st.sampled_from([1.0, 4.0]))
def test_the_rows_found_by_search_are_the_rows_listed_pair_by_pair(data, law, pools):
    """group_rows, where U(m) does not rise, takes each pair's fewest on-time count and every later count at
    which U drops; listed_rows tests each count of each pair: the same rows, in the same order."""
    from trainground.solver.table import group_counts, pairs

    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= 1.2
    for pool in data["gpu_pools"]:
        pool["gpus"] = int(pool["gpus"] * pools)
    update = data["training"]["update_time"]
    if law == "amdahl" and "reference_time" in update:
        data["training"]["update_time"] = {**update, "law": "amdahl", "serial_fraction": 0.3}
    elif law in ("table", "flat") and "reference_time" in update:
        ref = float(update["reference_time"])
        ys = [ref * 1.5, ref, ref if law == "flat" else ref * 0.8, ref * 0.5]
        data["training"]["update_time"] = {
            "law": "table",
            "points": [{"gpus": g, "seconds": y} for g, y in zip((2, 4, 8, 16), ys)],
        }
    inst = instance_of(data)
    seen = {}

    def capture(inst, c, rejected):
        seen["counts"] = c
        return group_counts.listed_rows(inst, c, rejected)

    original = group_counts.group_rows
    group_counts.group_rows = capture
    try:
        pairs.build(inst)
    finally:
        group_counts.group_rows = original
    if "counts" not in seen:
        return
    c = seen["counts"]
    found, listed = group_counts.group_rows(inst, c, {}), group_counts.listed_rows(inst, c, {})
    for a, b in zip(found, listed):
        assert np.array_equal(a, b)
