"""The makespan–cost frontier: exact, non-dominated, its ends the single-objective optima (MODEL.md §4)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, event, given, settings

from tests import reference
from tests.strategies import examples, instance_of, small_instances
from trainground.cli import main
from trainground.drivers.tradeoffs.frontier import CRITERIA, cost_of, frontiers, hull_corners
from trainground.models.edits import load_edited
from trainground.models.load import load_instance
from trainground.render.plots import FRONTIER_PX
from trainground.solver.laws.calculus import grid_points
from trainground.solver.solve import solve_instance

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
STAGED = SEED.with_name("seed-week-stages.yaml")
REL = 1e-9


def _close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first, right after the 8-byte signature)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def seed_frontiers():
    inst = load_instance(SEED)
    return inst, frontiers(inst)


@pytest.mark.parametrize("criterion", CRITERIA)
def test_points_are_mutually_nondominated(seed_frontiers, criterion):
    _, found = seed_frontiers
    front = found.frontiers[criterion]
    pts = [(r.plan.makespan_s, cost_of(r, criterion)) for r in front.points]
    assert len(pts) > 10
    for i, (ti, ci) in enumerate(pts):
        for j, (tj, cj) in enumerate(pts):
            if i != j:
                assert not (tj <= ti and cj <= ci), (pts[i], pts[j])
    spans = [t for t, _ in pts]
    assert spans == sorted(spans), "fastest first"
    assert front.corners[0] == 0 and front.corners[-1] == len(pts) - 1


def test_ends_are_the_single_objective_optima(seed_frontiers):
    inst, found = seed_frontiers
    cheapest = solve_instance(inst, "total_cost").plan
    fastest = solve_instance(inst, "makespan").plan
    hourly = solve_instance(inst, "hourly_cost").plan
    total = found.frontiers["total_cost"]
    assert _close(total.cheapest.plan.total_cost, cheapest.total_cost)
    assert _close(total.cheapest.plan.makespan_s, cheapest.makespan_s)
    assert _close(total.fastest.plan.makespan_s, fastest.makespan_s)
    assert _close(total.fastest.plan.total_cost, fastest.total_cost)
    by_hour = found.frontiers["hourly_cost"]
    assert _close(by_hour.cheapest.plan.hourly_cost, hourly.hourly_cost)
    assert _close(by_hour.fastest.plan.makespan_s, fastest.makespan_s)
    assert _close(by_hour.fastest.plan.total_cost, fastest.total_cost)


def test_every_point_is_the_cheapest_plan_at_its_makespan(seed_frontiers):
    """Spot-check interior points against a fresh solve capped at that makespan."""
    inst, found = seed_frontiers
    front = found.frontiers["total_cost"]
    from trainground.solver.solve import Planner

    planner = Planner(inst)
    for r in front.points[1:-1:15]:
        again = planner.solve("total_cost", max_makespan=r.plan.makespan_s)
        assert _close(again.plan.total_cost, r.plan.total_cost)


def brute_frontier(points: list[reference.Point], key: str) -> list[tuple[float, float]]:
    """Non-dominated (makespan, cost) pairs of an enumeration, fastest first (ties within 1e-9)."""
    best_at: dict[float, float] = {}
    for p in points:
        best_at[p.makespan] = min(best_at.get(p.makespan, float("inf")), getattr(p, key))
    out: list[tuple[float, float]] = []
    for span in sorted(best_at):
        cost = best_at[span]
        if not out or cost < out[-1][1] - REL * max(1.0, abs(out[-1][1])):
            out.append((span, cost))
    return out


@settings(
    max_examples=examples(12),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(small_instances())
def test_frontier_matches_brute_force(data):
    inst = instance_of(data)
    points = reference.feasible_points(inst)
    assume(points)  # an instance without any plan has an empty frontier: count only those that have one
    found = frontiers(inst, resolution=0)
    for criterion, key in (("total_cost", "total"), ("hourly_cost", "hourly")):
        expected = brute_frontier(points, key)
        got = [(r.plan.makespan_s, cost_of(r, criterion)) for r in found.frontiers[criterion].points]
        event(f"{criterion}: {min(len(expected), 3)}{'+' if len(expected) >= 3 else ''} frontier points")
        assert len(got) == len(expected), (criterion, got, expected)
        for (t1, c1), (t2, c2) in zip(got, expected):
            assert _close(t1, t2) and _close(c1, c2, 1e-7), (criterion, got, expected)


def test_hull_corners_are_where_the_slope_changes():
    assert hull_corners([], []) == []
    assert hull_corners([1.0], [5.0]) == [0]
    assert hull_corners([1, 2, 3], [3, 2, 1]) == [0, 2]  # one straight segment
    assert hull_corners([1, 2, 3, 4], [10, 6, 4, 3]) == [0, 1, 2, 3]  # slope changes at every point
    assert hull_corners([1, 2, 3, 4], [10, 9, 4, 3]) == [0, 2, 3]  # (2, 9) lies above the chord


def test_cli_writes_csv_json_and_png(tmp_path):
    out = tmp_path / "front"
    args = ["frontier", str(SEED), "--out", str(out), "--set", "schedule.cadence.min=590s"]
    run = CliRunner().invoke(main, args + ["--json"])
    assert run.exit_code == 0, run.output
    printed = json.loads(run.output)
    saved = json.loads((out / "frontier.json").read_text())
    assert printed == saved
    total = saved["frontiers"]["total_cost"]
    assert total["points"] and total["points"][0]["result"]["status"] == "optimal"
    lines = (out / "frontier.csv").read_text().splitlines()
    assert len(lines) == 1 + sum(len(f["points"]) for f in saved["frontiers"].values())
    assert png_size((out / "frontier.png").read_bytes()) == FRONTIER_PX
    human = CliRunner().invoke(main, args)
    assert human.exit_code == 0, human.output
    assert "corners" in human.output and "$/day saved" in human.output


def test_cli_infeasible_instance_exits_3(tmp_path):
    run = CliRunner().invoke(
        main, ["frontier", str(SEED), "--out", str(tmp_path), "--set", "inference.shapes[0].tokens_per_gpu_s=1"]
    )
    assert run.exit_code == 3, run.output
    assert "no feasible plan" in run.output
    assert png_size((tmp_path / "frontier.png").read_bytes()) == FRONTIER_PX


@pytest.mark.parametrize("start, step", [(10_000, 2_500), (12_000, 250), (100_000, 12_500), (1e6, 125_000)])
def test_money_axis_labels_are_distinct_and_read_back_as_their_ticks(start, step):
    """The hourly-cost axis of a frontier: ticks 2,500 apart once read '$12k' and '$18k' for $12,500 and $17,500."""
    from trainground.render.plots import money

    ticks = [start + k * step for k in range(8)]
    labels = [money(t) for t in ticks]
    assert len(set(labels)) == len(labels), labels
    scale = {"M": 1e6, "k": 1e3}
    for tick, label in zip(ticks, labels):
        number = float(label.strip("$kM").replace(",", "")) * scale.get(label[-1], 1)
        assert number == pytest.approx(tick, rel=1e-9), (tick, label)


class _Ticks:
    """A clock that moves one second each time it is read: a walk's time runs out after a known number of reads."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def test_the_time_limit_bounds_the_whole_walk_and_keeps_the_plans_found(monkeypatch):
    """With 5 s on a clock read once per solve (and once per walk), the first walk gets half and finds its
    cheapest plan, the second finds none; every solve is given the time that is left."""
    import trainground.drivers.tradeoffs.frontier as driver
    import trainground.drivers.tradeoffs.frontier_walk as walker
    from trainground.solver.solve import Planner

    inst = load_edited(SEED, ["planning.basis=steady_state"])
    given = []
    original = Planner.solve

    def spy(self, objective=None, **options):
        given.append(options.get("time_limit"))
        return original(self, objective, **{k: v for k, v in options.items() if k != "time_limit"})

    monkeypatch.setattr(Planner, "solve", spy)
    ticks = _Ticks()
    monkeypatch.setattr(driver, "time", ticks)
    monkeypatch.setattr(walker, "time", ticks)
    found = driver.frontiers(inst, time_limit=5.0)
    total, hourly = found.frontiers["total_cost"], found.frontiers["hourly_cost"]
    assert (total.stopped, len(total.points)) == ("time_limit", 1)
    assert (hourly.stopped, len(hourly.points)) == ("time_limit", 0)
    assert given == [1.0]  # the one solve, given what was left of its walk's share
    assert total.cheapest.plan.total_cost == pytest.approx(solve_instance(inst).plan.total_cost, rel=1e-9)


