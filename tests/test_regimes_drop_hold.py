"""An async drop run with regime fields set (MODEL.md §14) with its start-up counted (§8: ``schedule.count_startup``)
and on the hold basis (§11): the MIP against the brute force of tests/regimes_reference.py, the fill, E^hold and the
consumed-gap rows against closed forms where every lifetime is the same, and the verifier (solver/verify/drop.py)
refusing a plan whose start-up, makespan or sandboxes are off. The allowance loop's replay is not exercised here:
these are the MIP's rows (Planner solves at Δ = 0)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, special, stats

from tests.regimes_reference import drop_points
from tests.strategies import examples
from tests.test_regimes_bruteforce import VALUE, agreed, random_drop
from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.models.edits import edited
from trainground.models.load import load_instance, validate
from trainground.models.result import Count
from trainground.solver.regimes.table import pair_table
from trainground.solver.solve import Planner
from trainground.solver.verify.plan import verify_plan

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"


def counted(seed: int, basis: str) -> dict:
    """A random async drop run (tests/test_regimes_bruteforce.py) on ``basis``; on steady_state with count_startup."""
    data = random_drop(seed)
    data["planning"] = {"basis": basis}
    if basis == "steady_state":
        data["schedule"]["count_startup"] = True
    else:  # a synced run is planned on steady_state only (models/regime_rules.py): its replay ignores the cap
        data["regime"].pop("max_concurrent_attempts", None)
    return data


@pytest.mark.parametrize("basis", ["hold", "steady_state"])
def test_an_async_drop_run_with_its_start_up_counted_matches_brute_force(basis):
    """Every objective; with U(m) in T the tables hold several group counts at a (cadence, K)."""
    seen: set[str] = set()
    several = 0
    for seed in range(examples(8)):
        inst = validate(counted(seed, basis), "random.yaml")
        seen |= agreed(inst, drop_points(inst), seed)
        pairs = Planner(inst).pairs
        several += int(len(set(zip(pairs.cadence.tolist(), pairs.kept.tolist()))) < pairs.size)
    assert seen == set(VALUE)  # every objective, with plans
    assert several >= 2


TAU, LIFETIME = 30.0, 40.0  # every lifetime ends at the timeout: W_τ = 30 s


def fixed(**fields) -> dict:
    """Lifetimes all 40 s cut at 30 s (so W_τ = 30 s exactly), two backends of share 1/2, groups of 2, on hold."""
    data = random_drop(0)
    data.update(
        name="fixed",
        planning={"basis": "hold", "sandbox_wait": 0.05},
        regime={"mode": "async", "in_flight_updates": True, "rollout_timeout": TAU},
    )
    data["workload"].update(batch_trajectories=8, group_size=2, intake_rate=1.0, iterations=10)
    data["schedule"].update(deadline=2000.0, extra_time=3.0, cadence={"min": 10.0, "max": 40.0, "step": 5.0})
    data["inference"]["shapes"] = [{"name": "s0", "pool": "main", "gpus_per_replica": 1, "tokens_per_gpu_s": 3.0}]
    data["inference"]["availability"] = 1.0
    data["gpu_pools"] = [{"name": "main", "gpus": 12, "gpu_hour_cost": 1.0}]
    data["training"]["update_time"] = {"law": "inverse", "reference_gpus": 4, "reference_time": 10.0}
    env = data["environment"]
    env["occupancy"] = {"distribution": "empirical", "samples": [LIFETIME] * 4}
    env["backends"] = [{"name": "a", "share": 0.5}, {"name": "b", "share": 0.5}]
    env["node_types"] = [{"name": "n", "density": {"a": 2.0, "b": 2.0}, "hour_cost": 0.7, "max_nodes": 40}]
    env["peak_to_mean"] = 1.0
    data["freshness"] = {"max_versions_kept": 3, "overrun_policy": "drop", "group_correlation": "independent"}
    data.update(fields)
    return data


def test_the_fill_and_hold_rows_of_equal_lifetimes_are_their_closed_forms():
    """W_τ = τ for every attempt: q(L, K) = clip(τ/L - K, 0, 1), the group drop 1 - (1 - q)², the fill τ + L·(1 - drop)
    (nothing completes before τ, then the integral grows at rate 1 up to B/(p·R_raw) = L·(1 - drop)), T = fill +
    (n-1)·L + U(m) + extra_time; E[min(W_τ, W'_τ)] = τ, so V_b = R·s(τ - s·τ) and E^hold_b = R·s·τ + β·sqrt(R·τ/4)
    for s = 1/2; the consumed gap floor(u + τ/L) given it is at most K."""
    inst = validate(fixed(), "fixed.yaml")
    planner = Planner(inst)
    pairs = planner.pairs
    assert pairs.size > 0
    L, K = pairs.cadence, pairs.kept
    q = np.clip(TAU / L - K, 0.0, 1.0)
    drop = 1.0 - (1.0 - q) ** 2
    rate = 8.0 / (L * (1.0 - drop))
    np.testing.assert_allclose(pairs.exceedance, q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(pairs.startup, TAU + L * (1.0 - drop), rtol=1e-12)
    update = 10.0 * 4 / (pairs.groups * 2)
    np.testing.assert_allclose(pairs.makespan, pairs.startup + 9 * L + update + 3.0, rtol=1e-12)
    assert np.all(pairs.resident == 1)
    beta = optimize.brentq(lambda b: 1 / (1 + b * special.ndtr(b) / stats.norm.pdf(b)) - 0.05, 1e-9, 10.0, xtol=1e-14)
    held = rate * 0.5 * TAU + beta * np.sqrt(rate * 0.5 * (TAU - 0.5 * TAU))
    np.testing.assert_allclose(pairs.inflight, np.stack([held, held], axis=1), rtol=1e-9)
    result = planner.solve("total_cost")
    assert result.status == "optimal"
    plan, metrics = result.plan, result.metrics
    ratio = TAU / plan.cadence_s
    low = math.floor(ratio)  # G = low with probability 1 - frac, low + 1 with frac
    frac = ratio - low
    mass = {low: 1.0 - frac, low + 1: frac}
    kept = {g: p for g, p in mass.items() if g <= plan.age_limit and p > 0}
    expected = sum(g * p for g, p in kept.items()) / sum(kept.values())
    assert metrics.consumed_mean_gap == pytest.approx(expected, rel=1e-9)
    assert metrics.mean_version_gap == metrics.consumed_mean_gap  # on hold the outputs are the consumed gap's
    assert metrics.inflight_mean == pytest.approx(float(8.0 / (plan.cadence_s * metrics.effective_intake)) * TAU)


def test_a_mean_gap_limit_on_hold_reads_the_consumed_gap():
    """τ/L = 1.2 at 25 s: the consumed mean is 1 at K = 1 (G = 2 dropped) and 1.2 at K = 2; a limit of 1.1 keeps
    K = 1 alone at that cadence (the per-trajectory W_use/L = 1.2 would cut both on steady_state)."""
    data = fixed()
    data["freshness"]["max_mean_gap"] = 1.1
    data["schedule"]["cadence"] = {"min": 25.0, "max": 25.0, "step": 5.0}
    pairs = pair_table(validate(data, "fixed.yaml"))
    assert pairs.size > 0 and set(pairs.kept.tolist()) == {1}
    assert pairs.rejected["max_mean_gap"] == 2  # K = 2 and 3
    data["planning"] = {"basis": "steady_state"}
    steady = pair_table(validate(data, "fixed.yaml"))
    assert steady.size == 0 and steady.rejected["max_mean_gap"] == 3


def test_the_verifier_refuses_a_drop_plan_whose_start_up_or_sandboxes_are_off():
    inst = validate(fixed(), "fixed.yaml")
    result = Planner(inst).solve("total_cost")
    plan, metrics = result.plan, result.metrics
    assert verify_plan(inst, plan, reported=metrics).ok
    early = plan.model_copy(update={"startup_s": plan.startup_s - 1.0, "makespan_s": plan.makespan_s - 1.0})
    found = verify_plan(inst, early).violations
    assert any(v.startswith("startup_s") for v in found) and any(v.startswith("makespan_s") for v in found)
    # E^hold (18.03 environments at 0.4 attempts/s, against a mean of 12) takes 10 nodes of 2 sandboxes, one node
    # fewer holds 18 alone
    assert metrics.inflight_sized > metrics.inflight_mean
    assert plan.local_nodes[0].count == math.ceil(metrics.inflight_sized / 2.0)
    fewer = [Count(type=n.type, count=n.count - 1) for n in plan.local_nodes]
    found = verify_plan(inst, plan.model_copy(update={"local_nodes": fewer})).violations
    assert any(v.startswith("steady_nodes[n]") for v in found)
    steady = validate(fixed(planning={"basis": "steady_state"}), "fixed.yaml")
    # the same plan read on steady_state without count_startup: T is n·L + extra_time, no start-up
    assert any(v.startswith("makespan_s") for v in verify_plan(steady, plan).violations)


@pytest.mark.parametrize("fields", [{"planning.basis": "hold"}, {"schedule.count_startup": True}])
def test_a_weight_sync_of_zero_plans_the_seed_week_as_the_seeds_own_table(fields):
    """The seed week (§8's start-up counted, and on hold §11's E^hold and consumed gap too) planned by the seed's table
    (solver/table/pairs.py) and as an async drop run whose only regime field is a weight sync of 0 s
    (solver/regimes/drop.py): two readings of the same rows, the same plan and figures."""
    base = edited(load_instance(SEED), {"planning.basis": "steady_state", **fields})
    own = Planner(base).solve("total_cost")
    synced = Planner(edited(base, {"regime": {"mode": "async", "weight_sync_time": "0s"}})).solve("total_cost")
    assert own.status == synced.status == "optimal"
    a, b = own.plan, synced.plan
    assert (a.cadence_s, a.versions_kept, a.training_groups) == (b.cadence_s, b.versions_kept, b.training_groups)
    assert a.startup_s is not None and b.startup_s == pytest.approx(a.startup_s, rel=1e-9)
    assert (a.makespan_s, a.local_nodes) == (pytest.approx(b.makespan_s, rel=1e-12), b.local_nodes)
    assert b.total_cost == pytest.approx(a.total_cost, rel=1e-12)
    for key in ("mean_version_gap", "p99_version_gap", "inflight_mean", "inflight_peak", "time_margin", "exceedance"):
        assert getattr(synced.metrics, key) == pytest.approx(getattr(own.metrics, key), rel=1e-9), key
    if own.metrics.inflight_sized is None:  # steady_state: rows 5 at E_b
        assert synced.metrics.inflight_sized is None
    else:
        assert synced.metrics.inflight_sized == pytest.approx(own.metrics.inflight_sized, rel=1e-9)


def test_the_diagnosis_counts_cadence_k_entries_where_each_has_a_row_per_group_count():
    data = fixed()
    data["environment"]["node_types"][0]["max_nodes"] = 2
    inst = validate(data, "fixed.yaml")
    pairs = pair_table(inst)
    entries = {key[:2] for key in pairs.keys()}
    assert pairs.size > len(entries) > 0  # several group counts at some (cadence, K)
    result = diagnosed(inst, Planner(inst).solve("total_cost"))
    assert result.status == "infeasible"
    assert f"{len(entries)} (cadence, K) entries meet its rows" in result.diagnosis["conflict"]


def test_the_printed_plan_shows_the_consumed_gap_once_on_hold_and_beside_the_version_gap_on_steady_state():
    from rich.console import Console

    from trainground.render.tables import render_result

    def printed(data: dict) -> str:
        console = Console(record=True, width=140)
        render_result(console, Planner(validate(data, "fixed.yaml")).solve("total_cost"))
        return console.export_text()

    held = printed(fixed())
    assert held.count("consumed gap (mean / p99)") == 1 and "version gap" not in held
    steady = printed(fixed(planning={"basis": "steady_state", "sandbox_wait": 0.05}))
    assert steady.count("consumed gap (mean / p99)") == 1 and "version gap (mean / p99)" in steady
