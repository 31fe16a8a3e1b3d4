"""Async drop with regime fields set (MODEL.md §14) on the seed week: in-flight updates keep one version resident and
make K an age limit, a rollout timeout cuts lifetimes and tokens (and, filtered, the intake), re-prefills add the
length-biased demand, a cap bounds the running attempts; the laws over cut lifetimes against independent readings;
the verifier's own reading, the refusals by name, explain, the levers and the diagnosis."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import integrate

from trainground.cli import main
from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.drivers.tradeoffs.levers import steps
from trainground.models.edits import edited
from trainground.models.errors import InstanceError
from trainground.models.load import load_instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws import regimes as rg
from trainground.solver.solve import Planner
from trainground.solver.verify.plan import verify_plan

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
SEED_W = calc.fit_lognormal(median=1044.0, p99=13900.0)  # the seed's occupancy (MODEL §2)
TAU = 3600.0


def seed(regime: dict | None = None, **fields):
    """The seed week on steady_state with ``regime`` (async) and field edits."""
    base = edited(load_instance(SEED), {"planning.basis": "steady_state", **fields})
    return base if regime is None else edited(base, {"regime": {"mode": "async", **regime}})


def solved(inst):
    result = Planner(inst).solve("total_cost")
    assert result.status == "optimal", result.status
    return result


def test_the_exceedance_of_cut_lifetimes_is_the_quadrature_of_their_survival():
    for L, K in ((604.0, 1), (604.0, 4), (604.0, 5), (500.0, 10), (900.0, 3)):
        top = min(K + 1.0, TAU / L)
        expected = integrate.quad(lambda v, L=L: SEED_W.survival(v * L), K, top, epsrel=1e-12)[0] if top > K else 0.0
        assert float(rg.timeout_exceedance(SEED_W, TAU, L, K)) == pytest.approx(expected, rel=1e-9, abs=1e-15)
        assert float(rg.timeout_exceedance(SEED_W, None, L, K)) == float(calc.exceedance(SEED_W, L, K))
    samples = calc.empirical([100.0, 700.0, 1500.0, 4000.0, 9000.0])
    every = np.mean(np.clip(np.minimum(samples.draws(), 2000.0) / 600.0 - 2, 0.0, 1.0))
    assert float(rg.timeout_exceedance(samples, 2000.0, 600.0, 2)) == pytest.approx(every, rel=1e-12)
    assert rg.timeout_p99(SEED_W, TAU) == TAU and rg.timeout_p99(SEED_W, 1e6) == SEED_W.p99


def test_the_consumed_gap_of_cut_lifetimes_agrees_with_monte_carlo():
    """G = floor(u + M_τ/L), M_τ the max of 8 lifetimes cut at τ, given G <= K (drop): seeded draws."""
    inst = seed({"rollout_timeout": TAU})
    L, K = 500.0, 6
    mean, p99 = holding.consumed_gaps(inst, SEED_W, L, K, TAU)
    rng = np.random.default_rng(7)
    lifetimes = np.exp(SEED_W.mu + SEED_W.sigma * rng.standard_normal((400_000, 8)))
    gap = np.floor(rng.random(400_000) + np.minimum(lifetimes.max(axis=1), TAU) / L)
    kept = gap[gap <= K]
    assert mean == pytest.approx(kept.mean(), abs=4 * kept.std() / math.sqrt(kept.size))
    assert p99 == np.quantile(kept, 0.99, method="inverted_cdf")
    assert holding.consumed_gaps(inst, SEED_W, L, K, None) == holding.consumed_gaps(inst, SEED_W, L, K)


def test_in_flight_updates_keep_one_version_and_make_k_an_age_limit():
    slow = {"inference.shapes[0].version_slowdown": 0.02}
    kept = solved(seed({"rollout_timeout": TAU}, **slow))
    moved = solved(seed({"rollout_timeout": TAU, "in_flight_updates": True}, **slow))
    assert kept.plan.versions_kept == kept.plan.age_limit > 1
    assert moved.plan.versions_kept == 1 and moved.plan.age_limit >= kept.plan.age_limit
    # one resident version: the supply has no slowdown, so the same demand takes fewer replicas
    replicas = moved.plan.inference[0].replicas
    assert moved.metrics.token_supply_per_s == pytest.approx(replicas * 8 * 75.0, rel=1e-12)
    assert moved.plan.total_cost < kept.plan.total_cost
    assert moved.metrics.recompute_share == 0.0 and kept.metrics.recompute_share is None


def test_a_timeout_cuts_the_tokens_and_a_filtered_timeout_the_intake():
    keep = solved(seed({"rollout_timeout": TAU}))
    m = keep.metrics
    assert m.token_demand_per_s == pytest.approx(m.attempts_per_s * 32768 * 0.7467, rel=1e-4)  # MODEL §14's scale
    assert round(m.occupancy_mean_s) == 1448
    filtered = solved(seed({"rollout_timeout": TAU, "truncated": "filter"})).metrics
    assert filtered.effective_intake == pytest.approx(0.8670 * (1 - filtered.group_drop_rate), rel=1e-4)
    uncut = solved(seed()).plan
    assert keep.plan.total_cost < uncut.total_cost  # the hour-long cut ends the tail that costs tokens and drops


def test_re_prefills_add_the_length_biased_demand():
    result = solved(seed({"rollout_timeout": TAU, "in_flight_updates": True, "recompute": "prefix"}))
    L, m = result.plan.cadence_s, result.metrics
    ratio = 1448.0 * 0.05 * 0.822 / L  # recompute over R_raw·tokens: mean(W_τ)·prefill_cost·bias/L (MODEL §14)
    assert m.recompute_share == pytest.approx(ratio / (1 + ratio), rel=2e-3)
    assert m.token_demand_per_s == pytest.approx(m.attempts_per_s * 32768 * 0.7467 * (1 + ratio), rel=2e-3)


def test_the_cap_bounds_the_running_attempts_and_names_itself_when_it_leaves_no_plan():
    fastest = Planner(seed({"in_flight_updates": True})).solve("makespan")
    running = fastest.metrics.attempts_per_s * fastest.metrics.occupancy_mean_s
    cap = int(0.9 * running)
    capped = Planner(seed({"in_flight_updates": True, "max_concurrent_attempts": cap})).solve("makespan")
    assert capped.metrics.attempts_per_s * capped.metrics.occupancy_mean_s <= cap * (1 + 1e-9)
    assert capped.plan.makespan_s > fastest.plan.makespan_s  # fewer running attempts: a longer cadence
    tight = seed({"max_concurrent_attempts": 1000})
    result = diagnosed(tight, Planner(tight).solve("total_cost"))
    assert result.status == "infeasible" and "max_concurrent_attempts" in result.diagnosis["conflict"]
    assert "over the cap 1,000" in result.diagnosis["conflict"]


def test_the_verifier_reads_the_age_limit_the_resident_versions_and_the_cap_on_its_own():
    inst = seed({"rollout_timeout": TAU, "in_flight_updates": True})
    result = solved(inst)
    plan = result.plan
    assert verify_plan(inst, plan, 0.0, result.metrics).ok
    resident = verify_plan(inst, plan.model_copy(update={"versions_kept": plan.age_limit}))
    assert any(v.startswith("versions_kept") for v in resident.violations)
    unaged = verify_plan(inst, plan.model_copy(update={"age_limit": None}))
    assert any(v.startswith("age_limit") for v in unaged.violations)
    running = result.metrics.attempts_per_s * result.metrics.occupancy_mean_s
    lower = edited(inst, {"regime.max_concurrent_attempts": int(running * 0.9)})
    assert any(v.startswith("regime.max_concurrent_attempts") for v in verify_plan(lower, plan).violations)
    seed_plan = solved(seed()).plan  # the seed's own plan states its K as its age limit
    assert seed_plan.age_limit == seed_plan.versions_kept and verify_plan(seed(), seed_plan).ok


@pytest.mark.parametrize(
    "regime, fields, why",
    [
        ({"in_flight_updates": True}, {"reliability": {"gpu_mtbf": "50000h"}}, "not yet with a reliability section"),
        (
            {"in_flight_updates": True, "max_concurrent_attempts": 30000},
            {"planning.basis": "hold"},
            "not yet with planning.basis hold with max_concurrent_attempts",
        ),
    ],
)
def test_what_is_not_built_is_refused_by_name(regime, fields, why):
    inst = edited(seed(regime), fields)
    with pytest.raises(InstanceError, match=f"regime.mode: async drop, in-flight updates.* is planned, but {why}"):
        Planner(inst)


def test_a_capped_run_is_not_replayed_yet_and_a_timeouts_scenarios_are_assessed_not_replayed():
    steady = ["--basis", "steady_state", "--iterations", "5"]
    capped = CliRunner().invoke(main, ["simulate", str(SEED), *steady, "--set", "regime.max_concurrent_attempts=30000"])
    assert capped.exit_code == 2
    assert "async drop (with max_concurrent_attempts) is planned by solve on steady_state, but not replayed yet" in (
        capped.stderr
    )
    uncertain = str(ROOT / "instances" / "seed-week-75-uncertain.yaml")
    timeout = ["--set", "regime.rollout_timeout=1h"]
    assessed = CliRunner().invoke(main, ["risk", uncertain, *timeout, "--samples", "50", "--json"])
    assert assessed.exit_code == 0, assessed.output
    assert 0.0 <= json.loads(assessed.stdout)["on_time_probability"] <= 1.0
    result = CliRunner().invoke(main, ["simulate", uncertain, *steady, *timeout, "--scenarios"])
    assert result.exit_code == 2, result.output
    assert "async drop (with rollout_timeout) is planned, but its scenarios are not replayed yet" in result.stderr


def test_explain_gives_the_resident_versions_the_age_limit_and_the_re_prefills():
    edits = ["regime.in_flight_updates=true", "regime.recompute=prefix", "regime.rollout_timeout=1h"]
    args = ["explain", str(SEED), "--json", "--cadence", "604"] + [x for e in edits for x in ("--set", e)]
    got = json.loads(CliRunner().invoke(main, args).stdout)
    assert (got["versions_resident"], got["age_limit"]) == (1, 10)
    assert round(got["length_bias"], 3) == 0.822 and got["regime_exceedance"] == 0.0  # τ/L < 6 <= K
    plan = solved(seed({"in_flight_updates": True, "recompute": "prefix", "rollout_timeout": TAU})).metrics
    assert got["recompute_share"] == pytest.approx(plan.recompute_share, rel=1e-9)  # the plan's L is 604 s too
    assert got["consumed_mean_gap"] == pytest.approx(plan.consumed_mean_gap, rel=1e-9)


def test_its_levers_keep_the_age_limit_beside_the_regimes_own():
    paths = [
        path
        for _, path, _, _, _ in steps(
            seed({"in_flight_updates": True, "rollout_timeout": TAU, "max_concurrent_attempts": 20000})
        )
    ]
    assert {"freshness.max_versions_kept", "regime.rollout_timeout", "regime.max_concurrent_attempts"} <= set(paths)
    admission = seed({"staleness": "admission", "steps_ahead": 8, "in_flight_updates": True})
    assert "freshness.max_versions_kept" not in [path for _, path, _, _, _ in steps(admission)]


def test_the_diagnosis_names_the_host_caps_when_the_rows_admit_entries_no_fleet_holds():
    inst = seed(
        {"in_flight_updates": True},
        **{"environment.node_types[0].max_nodes": 5, "environment.cloud.vm_types[0].max_vms": 0},
    )
    result = diagnosed(inst, Planner(inst).solve("total_cost"))
    conflict = result.diagnosis["conflict"]
    assert result.status == "infeasible" and "entries meet its rows" in conflict
    assert "environment.node_types[0].max_nodes" in conflict and "environment.cloud.vm_types[0].max_vms" in conflict
