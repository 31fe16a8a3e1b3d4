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
from tests.strategies import instance_of, reliable_instances, small_instances
from trainground.solver import calculus as calc
from trainground.solver import pairs as pair_tables
from trainground.solver.solve import Planner


@settings(
    max_examples=60,
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
    p, every = planner.pairs, planner.candidates()
    kept = planner.fewest_groups_only(every)
    pairs = {(c, k) for c, k in zip(p.cadence[every].tolist(), p.kept[every].tolist())}
    assert kept.sum() == len(pairs) < every.sum()
    for row in np.flatnonzero(kept):
        same = every & (p.cadence == p.cadence[row]) & (p.kept == p.kept[row])
        assert p.groups[row] == p.groups[same].min()
    data["limits"] = {"max_total_cost": 1e9}
    budgeted = Planner(instance_of(data))
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


@settings(max_examples=80, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
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
