"""Hand-solvable instances whose optimum is derived on paper (MODEL.md §2–§4), and the `solve` CLI contract (§6).

Every instance is a variant of ``base()``, chosen so that each quantity is a short sum:

- ``n = 144`` iterations, so the makespan is ``T = 144·L`` s and ``T/3600 = 0.04·L`` hours
  (L = 15 → 0.6 h, L = 20 → 0.8 h, L = 25 → 1 h);
- ``B = 5`` trajectories of 10 tokens, intake 1 and ``overrun_policy: downweight`` (no drop),
  so attempts ``R_raw = 5/L`` per s and token demand ``50/L`` tokens/s;
- one shape of 1 GPU at 1 token/s, so replicas ``x = ceil(50/L)``;
- training at 1 GPU per group with the inverse law ``U(m) = 50/m`` s, so ``m = ceil(50/L)``;
- occupancy of exactly 10 s (empirical samples [10, 10]), so ``E = R_raw·10 = 50/L``
  environments, on nodes holding 1 each: ``N = ceil(50/L)``;
- GPUs cost 1 $/h, a node 2 $/h; ``max_versions_kept: 1`` so K is fixed where it is not the point.

Cadence grid: min 15 s, step 5 s, max = deadline pace = 3600/144 = 25 s → {15, 20, 25}.

    L    x  m  N   hourly = (x+m)·1 + 2·N    T (h)   total
    15   4  4  4   8 + 8 = 16                 0.6     9.6
    20   3  3  3   6 + 6 = 12                 0.8     9.6
    25   2  2  2   4 + 4 =  8                 1.0     8.0
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from click.testing import CliRunner

from tests.plans import decisions
from trainground.cli import main
from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.models.load import validate
from trainground.solver.solve import solve_instance


def base() -> dict:
    return {
        "schema_version": 1,
        "name": "hand",
        "workload": {
            "iterations": 144,
            "batch_trajectories": 5,
            "group_size": 1,
            "tokens_per_attempt": 10,
            "intake_rate": 1.0,
        },
        "schedule": {"deadline": 3600, "extra_time": 0, "cadence": {"min": 15, "step": 5}},
        "gpu_pools": [{"name": "main", "gpus": 16, "gpu_hour_cost": 1.0}],
        "inference": {
            "availability": 1.0,
            "shapes": [{"name": "s1", "pool": "main", "gpus_per_replica": 1, "tokens_per_gpu_s": 1.0}],
        },
        "training": {
            "pool": "main",
            "gpus_per_group": 1,
            "update_time": {"law": "inverse", "reference_gpus": 1, "reference_time": 50},
        },
        "environment": {
            "occupancy": {"distribution": "empirical", "samples": [10, 10]},
            "littles_law_uses": "mean",
            "backends": [{"name": "ctr", "share": 1.0}],
            "node_types": [{"name": "std", "density": {"ctr": 1}, "hour_cost": 2.0}],
            "utilisation_cap": 1.0,
            "peak_to_mean": 1.0,
        },
        "freshness": {"max_versions_kept": 1, "overrun_policy": "downweight"},
        "objective": "total_cost",
    }


def solve(data: dict, objective: str | None = None):
    return solve_instance(validate(copy.deepcopy(data), "hand.yaml"), objective)


def assert_plan(result, *, cadence, K, replicas, groups, nodes, vms=None, hourly, total):
    assert result.status == "optimal", (result.status, result.message)
    want = {"cadence": cadence, "K": K, "replicas": replicas, "groups": groups, "nodes": nodes, "vms": vms or {}}
    assert decisions(result) == want
    assert result.plan.hourly_cost == pytest.approx(hourly, rel=1e-9)
    assert result.plan.total_cost == pytest.approx(total, rel=1e-9)
    assert result.plan.makespan_s == pytest.approx(144 * cadence, rel=1e-12)
    value = {
        "total_cost": result.plan.total_cost,
        "hourly_cost": result.plan.hourly_cost,
        "makespan": result.plan.makespan_s,
    }[result.objective]
    assert result.objective_value == pytest.approx(value, rel=1e-12)


# --- total_cost -------------------------------------------------------------------------------


def test_total_cost_cheapest_at_longest_cadence():
    # Table in the module docstring: totals 9.6, 9.6, 8.0 → L = 25 s, x = 2, m = 2, N = 2,
    # hourly (2+2)·1 + 2·2 = 8 $/h over 1 h = 8 $. Update time binds: U(2) = 50/2 = 25 s = L.
    result = solve(base(), "total_cost")
    assert_plan(result, cadence=25.0, K=1, replicas={"s1": 2}, groups=2, nodes={"std": 2}, hourly=8.0, total=8.0)
    assert result.objective_value == pytest.approx(8.0, rel=1e-9)
    assert "update_time" in result.binding and "throughput" in result.binding


def test_total_cost_tie_breaks_on_makespan():
    # Grid cut to {15, 20} (cadence.max 20): totals 16·0.6 = 9.6 and 12·0.8 = 9.6 tie, so the
    # shorter makespan wins (MODEL §4: total_cost → makespan): L = 15, x = m = N = 4, 16 $/h.
    data = base()
    data["schedule"]["cadence"]["max"] = 20
    result = solve(data, "total_cost")
    assert_plan(result, cadence=15.0, K=1, replicas={"s1": 4}, groups=4, nodes={"std": 4}, hourly=16.0, total=9.6)


# --- hourly_cost ------------------------------------------------------------------------------


def test_hourly_cost_picks_lowest_rate():
    # Hourly 16, 12, 8 → L = 25 s at 8 $/h (total 8 $).
    result = solve(base(), "hourly_cost")
    assert_plan(result, cadence=25.0, K=1, replicas={"s1": 2}, groups=2, nodes={"std": 2}, hourly=8.0, total=8.0)
    assert result.objective_value == pytest.approx(8.0, rel=1e-9)


def test_hourly_cost_tie_breaks_on_makespan():
    # B = 4 (demand 40/L tokens/s, E = 40/L), U(m) = 20/m, grid {20, 25} (min 20):
    #   L = 20: x = ceil(2) = 2, m = ceil(1) = 1, N = ceil(2) = 2   → 2 + 1 + 4 = 7 $/h, T = 0.8 h
    #   L = 25: x = ceil(1.6) = 2, m = 1 (U(1) = 20 <= 25), N = ceil(1.6) = 2 → 7 $/h, T = 1 h
    # Hourly ties at 7; the tie-break (hourly_cost → makespan) takes L = 20, total 7·0.8 = 5.6 $.
    data = base()
    data["workload"]["batch_trajectories"] = 4
    data["training"]["update_time"]["reference_time"] = 20
    data["schedule"]["cadence"]["min"] = 20
    result = solve(data, "hourly_cost")
    assert_plan(result, cadence=20.0, K=1, replicas={"s1": 2}, groups=1, nodes={"std": 2}, hourly=7.0, total=5.6)


# --- makespan ---------------------------------------------------------------------------------


def test_makespan_picks_shortest_cadence():
    # L = 15 is feasible (8 of 16 GPUs) → makespan 144·15 = 2160 s; the cheapest plan there is the
    # minimum x = m = N = 4: 16 $/h, total 9.6 $.
    result = solve(base(), "makespan")
    assert_plan(result, cadence=15.0, K=1, replicas={"s1": 4}, groups=4, nodes={"std": 4}, hourly=16.0, total=9.6)
    assert result.objective_value == pytest.approx(2160.0, rel=1e-12)


def test_makespan_shortest_feasible_then_cheapest_plan_there():
    # Pool of 7 GPUs: L = 15 needs x + m = 8 > 7, infeasible. L = 20 is the shortest feasible
    # (x = m = 3, 6 GPUs; a 4th replica would still fit, but costs more).
    # A second node type 'premium' holds 3 environments for 5 $/h. At L = 20, E = 2.5:
    #   3 std = 6 $/h;  1 premium = 5 $/h;  1 premium + anything more > 5.  → 1 premium.
    # Hourly 6·1 + 5 = 11 $/h, T = 2880 s = 0.8 h → total 8.8 $.
    data = base()
    data["gpu_pools"][0]["gpus"] = 7
    data["environment"]["node_types"].append({"name": "premium", "density": {"ctr": 3}, "hour_cost": 5.0})
    result = solve(data, "makespan")
    assert_plan(
        result, cadence=20.0, K=1, replicas={"s1": 3}, groups=3, nodes={"std": 0, "premium": 1}, hourly=11.0, total=8.8
    )
    assert result.objective_value == pytest.approx(2880.0, rel=1e-12)


@pytest.mark.parametrize(
    "budget, cadence, count, hourly, total",
    [
        # 13 $/h excludes L = 15 (16 $/h); L = 20 costs 12 $/h → makespan 2880 s, total 9.6 $.
        (13.0, 20.0, 3, 12.0, 9.6),
        # 10 $/h also excludes L = 20 (12 $/h); only L = 25 (8 $/h) is left → total 8 $.
        (10.0, 25.0, 2, 8.0, 8.0),
    ],
)
def test_hourly_budget_forces_slower_cadence(budget, cadence, count, hourly, total):
    data = base()
    data["limits"] = {"max_hourly_cost": budget}
    result = solve(data, "makespan")
    assert_plan(
        result,
        cadence=cadence,
        K=1,
        replicas={"s1": count},
        groups=count,
        nodes={"std": count},
        hourly=hourly,
        total=total,
    )
    assert result.plan.hourly_cost <= budget


# --- sandboxes: cloud VMs absorbing a peak -----------------------------------------------------


def cloud_instance(eligible: float) -> dict:
    # Grid {25} only (min 25 = deadline pace): x = m = 2 (4 GPU $/h), steady E = 2, peak 1.5·2 = 3.
    # VM 'burst': 1 environment, 1 $/h billed at 0.5 → 0.5 $/h; node 'std': 1 environment, 2 $/h.
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["environment"]["peak_to_mean"] = 1.5
    data["environment"]["cloud"] = {
        "eligible_share": {"ctr": eligible},
        "vm_types": [{"name": "burst", "density": {"ctr": 1}, "hour_cost": 1.0, "billed_fraction": 0.5, "max_vms": 5}],
    }
    return data


def test_cloud_vm_absorbs_peak_cheaper_than_a_node():
    # Steady 2 must stay local → N >= 2. The peak 3 needs one more environment: a third node
    # (+2 $/h) or one VM (+0.5 $/h), allowed since 1 <= 0.5·3 = 1.5 eligible.
    # Hourly 4 + 2·2 + 0.5 = 8.5 $/h over 1 h → 8.5 $.
    result = solve(cloud_instance(0.5), "total_cost")
    assert_plan(
        result,
        cadence=25.0,
        K=1,
        replicas={"s1": 2},
        groups=2,
        nodes={"std": 2},
        vms={"burst": 1},
        hourly=8.5,
        total=8.5,
    )
    cloud = sum(load.get("ctr", 0.0) for load in result.plan.placement.cloud.values())
    assert 1.0 - 1e-7 <= cloud <= 1.5 + 1e-7


def test_cloud_eligible_share_too_small_for_a_vm_to_help():
    # Eligible share 0.2: at most 0.2·3 = 0.6 environments on VMs, so local nodes must hold 2.4 at
    # peak → N = 3 either way, and a VM would only add cost: 4 + 3·2 = 10 $/h, no VM.
    result = solve(cloud_instance(0.2), "total_cost")
    assert_plan(
        result,
        cadence=25.0,
        K=1,
        replicas={"s1": 2},
        groups=2,
        nodes={"std": 3},
        vms={"burst": 0},
        hourly=10.0,
        total=10.0,
    )


# --- two shapes in two pools ----------------------------------------------------------------


def test_cheaper_per_token_shape_fills_its_pool_first():
    # Grid {25}; tokens_per_attempt 40 → demand (5/25)·40 = 8 tokens/s.
    #   shape 'b' (listed first) in pool 'slow' (1 $/GPU-h): 2 GPUs × 1 token/s = 2 tokens/s for 2 $/h → 1.00 $/h per token/s
    #   shape 'a' in pool 'fast' (1.5 $/GPU-h, 3 GPUs):   1 GPU × 2 tokens/s = 2 tokens/s for 1.5 $/h → 0.75 $/h per token/s
    # min 1.5·a + 2·b  s.t. 2a + 2b >= 8, a <= 3: every 'a' replaces one 'b' for 0.5 $/h less → a = 3, b = 1.
    # Training (pool 'slow'): m = 2 → 2 $/h. Nodes: E = 2 → 2 std = 4 $/h.
    # Hourly 4.5 + 2 + 2 + 4 = 12.5 $/h over 1 h → 12.5 $.
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["workload"]["tokens_per_attempt"] = 40
    data["gpu_pools"] = [
        {"name": "slow", "gpus": 10, "gpu_hour_cost": 1.0},
        {"name": "fast", "gpus": 3, "gpu_hour_cost": 1.5},
    ]
    data["inference"]["shapes"] = [
        {"name": "b", "pool": "slow", "gpus_per_replica": 2, "tokens_per_gpu_s": 1.0},
        {"name": "a", "pool": "fast", "gpus_per_replica": 1, "tokens_per_gpu_s": 2.0},
    ]
    data["training"]["pool"] = "slow"
    result = solve(data, "total_cost")
    assert_plan(
        result, cadence=25.0, K=1, replicas={"b": 1, "a": 3}, groups=2, nodes={"std": 2}, hourly=12.5, total=12.5
    )
    pools = {p.pool: p.gpus_used for p in result.plan.pools}
    assert pools == {"slow": 4, "fast": 3}
    assert "pool_capacity[fast]" in result.binding


# --- versions kept with a slowdown ----------------------------------------------------------


def test_version_slowdown_makes_a_smaller_k_best():
    # Grid {25}. Occupancy exactly 37.5 s = 1.5·L, so the gap floor(u + 1.5) is 1 or 2:
    #   q(25, K) = ∫_K^{K+1} S(25v) dv = clip(1.5, K, K+1) - K → q(1) = 0.5, q(2) = q(3) = 0.
    # Drop (independent, g = 4): K = 1 → 1 - 0.5^4 = 0.9375; K >= 2 → 0.
    # Slowdown 0.25 per extra version: multiplier 1, 0.75, 0.5 for K = 1, 2, 3.
    # tokens_per_attempt 15:
    #   K = 1: attempts 0.2/0.0625 = 3.2/s → 48 tokens/s → 48 replicas; E = 3.2·37.5 = 120 → 48 nodes
    #          → 48 + 2 + 96 = 146 $/h
    #   K = 2: attempts 0.2/s → 3 tokens/s at 0.75 per replica → 4 replicas; E = 0.2·37.5 = 7.5
    #          at 2.5 per node → 3 nodes → 4 + 2 + 6 = 12 $/h
    #   K = 3: 3 tokens/s at 0.5 per replica → 6 replicas, same nodes → 6 + 2 + 6 = 14 $/h
    # → K = 2 (not max_versions_kept = 3), 12 $/h over 1 h = 12 $.
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["gpu_pools"][0]["gpus"] = 60
    data["workload"]["tokens_per_attempt"] = 15
    data["workload"]["group_size"] = 4
    data["inference"]["shapes"][0]["version_slowdown"] = 0.25
    data["environment"]["occupancy"]["samples"] = [37.5, 37.5]
    data["environment"]["node_types"][0]["density"] = {"ctr": 2.5}
    data["freshness"] = {"max_versions_kept": 3, "overrun_policy": "drop", "group_correlation": "independent"}
    result = solve(data, "total_cost")
    assert_plan(result, cadence=25.0, K=2, replicas={"s1": 4}, groups=2, nodes={"std": 3}, hourly=12.0, total=12.0)
    assert result.metrics.exceedance == pytest.approx(0.0, abs=1e-12)
    assert result.metrics.token_supply_per_s == pytest.approx(3.0, rel=1e-9)


def test_without_slowdown_k_one_loses_to_a_larger_k():
    # Same instance, slowdown 0: K = 2 and K = 3 keep the full 1 token/s per replica → 3 replicas
    # for 3 tokens/s; nodes 3 → 3 + 2 + 6 = 11 $/h (K = 2 and 3 tie; K = 1 still costs 146 $/h).
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["gpu_pools"][0]["gpus"] = 60
    data["workload"]["tokens_per_attempt"] = 15
    data["workload"]["group_size"] = 4
    data["environment"]["occupancy"]["samples"] = [37.5, 37.5]
    data["environment"]["node_types"][0]["density"] = {"ctr": 2.5}
    data["freshness"] = {"max_versions_kept": 3, "overrun_policy": "drop", "group_correlation": "independent"}
    result = solve(data, "total_cost")
    assert result.status == "optimal"
    assert result.plan.versions_kept >= 2
    assert decisions(result)["replicas"] == {"s1": 3}
    assert result.plan.hourly_cost == pytest.approx(11.0, rel=1e-9)


# --- loads a hair above a whole number of replicas or nodes -------------------------------------


def test_demand_just_above_whole_replicas_needs_one_more():
    # Grid {25}, overrun_policy drop with group_size 1, K = 1; occupancy samples [10, 25.0000025]:
    #   q(25, 1) = mean(clip(W/25, 1, 2) - 1) = (0 + 1e-7)/2 = 5e-8 = drop
    #   attempts = 0.2/(1 - 5e-8) = 0.20000001/s → demand 2.0000001 tokens/s > 2 replicas' 2 tokens/s
    #   → x = 3 (the throughput row of MODEL §3.2 has no tolerance beyond 1e-9 relative; the verifier agrees).
    #   m = 2 (U(2) = 25 <= 25); E = 0.20000001 · 17.50000125 = 3.5000004 → N = 4.
    # Hourly 3 + 2 + 4·2 = 13 $/h over 1 h → 13 $.
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["environment"]["occupancy"]["samples"] = [10, 25.0000025]
    data["freshness"] = {"max_versions_kept": 1, "overrun_policy": "drop"}
    result = solve(data, "total_cost")
    assert_plan(result, cadence=25.0, K=1, replicas={"s1": 3}, groups=2, nodes={"std": 4}, hourly=13.0, total=13.0)


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_sandbox_load_just_above_whole_nodes_needs_one_more(objective):
    # Grid {25}, occupancy exactly 10.000005 s: E = 0.2 · 10.000005 = 2.000001 environments on nodes
    # holding 1 each → N = 3 (2 nodes would fall 1e-6 short, 5e-7 relative). x = m = 2.
    # Hourly 2 + 2 + 3·2 = 10 $/h over 1 h → 10 $ (under makespan, the tie-break picks this cheapest plan).
    data = base()
    data["schedule"]["cadence"]["min"] = 25
    data["environment"]["occupancy"]["samples"] = [10.000005, 10.000005]
    result = solve(data, objective)
    assert_plan(result, cadence=25.0, K=1, replicas={"s1": 2}, groups=2, nodes={"std": 3}, hourly=10.0, total=10.0)


# --- infeasible -------------------------------------------------------------------------------


def infeasible_instance() -> dict:
    # Pool of 3 GPUs: even L = 25 needs x + m = 2 + 2 = 4 (L = 15, 20 need 8, 6).
    data = base()
    data["gpu_pools"][0]["gpus"] = 3
    return data


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_infeasible_instance(objective):
    result = solve_instance(validate(infeasible_instance(), "hand.yaml"), objective)
    assert result.status == "infeasible"
    assert result.plan is None and result.objective_value is None


@pytest.mark.parametrize("cloud", [False, True], ids=["no-cloud", "cloud"])
def test_infeasible_instance_is_diagnosed(cloud):
    # The same pool of 3 GPUs, with and without a cloud section: either way infeasible, with a diagnosis.
    data = infeasible_instance()
    if cloud:
        data["environment"]["cloud"] = cloud_instance(0.5)["environment"]["cloud"]
    result = solve(data)
    assert result.status == "infeasible" and result.plan is None
    assert result.diagnosis is None  # solve explains nothing; its callers ask for a diagnosis
    explained = diagnosed(validate(data, "infeasible.yaml"), result)
    assert explained.diagnosis is not None and explained.diagnosis["conflict"]


def test_budget_infeasible():
    # Cheapest plan costs 8 $/h (L = 25); a 7.5 $/h budget leaves nothing.
    data = base()
    data["limits"] = {"max_hourly_cost": 7.5}
    assert solve_instance(validate(data, "hand.yaml")).status == "infeasible"
    data["limits"] = {"max_hourly_cost": 8.0}  # exactly the optimum's rate: feasible
    result = solve(data)
    assert_plan(result, cadence=25.0, K=1, replicas={"s1": 2}, groups=2, nodes={"std": 2}, hourly=8.0, total=8.0)


# --- CLI: exit codes and the JSON contract of MODEL.md §6 ----------------------------------------

PLAN_KEYS = {
    "cadence_s",
    "makespan_s",
    "versions_kept",
    "inference",
    "inference_gpus",
    "training_groups",
    "training_gpus",
    "local_nodes",
    "cloud_vms",
    "hourly_cost",
    "total_cost",
}
METRIC_KEYS = {
    "effective_trajectories_per_s",
    "attempts_per_s",
    "token_demand_per_s",
    "token_supply_per_s",
    "update_time_s",
    "inflight_mean",
    "inflight_peak",
    "occupancy_mean_s",
    "mean_version_gap",
    "p99_version_gap",
    "exceedance",
    "group_drop_rate",
    "effective_intake",
    "time_margin",
}
TOP_KEYS = {"instance", "status", "objective", "objective_value", "plan", "metrics", "binding", "diagnosis"}
TIMING_KEYS = {"load", "build", "solve", "extract", "verify", "highs"}


def write_yaml(path, data) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def run_solve(*args):
    return CliRunner().invoke(main, ["solve", *args], catch_exceptions=False)


def test_cli_optimal_exit_0_and_json_keys(tmp_path):
    path = write_yaml(tmp_path / "hand.yaml", base())
    res = run_solve(path, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert TOP_KEYS <= set(out)
    assert out["status"] == "optimal" and out["instance"] == "hand" and out["objective"] == "total_cost"
    assert out["objective_value"] == pytest.approx(8.0, rel=1e-9)
    assert PLAN_KEYS <= set(out["plan"])
    for item in out["plan"]["inference"]:
        assert {"shape", "replicas", "gpus"} <= set(item)
    for item in out["plan"]["local_nodes"] + out["plan"]["cloud_vms"]:
        assert {"type", "count"} <= set(item)
    assert METRIC_KEYS <= set(out["metrics"])
    assert all(isinstance(out["metrics"][k], (int, float)) for k in METRIC_KEYS)
    assert isinstance(out["binding"], list)
    assert TIMING_KEYS <= set(out["timings"])
    assert all(isinstance(out["timings"][k], (int, float)) and out["timings"][k] >= 0 for k in TIMING_KEYS)
    assert out["plan"]["cadence_s"] == 25.0 and out["plan"]["training_groups"] == 2


def test_cli_objective_override(tmp_path):
    path = write_yaml(tmp_path / "hand.yaml", base())
    res = run_solve(path, "--json", "--objective", "makespan")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["objective"] == "makespan"
    assert out["objective_value"] == pytest.approx(2160.0)


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_cli_occupancy_from_a_csv_solves_like_inline_samples(tmp_path, objective):
    # The hand instance's occupancy read from a CSV file instead of inline samples: same plan.
    (tmp_path / "occupancy.csv").write_text("seconds\n10\n10\n")
    data = base()
    data["environment"]["occupancy"] = {"distribution": "empirical", "csv": "occupancy.csv"}
    res = run_solve(write_yaml(tmp_path / "from-csv.yaml", data), "--json", "--objective", objective)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    inline = solve(base(), objective)
    assert out["status"] == "optimal"
    assert out["objective_value"] == pytest.approx(inline.objective_value, rel=1e-12)
    assert out["plan"]["cadence_s"] == inline.plan.cadence_s


def test_cli_infeasible_exit_3(tmp_path):
    path = write_yaml(tmp_path / "tight.yaml", infeasible_instance())
    res = run_solve(path, "--json")
    assert res.exit_code == 3, res.output
    out = json.loads(res.stdout)
    assert TOP_KEYS <= set(out)
    assert out["status"] == "infeasible" and out["plan"] is None and out["diagnosis"] is not None
    assert run_solve(path).exit_code == 3


def test_cli_invalid_exit_2(tmp_path):
    data = base()
    data["gpu_pools"][0]["gpus"] = -4
    path = write_yaml(tmp_path / "bad.yaml", data)
    res = run_solve(path, "--json")
    assert res.exit_code == 2
    assert "gpu_pools[0].gpus" in res.stderr and "Traceback" not in res.output + res.stderr
    bad_ref = base()
    bad_ref["inference"]["shapes"][0]["pool"] = "nope"
    res = run_solve(write_yaml(tmp_path / "badref.yaml", bad_ref))
    assert res.exit_code == 2
    assert "inference.shapes[0].pool" in res.stderr
    assert run_solve(str(tmp_path / "missing.yaml")).exit_code == 2