def test_frontier_with_a_time_limit_says_so_and_exits_4(tmp_path):
    args = ["frontier", str(SEED), "--basis", "steady_state", "--time-limit", "0.000001", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 4, result.output
    assert "no plan found within the time limit" in result.output
    assert (tmp_path / "frontier.json").exists()


def _fine(basis: str = "steady_state", *edits: str) -> object:
    """The seed on a 0.1 s grid from 580 s to 590 s: 101 cadences, a frontier point at every few."""
    return load_edited(
        SEED,
        [
            f"planning.basis={basis}",
            "schedule.cadence.min=580s",
            "schedule.cadence.max=590s",
            "schedule.cadence.step=0.1s",
            *edits,
        ],
    )


@pytest.fixture(scope="module")
def fine_walks():
    inst = _fine()
    return frontiers(inst, ("hourly_cost",), resolution=0), frontiers(inst, ("hourly_cost",), resolution=0.2)


def test_a_resolution_keeps_points_apart_each_an_exact_frontier_plan_with_both_ends_exact(fine_walks):
    every, spaced = (f.frontiers["hourly_cost"] for f in fine_walks)
    exact = {round(r.plan.makespan_s, 6): r.plan.hourly_cost for r in every.points}
    gap = spaced.resolution_s
    # a share of the range from the cheapest plan's makespan to n·L at the shortest cadence (1,000 × 580 s)
    assert every.resolution_s == 0 and gap == pytest.approx(0.2 * (every.cheapest.plan.makespan_s - 580_000.0))
    assert 2 < len(spaced.points) <= len(every.points) / 3
    spans = spaced.makespans
    assert np.all(np.diff(spans[1:]) >= gap * (1 - 1e-9))  # the fastest, solved for at the end, may be nearer
    for r in spaced.points:  # each point is a point of the exact frontier
        assert exact[round(r.plan.makespan_s, 6)] == pytest.approx(r.plan.hourly_cost, rel=1e-9)
    for ends in ((spaced.fastest, every.fastest), (spaced.cheapest, every.cheapest)):
        assert ends[0].plan.makespan_s == pytest.approx(ends[1].plan.makespan_s, rel=1e-12)
        assert ends[0].plan.hourly_cost == pytest.approx(ends[1].plan.hourly_cost, rel=1e-9)
    for t in exact:  # a plan skipped lies within the gap below (faster than) a point shown
        assert t in {round(x, 6) for x in spans} or np.any((spans > t) & (spans - t <= gap * (1 + 1e-9)))
    assert fine_walks[1].solves < fine_walks[0].solves / 2


def test_frontier_resolution_option_walks_every_point_at_0_and_refuses_a_share_above_1(tmp_path):
    fine = ["--set", "schedule.cadence.min=570s", "--set", "schedule.cadence.max=570.2s"]
    fine += ["--set", "schedule.cadence.step=0.01s", "--basis", "steady_state", "--json", "--resolution", "0"]
    run = CliRunner().invoke(main, ["frontier", str(SEED), *fine, "--out", str(tmp_path)])
    assert run.exit_code == 0, run.output
    fronts = json.loads(run.output)["frontiers"]
    assert {f["resolution_s"] for f in fronts.values()} == {0} and all(f["points"] for f in fronts.values())
    bad = CliRunner().invoke(main, ["frontier", str(SEED), "--resolution", "1.5", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--resolution" in bad.output


def test_a_fine_grid_takes_a_resolution_by_default_and_a_coarse_grid_walks_every_point():
    from trainground.drivers.tradeoffs.frontier_walk import FINE_GRID, REPLAN_RESOLUTION, RESOLUTION, default_resolution

    seed = load_edited(SEED, [])
    fine = load_edited(SEED, ["schedule.cadence.step=0.01s"])
    assert grid_points(seed) <= FINE_GRID < grid_points(fine)
    assert (default_resolution(seed), default_resolution(fine)) == (0.0, RESOLUTION)
    helped = " ".join(CliRunner().invoke(main, ["frontier", "--help"]).output.split())
    assert f"Default: {RESOLUTION:g} on a grid of more than {FINE_GRID:,} cadences" in helped  # the help says these
    assert f"{REPLAN_RESOLUTION:g} on such a staged instance that re-plans its stages" in helped


def test_a_staged_instance_takes_the_fine_grid_default_and_a_replanned_one_a_coarser_one():
    from trainground.drivers.tradeoffs.frontier_walk import (
        FINE_GRID,
        REPLAN_RESOLUTION,
        RESOLUTION,
        cadence_choices,
        default_resolution,
    )

    fixed = load_edited(STAGED, [])
    replanned = load_edited(STAGED, ["stages.capacity=replan", "stages.switch_time=30m"])
    assert cadence_choices(fixed) == cadence_choices(replanned) > FINE_GRID
    assert (default_resolution(fixed), default_resolution(replanned)) == (RESOLUTION, REPLAN_RESOLUTION)
    assert RESOLUTION < REPLAN_RESOLUTION


def test_frontier_with_a_resolution_says_how_far_apart_its_points_are(tmp_path):
    fine = ["--set", "schedule.cadence.min=570s", "--set", "schedule.cadence.max=570.2s"]
    fine += ["--set", "schedule.cadence.step=0.01s", "--basis", "steady_state", "--resolution", "0.3"]
    run = CliRunner().invoke(main, ["frontier", str(SEED), *fine, "--out", str(tmp_path)])
    assert run.exit_code == 0, run.output
    gaps = {f["resolution_s"] for f in json.loads((tmp_path / "frontier.json").read_text())["frontiers"].values()}
    assert len(gaps) == 1 and gaps.pop() > 0
    assert "s of makespan apart (the walk's resolution" in run.output


def test_a_walk_over_the_rows_each_solve_needs_finds_the_frontier_of_a_walk_over_every_row(monkeypatch):
    import trainground.drivers.tradeoffs.frontier as frontier_module
    from trainground.solver.solve import Planner

    inst = _fine("steady_state", "schedule.count_startup=true")
    headroom = frontier_module.WALK_HEADROOM
    built = []
    use_pairs = Planner.use_pairs
    monkeypatch.setattr(Planner, "use_pairs", lambda self, pairs: built.append(pairs.size) or use_pairs(self, pairs))

    def walk(listed: int, headroom: float) -> tuple[list[tuple[float, float]], int]:
        monkeypatch.setattr(frontier_module, "LISTED_ENTRIES", listed)
        monkeypatch.setattr(frontier_module, "WALK_HEADROOM", headroom)
        built.clear()
        front = frontiers(inst, ("total_cost",), resolution=0.1).frontiers["total_cost"]
        return [(r.plan.makespan_s, r.plan.total_cost) for r in front.points], len(built)

    every, _ = walk(10**9, 0.0)  # the table of every row, listed before the first solve
    needed, builds = walk(0, 0.0)  # each solve's table holds the rows it needs
    spared, fewer = walk(0, headroom)  # cost tables with headroom, cut at the cap
    assert len(every) > 3
    for points in (needed, spared):
        assert [t for t, _ in points] == pytest.approx([t for t, _ in every], rel=1e-12)
        assert [c for _, c in points] == pytest.approx([c for _, c in every], rel=1e-9)
    assert fewer < builds


def test_a_walking_planner_answers_each_cap_as_a_fresh_planner_does_even_a_cap_below_its_table():
    from trainground.solver.solve import Planner

    inst = _fine("steady_state", "schedule.count_startup=true")
    walking = Planner(inst, walk=0.02)
    top = walking.solve("hourly_cost").plan.makespan_s
    # the table held serves the second and fourth caps; the third needs a dearer table, cut at that cap; the
    # last lies below every plan of that table (and of the grid: no plan)
    caps = [None, top * (1 - 1e-4), top * 0.985, top * 0.984, top * 0.975]
    statuses = []
    for cap in caps:
        got, fresh = (
            walking.solve("hourly_cost", max_makespan=cap),
            Planner(inst).solve("hourly_cost", max_makespan=cap),
        )
        statuses.append(got.status)
        assert got.status == fresh.status
        if got.plan is not None:
            assert got.plan.hourly_cost == pytest.approx(fresh.plan.hourly_cost, rel=1e-9)
            assert got.plan.makespan_s == pytest.approx(fresh.plan.makespan_s, rel=1e-12)
    assert statuses == ["optimal"] * 4 + ["infeasible"]
