"""The independent plan verifier (solver/verify/plan.py) against MODEL.md §3–§4.

Every plan the MIP returns for the bundled instances passes it; a plan corrupted in one
decision fails it on exactly the constraint that decision breaks. A corruption recomputes
the plan's costs and GPU counts from its (changed) counts, so that the violation found is
the constraint under test, not a stale cost. Time limits: a tiny one never crashes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.plans import recosted
from tests.test_known_optima import base, cloud_instance
from trainground.cli import main
from trainground.models.load import load_instance, read_document, validate
from trainground.models.result import Count, Placement
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan

INSTANCES = sorted(
    p
    for p in (Path(__file__).resolve().parents[1] / "instances").iterdir()
    if p.suffix in (".yaml", ".yml", ".toml", ".json") and p.stem != "seed-week-stages"
)  # the staged instance's plans are checked by solver/verify/stages.py (tests/test_stages.py)
IDS = [p.name for p in INSTANCES]
SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"


@pytest.fixture(scope="module")
def solved() -> dict:
    """{file name: (instance, result)}, each bundled instance solved once under its own objective."""
    out = {}
    for path in INSTANCES:
        inst = load_instance(path)
        out[path.name] = (inst, solve_instance(inst))
    return out


def violated(check, family: str) -> bool:
    return any(family in v for v in check.violations)


# --- returned plans pass ----------------------------------------------------------------------


@pytest.mark.parametrize("name", IDS)
def test_returned_plan_passes(solved, name):
    inst, result = solved[name]
    assert result.status in ("optimal", "infeasible"), (result.status, result.message)
    if result.status == "infeasible":
        assert result.plan is None
        return
    check = verify_plan(inst, result.plan)
    assert check.ok, check.violations
    assert check.binding == result.binding
    # The recomputation helper changes nothing on an untouched plan.
    again = recosted(inst, result.plan)
    assert again.total_cost == pytest.approx(result.plan.total_cost, rel=1e-12)
    assert verify_plan(inst, again).ok


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_seed_plans_pass_under_every_objective(solved, objective):
    inst, _ = solved["seed-week-75.yaml"]
    result = solve_instance(inst, objective)
    assert result.status == "optimal"
    assert verify_plan(inst, result.plan).ok


# --- corrupted plans fail ---------------------------------------------------------------------


def _feasible(solved):
    return [(name, *solved[name]) for name in IDS if solved[name][1].plan is not None]


def test_one_replica_fewer_breaks_throughput(solved):
    """Every bundled plan whose throughput binds fails the verifier with one replica fewer of any shape."""
    tested = 0
    for _, inst, result in _feasible(solved):
        if "throughput" not in result.binding:
            continue
        plan = result.plan
        for i, item in enumerate(plan.inference):
            if item.replicas == 0:
                continue
            inference = [r.model_copy() for r in plan.inference]
            inference[i] = item.model_copy(update={"replicas": item.replicas - 1})
            check = verify_plan(inst, recosted(inst, plan, inference=inference))
            assert violated(check, "throughput"), (item.shape, check.violations)
            tested += 1
    assert tested, "no bundled plan has a binding throughput"


def test_one_node_fewer_breaks_sandbox(solved):
    """Every bundled plan's node types at capacity fail the verifier with one node fewer."""
    tested = 0
    for _, inst, result in _feasible(solved):
        plan = result.plan
        for i, node in enumerate(plan.local_nodes):
            if node.count == 0 or f"sandbox_nodes[{node.type}]" not in result.binding:
                continue
            nodes = [n.model_copy() for n in plan.local_nodes]
            nodes[i] = Count(type=node.type, count=node.count - 1)
            check = verify_plan(inst, recosted(inst, plan, local_nodes=nodes))
            assert violated(check, f"_nodes[{node.type}]."), (node.type, check.violations)
            tested += 1
    assert tested, "no bundled plan uses local nodes at their capacity"


def test_one_group_fewer_breaks_update_time(solved):
    """Every bundled plan whose update time binds fails the verifier with one training group fewer."""
    tested = 0
    for _, inst, result in _feasible(solved):
        plan = result.plan
        if "update_time" not in result.binding or plan.training_groups <= inst.training.min_groups:
            continue
        check = verify_plan(inst, recosted(inst, plan, training_groups=plan.training_groups - 1))
        assert violated(check, "update_time"), check.violations
        tested += 1
    assert tested, "no bundled plan has a binding update time"


