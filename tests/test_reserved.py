"""Reserved pools (MODEL §4) solved by the MIP on hand-solved instances: a fully reserved cluster makes the
fastest plan the cheapest; a reserved training pool beside a rented inference pool moves the optimum; the
plan shows the idle reserved GPUs. (The verifier's reserved term and the brute-force reference are tested in
test_startup_and_billing.py; hypothesis draws reserved pools for test_bruteforce.py.)

base() of test_known_optima, by hand: cadences 15, 20, 25 s (144 iterations, T = 144·L); at L = 15/20/25
the plan needs 4/3/2 replicas (1 GPU each), 4/3/2 training groups (U = 50/m ≤ L) and 4/3/2 nodes at 2 $/h.
"""

from __future__ import annotations

import copy

import pytest
from click.testing import CliRunner

from tests import reference
from tests.test_known_optima import assert_plan, base
from trainground.cli import main
from trainground.models.load import validate
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan


def solve(data: dict, objective: str | None = None):
    inst = validate(copy.deepcopy(data), "hand.yaml")
    result = solve_instance(inst, objective)
    assert verify_plan(inst, result.plan).violations == []
    return inst, result


def reserved_all() -> dict:
    data = base()
    data["gpu_pools"][0]["billing"] = "reserved"
    return data


def mixed() -> dict:
    """Training on an owned 8-GPU pool (reserved, 8 $/h whatever is used), inference rented by the GPU."""
    data = base()
    data["gpu_pools"] = [
        {"name": "owned", "gpus": 8, "gpu_hour_cost": 1.0, "billing": "reserved"},
        {"name": "rent", "gpus": 16, "gpu_hour_cost": 1.0},
    ]
    data["inference"]["shapes"][0]["pool"] = "rent"
    data["training"]["pool"] = "owned"
    return data


def test_billed_by_use_the_slowest_cadence_is_cheapest():
    """Control: L = 15: 8 GPUs + 4 nodes = 16 $/h × 0.6 h = $9.60; L = 20: 6 + 6 = 12 × 0.8 = $9.60;
    L = 25: 4 + 4 = 8 $/h × 1 h = $8."""
    _, result = solve(base())
    assert_plan(result, cadence=25, K=1, replicas={"s1": 2}, groups=2, nodes={"std": 2}, hourly=8, total=8)


def test_a_fully_reserved_cluster_gives_the_fastest_plan():
    """16 reserved GPUs cost 16 $/h at every cadence: L = 15 (4 nodes): 24 $/h × 0.6 h = $14.40 beats
    L = 20 (22 × 0.8 = $17.60) and L = 25 ($20)."""
    inst, result = solve(reserved_all())
    assert_plan(result, cadence=15, K=1, replicas={"s1": 4}, groups=4, nodes={"std": 4}, hourly=24, total=14.4)
    _, fastest = solve(reserved_all(), "makespan")
    assert result.plan.makespan_s == fastest.plan.makespan_s
    best = reference.best(reference.feasible_points(inst), "total_cost")
    assert (best.cadence, best.total) == (15.0, pytest.approx(result.plan.total_cost, rel=1e-12))
    (pool,) = result.plan.pools
    assert (pool.gpus_used, pool.gpus_billed, result.plan.cost_terms.gpu) == (8, 16, 16.0)


def test_reserved_training_pool_beside_a_rented_inference_pool():
    """Owned 8 $/h fixed + rented replicas + nodes: L = 15: 8 + 4 + 8 = 20 $/h × 0.6 h = $12; L = 20:
    8 + 3 + 6 = 17 × 0.8 = $13.60; L = 25: 8 + 2 + 4 = 14 × 1 = $14. Billed by use, both pools would make
    L = 25 ($8) the optimum, as in the control."""
    inst, result = solve(mixed())
    assert_plan(result, cadence=15, K=1, replicas={"s1": 4}, groups=4, nodes={"std": 4}, hourly=20, total=12)
    billed = {p.pool: (p.gpus_used, p.gpus_billed) for p in result.plan.pools}
    assert billed == {"owned": (4, 8), "rent": (4, 4)}
    best = reference.best(reference.feasible_points(inst), "total_cost")
    assert (best.cadence, best.total) == (15.0, pytest.approx(12.0, rel=1e-12))
    used = mixed()
    used["gpu_pools"][0]["billing"] = "used"
    _, control = solve(used)
    assert (control.plan.cadence_s, control.plan.total_cost) == (25.0, pytest.approx(8.0, rel=1e-9))


def test_the_plan_shows_idle_reserved_gpus(tmp_path):
    import yaml

    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(mixed()))
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 0, result.output
    assert "of 8 GPUs used; reserved: all 8 billed, 4 idle" in result.stdout
    assert "reserved" not in next(line for line in result.stdout.splitlines() if "pool rent" in line)
