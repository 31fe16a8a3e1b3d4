"""The floors that choose which stage pairs a replan search opens (solver/stages/replan_floors.py): the bound of
every switch pattern, enumerated plan by plan, and their validity, each pair's floor at most the cheapest plan of
the whole replan model that selects it."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from tests.strategies import examples
from tests.test_stages_bruteforce import random_staged
from trainground.models.load import validate
from trainground.solver.stages import replan_floors
from trainground.solver.stages.replan_floors import Choices, pair_floors
from trainground.solver.stages.replan_search import floors
from trainground.solver.stages.solve import StagedPlanner, _lexicographic, restriction_rows
from trainground.solver.stopwatch import Stopwatch


def enumerated_floors(members, fixed: float, room: float, switch: float, tail: float) -> list[np.ndarray]:
    """Each pair's floor by listing every plan (one pair per stage) under every switch pattern: the least of
    Σ_blocks (parts + the block's extra seconds)·rate/3600 over the plans that fit, a block's rate the larger of its
    pairs' largest lo and the fixed term plus each term's largest over its pairs."""
    stages = len(members)
    out = [np.full(len(m), np.inf) for m in members]
    for plan in itertools.product(*(range(len(m)) for m in members)):
        parts = [float(members[p].parts[i]) for p, i in enumerate(plan)]
        for pattern in itertools.product((False, True), repeat=stages - 1):
            if sum(parts) + switch * sum(pattern) > room:
                continue
            blocks, bound = [[0]], 0.0
            for p, switched in enumerate(pattern):
                blocks.append([p + 1]) if switched else blocks[-1].append(p + 1)
            for block in blocks:
                extra = (switch if block[0] > 0 else 0.0) + (tail if block[-1] == stages - 1 else 0.0)
                terms = np.max([members[p].terms[plan[p]] for p in block], axis=0)
                rate = max(max(float(members[p].rate_floor[plan[p]]) for p in block), fixed + float(terms.sum()))
                bound += (sum(parts[p] for p in block) + extra) * rate / 3600.0
            for p, i in enumerate(plan):
                out[p][i] = min(out[p][i], bound)
    return out


def random_members(rng: random.Random) -> tuple[list[Choices], float, float, float, float]:
    stages = rng.choice((2, 3, 4))
    members = []
    for _ in range(stages):
        size = rng.randint(1, 5)
        parts = np.array([rng.choice((100.0, 200.0, 300.0, 450.0)) for _ in range(size)])
        terms = np.array([[rng.choice((0.0, 1.0, 3.0, 6.0)) for _ in range(3)] for _ in range(size)])
        least = np.array([rng.choice((5.0, 8.0, 10.0, 12.0, 20.0)) for _ in range(size)])
        members.append(Choices(parts, terms, least))
    room = rng.choice((400.0, 700.0, 1000.0, 2000.0))
    return members, rng.choice((0.0, 2.0)), room, rng.choice((0.0, 50.0, 300.0)), rng.choice((0.0, 60.0))


@pytest.mark.parametrize("seed", range(examples(40)))
def test_each_pairs_floor_is_the_least_bound_over_the_plans_and_patterns_that_select_it(seed):
    members, fixed, room, switch, tail = random_members(random.Random(seed))
    got = pair_floors(members, fixed, room, switch, tail)
    want = enumerated_floors(members, fixed, room, switch, tail)
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=1e-12, atol=1e-9, equal_nan=False), (g, w)


@pytest.mark.parametrize("seed", range(examples(10)))
def test_with_few_combinations_listed_a_floor_is_looser_never_above_the_bound(seed, monkeypatch):
    members, fixed, room, switch, tail = random_members(random.Random(1000 + seed))
    want = enumerated_floors(members, fixed, room, switch, tail)
    monkeypatch.setattr(replan_floors, "COMBINATIONS", 1)
    looser = pair_floors(members, fixed, room, switch, tail)
    monkeypatch.setattr(replan_floors, "PATTERN_STAGES", 0)
    loosest = pair_floors(members, fixed, room, switch, tail)
    for m, exact, a, b in zip(members, want, looser, loosest):
        own = m.parts * m.rate_floor / 3600.0  # every plan that selects a pair pays at least its own part at its lo
        for got in (a, b):
            assert (got <= exact * (1 + 1e-12) + 1e-9).all()
            assert (got[np.isfinite(exact)] >= own[np.isfinite(exact)] * (1 - 1e-12)).all()


def forced_optimum(planner: StagedPlanner, p: int, i: int) -> float | None:
    """The least total cost of a plan of the whole replan model (every pair open) that selects pair i of stage p."""
    r, highs = planner.replan_model()
    z = r.model.z[p, i]
    z.setlb(1)
    highs.bounds_changed([z])
    try:
        limits = restriction_rows(r, 0.0, None, None, None)
        status, values, value, _ = _lexicographic(r, highs, "total_cost", Stopwatch(), limits, ("total_cost",))
    finally:
        z.setlb(0)
        highs.bounds_changed([z])
    return value if values is not None and status == "optimal" else None


def test_no_plan_that_selects_a_pair_costs_less_than_its_floor():
    checked, tight = 0, 0
    for seed in range(40):
        data = random_staged(seed)
        if data["stages"]["capacity"] != "replan" or not data["stages"]["switch_time"]:
            continue
        inst = validate(data, "random.yaml")
        planner = StagedPlanner(inst)
        r, _ = planner.replan_model()
        bounds = floors(r, inst.schedule.deadline)
        for p, stage in enumerate(bounds):
            for i in np.flatnonzero(np.isfinite(stage)).tolist()[:6]:
                best = forced_optimum(planner, p, i)
                if best is None:
                    continue
                checked += 1
                assert stage[i] <= best * (1 + 1e-9) + 1e-9, (seed, p, i, stage[i], best)
                tight += stage[i] >= best * (1 - 0.01)
    assert checked >= 30 and tight >= checked // 10  # many pairs checked, and often within 1 % of the optimum