def test_cadence_off_grid(solved):
    for name, inst, result in _feasible(solved):
        plan = result.plan
        step = inst.schedule.cadence.step
        check = verify_plan(inst, recosted(inst, plan, cadence_s=plan.cadence_s - step / 2))
        assert violated(check, "not on the grid"), (name, check.violations)


def test_wrong_costs(solved):
    for name, inst, result in _feasible(solved):
        plan = result.plan
        check = verify_plan(inst, plan.model_copy(update={"total_cost": plan.total_cost * (1 + 1e-4)}))
        assert violated(check, "total_cost"), (name, check.violations)
        check = verify_plan(inst, plan.model_copy(update={"hourly_cost": plan.hourly_cost + 1.0}))
        assert violated(check, "hourly_cost"), (name, check.violations)


def test_cloud_placement_above_eligible_share():
    # tests/test_known_optima.py: steady 2, peak 3 = 2 on nodes + 1 on a VM, eligible share 0.5 (≤ 1.5).
    inst = validate(cloud_instance(0.5), "hand.yaml")
    result = solve_instance(inst)
    plan = result.plan
    assert verify_plan(inst, plan).ok
    # Move one more environment from the nodes to a second VM: 2 on VMs > 0.5·3, though every VM and
    # node row still holds (2 VMs hold 2, 1 node-environment on 2 nodes).
    placement = Placement(steady=plan.placement.steady, peak={"std": {"ctr": 1.0}}, cloud={"burst": {"ctr": 2.0}})
    bad = recosted(inst, plan, placement=placement, cloud_vms=[Count(type="burst", count=2)])
    check = verify_plan(inst, bad)
    assert violated(check, "cloud_eligible[ctr]"), check.violations
    assert not violated(check, "cloud_vms[burst]")


def two_backend_instance() -> dict:
    # Grid {25}: E = 2 environments, half 'ctr', half 'gpuvm'. Node 'both' runs both (1 each, 2 $/h);
    # node 'ctronly' runs only 'ctr' (4 per node, 1 $/h).
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["environment"]["backends"] = [{"name": "ctr", "share": 0.5}, {"name": "gpuvm", "share": 0.5}]
    data["environment"]["node_types"] = [
        {"name": "both", "density": {"ctr": 1, "gpuvm": 1}, "hour_cost": 2.0},
        {"name": "ctronly", "density": {"ctr": 4}, "hour_cost": 1.0},
    ]
    return data


def test_placement_on_a_node_without_the_backend_density():
    inst = validate(two_backend_instance(), "hand.yaml")
    result = solve_instance(inst)
    assert result.status == "optimal"
    plan = result.plan
    assert verify_plan(inst, plan).ok
    # Optimal: 'ctr' (1 env) on one 'ctronly' node (1 $/h), 'gpuvm' (1 env) on one 'both' node (2 $/h).
    assert {n.type: n.count for n in plan.local_nodes} == {"both": 1, "ctronly": 1}
    # Put the 'gpuvm' environment on the 'ctronly' node, which has no density for it.
    moved = {"both": {"ctr": 0.0, "gpuvm": 0.0}, "ctronly": {"ctr": 1.0, "gpuvm": 1.0}}
    bad = recosted(inst, plan, placement=Placement(steady=moved, peak=moved, cloud={}))
    check = verify_plan(inst, bad)
    assert violated(check, "cannot run"), check.violations
    assert any("ctronly" in v and "gpuvm" in v for v in check.violations)


def test_verifier_rejects_counts_out_of_domain(solved):
    inst, result = solved["seed-week-75.yaml"]
    plan = result.plan
    assert violated(verify_plan(inst, plan.model_copy(update={"versions_kept": 0})), "versions_kept")
    assert violated(verify_plan(inst, plan.model_copy(update={"versions_kept": 11})), "versions_kept")
    vms = [Count(type="burst", count=201)]
    assert violated(verify_plan(inst, recosted(inst, plan, cloud_vms=vms)), "cloud_vms[burst]")
    long = recosted(inst, plan, cadence_s=605.0)  # on the 1 s grid, but 1000·605 s > 7 d = 604,800 s
    check = verify_plan(inst, long)
    assert violated(check, "deadline") or violated(check, "not on the grid"), check.violations


# --- time limits ------------------------------------------------------------------------------


