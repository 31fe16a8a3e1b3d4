"""MODEL.md §12 with the start-up counted (§8) and under hold (§11: start-up, E^hold sandboxes, an allowance Δ in
the deadline row): the staged MIP's optimum equals a brute-force enumeration (tests/stages_reference.py) on small
random staged instances, both capacities and all three objectives, tie-breaks included; every plan passes the
staged verifier, and the start-up really enters the optimum."""

from __future__ import annotations

import math
import random

import pytest

from tests import stages_reference as ref
from tests.strategies import examples
from tests.test_stages_bruteforce import VALUE, _close, _host_top, random_staged
from trainground.models.load import validate
from trainground.solver.stages.solve import StagedPlanner

INSTANCES = examples(32)
CHUNKS = 2  # one a worker; each chunk reaches every basis, capacity, objective and update-table form


def _variant(seed: int) -> tuple[dict, float]:
    """Instance ``seed`` of the steady-state brute force with the start-up counted or under hold (every other
    block of four seeds, so each chunk has both; with an allowance), its deadline widened for the fill; one in
    two with a measured update-time table, convex or not, in place of the inverse law."""
    data = random_staged(seed)
    rng = random.Random(10_000 + seed)
    data["schedule"]["deadline"] = int(data["schedule"]["deadline"] * 1.5)
    table = (None, "convex", None, "concave")[(seed // 8) % 4]  # every chunk has each with both bases
    if table is not None:  # the final update's convex rows (inverse, convex tables) or its binaries (concave)
        seconds = (100, 60, 40, 30, 24, 20, 18, 17) if table == "convex" else (70, 68, 64, 58, 50, 40, 28, 14)
        data["training"]["update_time"] = {
            "law": "table",
            "points": [{"gpus": g, "seconds": s} for g, s in zip(range(1, 9), seconds)],
        }
    if (seed // 4) % 2:
        data["planning"] = {"basis": "hold", "sandbox_wait": rng.choice((0.01, 0.05)), "replays": 16}
        data["freshness"]["group_correlation"] = rng.choice(("independent", "comonotone"))
        return data, float(rng.choice((0, 40, 150)))
    data["schedule"]["count_startup"] = True
    return data, 0.0


def _final_form(planner: StagedPlanner) -> str | None:
    """How the planner's compact model (built for the instance, whichever model its solves used) states the last
    stage's final update over three group counts or more: by its convex lines (``final_lines``) or a binary per
    count (``final_on``); None when it is not apart (one stage, no start-up) or has fewer counts (one line or
    two binaries: either form is exact there)."""
    model = planner.compact_model()[0].model
    lines, binaries = model.component("final_lines"), model.component("final_on")
    if lines is not None and len(lines) >= 2:
        return "lines"
    return "binaries" if binaries is not None and len(binaries) >= 3 else None


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_staged_startup_and_hold_match_brute_force(chunk):
    seen = {(basis, capacity): set() for basis in ("hold", "steady_state") for capacity in ("fixed", "replan")}
    counted = 0
    forms = set()  # how the compact models built for the fixed plans found state the final update
    for seed in range(chunk, INSTANCES, CHUNKS):
        data, allowance = _variant(seed)
        inst = validate(data, "random.yaml")
        vms = inst.environment.cloud.vm_types
        found = ref.candidates(inst, _host_top(inst), vms[0].max_vms if vms else 0, allowance)
        planner = StagedPlanner(inst)
        for objective in VALUE:
            expected = ref.best(found, objective)
            result = planner.solve(objective, allowance=allowance)
            if expected is None:
                assert result.status == "infeasible", (seed, objective, result.plan)
                continue
            seen[inst.planning.basis, inst.stages.capacity].add(objective)
            if inst.stages.capacity == "fixed":
                forms.add(_final_form(planner))
            assert result.status == "optimal", (seed, objective, result.status, expected)
            plan = result.plan
            got = {"total": plan.total_cost, "hourly": plan.hourly_cost, "makespan": plan.makespan_s}
            for key in ref.ORDER[objective]:
                assert _close(got[key], expected[key]), (seed, objective, key, got, expected)
            steady = sum(s.iterations * s.cadence_s for s in plan.stages) + inst.schedule.extra_time
            counted += not math.isclose(plan.makespan_s, steady, rel_tol=1e-9, abs_tol=1e-6)
    assert all(len(s) == 3 for s in seen.values()), seen  # both bases and capacities, every objective, with plans
    assert counted > 0
    assert forms - {None} == {"lines", "binaries"}, forms
