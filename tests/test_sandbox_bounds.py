"""The sandbox LP that bounds a pair's host cost (solver/table/bounds.py) when its loads are large: long-lived
environments give per-attempt loads of 10^5 s and more, and the largest rate a fleet whose nodes have no cap holds
stays infinite (the seed's VMs are capped; nodes take any load)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainground.models.edits import load_edited
from trainground.solver.solve import Planner
from trainground.solver.table.bounds import SandboxLP
from trainground.solver.table.coefficients import global_values, index_of

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
ADMISSION = ROOT / "instances" / "regimes" / "seed-week-admission-8-timeout.yaml"
LONG = ["environment.occupancy.median=100000s", "environment.occupancy.p99=200000s", "planning.basis=steady_state"]


def lp_of(inst) -> SandboxLP:
    ix = index_of(inst)
    return SandboxLP(inst, ix, global_values(inst, ix))


def test_nodes_without_a_cap_hold_any_rate_however_long_each_environment_lives():
    for median in ("1044s", "100000s", "3000000s"):
        inst = load_edited(SEED, [f"environment.occupancy.median={median}", "environment.occupancy.p99=9000000s"])
        assert lp_of(inst).largest_rate() == np.inf, median


def test_a_node_cap_caps_the_rate_the_fleet_holds_and_the_bound_ends_there():
    capped = load_edited(SEED, [*LONG, "environment.node_types[0].max_nodes=10"])
    top = lp_of(capped).largest_rate()
    assert 0 < top < np.inf
    value = lp_of(capped).value_at(top * 0.99)
    assert value is not None and lp_of(capped).value_at(top * 1.01) is None


def test_an_admission_run_of_long_lifetimes_cut_short_by_its_timeout_has_a_plan():
    # every attempt is cut at τ = 400 s, so its hosts hold R·400 s of environments, a few thousand
    inst = load_edited(ADMISSION, [*LONG, "regime.rollout_timeout=400s"])
    result = Planner(inst).solve()
    assert result.status == "optimal" and result.plan is not None
    assert sum(n.count for n in result.plan.local_nodes) < 20