def hard_instance() -> dict:
    """The seed baseline made harder: 3 shapes with slowdowns in 2 pools (every K a candidate), 2 backends
    on 3 node types and 2 VM types, a utilisation cap and a peak, a 0.5 s cadence grid (600+ points)."""
    d = read_document(SEED)
    d["name"] = "seed-hard"
    d["schedule"]["cadence"] = {"min": "300s", "step": "0.5s"}
    d["gpu_pools"] = [
        {"name": "main", "gpus": 10000, "gpu_hour_cost": 2.0},
        {"name": "old", "gpus": 3000, "gpu_hour_cost": 1.1},
    ]
    d["inference"]["shapes"] = [
        {"name": "tp8", "pool": "main", "gpus_per_replica": 8, "tokens_per_gpu_s": 75, "version_slowdown": 0.01},
        {"name": "tp4", "pool": "main", "gpus_per_replica": 4, "tokens_per_gpu_s": 61, "version_slowdown": 0.02},
        {"name": "old8", "pool": "old", "gpus_per_replica": 8, "tokens_per_gpu_s": 40, "version_slowdown": 0.005},
    ]
    env = d["environment"]
    env["backends"] = [
        {"name": "container", "share": 0.7, "cores": 0.05, "memory_gb": 0.5},
        {"name": "microvm", "share": 0.3, "cores": 0.5, "memory_gb": 2.0},
    ]
    env["node_types"] = [
        {
            "name": "standard",
            "cores": 188,
            "memory_gb": 1560,
            "density": {"container": 1048, "microvm": 120},
            "hour_cost": 12.0,
        },
        {"name": "dense", "cores": 384, "memory_gb": 3000, "density": {"container": 3200}, "hour_cost": 30.0},
        {
            "name": "small",
            "cores": 64,
            "memory_gb": 512,
            "density": {"container": 300, "microvm": 50},
            "hour_cost": 4.1,
        },
    ]
    env["peak_to_mean"] = 1.4
    env["utilisation_cap"] = 0.85
    env["cloud"] = {
        "eligible_share": {"container": 0.6, "microvm": 0.3},
        "vm_types": [
            {
                "name": "burst",
                "density": {"container": 64, "microvm": 8},
                "cores": 16,
                "memory_gb": 64,
                "hour_cost": 1.0,
                "billed_fraction": 0.2,
                "max_vms": 400,
            },
            {
                "name": "big",
                "density": {"container": 256, "microvm": 30},
                "cores": 64,
                "memory_gb": 256,
                "hour_cost": 3.7,
                "billed_fraction": 0.3,
                "max_vms": 100,
            },
        ],
    }
    return d


@pytest.fixture(scope="module")
def hard():
    inst = validate(hard_instance(), "seed-hard.yaml")
    optimum = {objective: solve_instance(inst, objective) for objective in ("total_cost", "hourly_cost", "makespan")}
    return inst, optimum


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_hard_instance_plan_passes(hard, objective):
    inst, optimum = hard
    result = optimum[objective]
    assert result.status == "optimal"
    check = verify_plan(inst, result.plan)
    assert check.ok, check.violations
    assert check.binding == result.binding


LIMITS = (1e-4, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5)


def check_time_limited(inst, result, best=None) -> None:
    assert result.status in ("optimal", "time_limit"), (result.status, result.message)
    if result.status == "optimal":
        assert result.mip_gap == 0.0
        if best is not None:
            assert result.objective_value == pytest.approx(best.objective_value, rel=1e-9)
    if result.plan is None:
        assert result.status == "time_limit" and result.message
        return
    check = verify_plan(inst, result.plan)
    assert check.ok, check.violations
    assert isinstance(result.mip_gap, float) and math.isfinite(result.mip_gap) and result.mip_gap >= 0
    if best is not None:
        # An incumbent never beats the optimum, and its gap is a valid bound on how far it is from it.
        value = result.objective_value
        assert value >= best.objective_value * (1 - 1e-9)
        assert value * (1 - result.mip_gap) <= best.objective_value * (1 + 1e-9)


@pytest.mark.parametrize("name", ["seed-2week-60.yaml", "seed-week-75.yaml"])
def test_tiny_time_limits_never_crash(name):
    inst = load_instance(next(p for p in INSTANCES if p.name == name))
    for limit in LIMITS:
        check_time_limited(inst, solve_instance(inst, time_limit=limit))


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_tiny_time_limits_on_a_harder_instance(hard, objective):
    inst, optimum = hard
    for limit in LIMITS:
        result = solve_instance(inst, objective, time_limit=limit)
        check_time_limited(inst, result, optimum[objective])


def test_cli_tiny_time_limit_exit_code(tmp_path):
    path = tmp_path / "seed-hard.yaml"
    path.write_text(yaml.safe_dump(hard_instance(), sort_keys=False))
    for limit in ("0.001", "0.05", "0.3"):
        res = CliRunner().invoke(main, ["solve", str(path), "--json", "--time-limit", limit], catch_exceptions=False)
        assert res.exit_code in (0, 4), (limit, res.exit_code, res.output)
        out = json.loads(res.stdout)
        assert out["status"] == {0: "optimal", 4: "time_limit"}[res.exit_code]
        if out["plan"] is not None:
            assert isinstance(out["mip_gap"], float) and out["mip_gap"] >= 0


def test_the_time_limit_covers_building():
    """A limit spent before HiGHS starts (here, by the pair table and bounds of a 2,000-point grid) ends the
    solve as time_limit with no plan, instead of running on."""
    from trainground.solver.stopwatch import Stopwatch

    inst = load_instance(Path(__file__).resolve().parents[1] / "instances" / "large-three-pools.yaml")
    result = solve_instance(inst, clock=Stopwatch(1e-6))
    assert result.status == "time_limit" and result.plan is None
    assert result.message == "time limit reached before any plan was found"
    assert result.timings.highs == 0.0  # HiGHS never ran


@pytest.mark.parametrize(
    ("median", "p99", "cadence", "kept"),
    [(1044, 13900, 604, 10), (1044, 13900, 604, 1), (30, 60, 20, 5), (5, 400, 1, 40), (1044, 1100, 600, 3)],
)
def test_the_verifiers_quadrature_meets_the_closed_form(median, p99, cadence, kept):
    """The verifier's exceedance (its own adaptive Gauss-Legendre integral of the survival function) equals
    the closed form ∫_K^{K+1} S(vL) dv = (E[(W-KL)+] - E[(W-(K+1)L)+])/L, written here from the lognormal's
    partial expectation E[(W-t)+] = mean·Q(d1) - t·Q(d2), to 1e-10 relative, far tails included."""
    from trainground.solver.verify import laws as verify_laws

    law = verify_laws.lognormal_law(math.log(median), math.log(p99 / median) / verify_laws.Z99)
    Q = lambda z: 0.5 * math.erfc(z / math.sqrt(2))
    mu, s = law.mu, law.sigma

    def excess(t):
        return law.mean * Q((math.log(t) - mu - s * s) / s) - t * Q((math.log(t) - mu) / s)

    closed = (excess(kept * cadence) - excess((kept + 1) * cadence)) / cadence
    mine = verify_laws.exceedance(law, cadence, kept)
    assert law.survival((kept + 1) * cadence) <= mine <= law.survival(kept * cadence)  # the integrand's ends
    assert mine == pytest.approx(closed, rel=1e-10)


def test_the_verifiers_remembered_integrals_are_keyed_by_the_whole_law():
    """A memo shared by laws of one median and different spreads (as a planner's is across a sweep) gives each
    law the value its own integral gives afresh, one entry per law and question, and is read on the second ask."""
    from trainground.solver.verify import hold as verify_hold
    from trainground.solver.verify import laws as verify_laws

    memo = verify_laws.Memo()
    spreads = (13900, 3000)
    for p99 in spreads + spreads:
        fresh = verify_laws.lognormal_law(math.log(1044), math.log(p99 / 1044) / verify_laws.Z99)
        kept = dataclasses.replace(fresh, memo=memo)
        assert verify_laws.exceedance(kept, 604, 10) == verify_laws.exceedance(fresh, 604, 10)
        assert verify_laws.fill_time(kept, 400.0, 8) == verify_laws.fill_time(fresh, 400.0, 8)
        assert verify_hold._gap_tail(kept, 604, 3, 8) == verify_hold._gap_tail(fresh, 604, 3, 8)
        assert verify_hold.min_of_two_mean(kept) == verify_hold.min_of_two_mean(fresh)
    assert len(memo.values) == 4 * len(spreads)
    key = next(k for k in memo.values if k[0] == "exceedance")
    memo.values[key] = -1.0  # a planted value is what a second ask returns
    planted = verify_laws.lognormal_law(key[1], key[2])
    assert verify_laws.exceedance(dataclasses.replace(planted, memo=memo), *key[3:]) == -1.0
