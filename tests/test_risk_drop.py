"""`risk` of an async drop run with regime fields set (MODEL.md §9 with §14): a fixed plan over scenarios, each with
its quantities over its own cut lifetimes W_τ = min(W, τ).

Known answers: with degenerate factors the realised cadence and T are the plan's own (steady_state and hold, with
and without the start-up); a scenario's quantities are the planner's own (solver/regimes/drop.py) on the scenario
as an instance of its own, factors on regime fields included; with every lifetime far above the timeout (W_τ = τ)
the realised cadence is the root of a quadratic computed here by hand; longer lifetimes never make a scenario
earlier.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from click.testing import CliRunner

from tests.scenario_checks import edit_sections, smallest_cadences
from trainground.cli import main
from trainground.drivers.risk import assess
from trainground.models.load import read_document, validate
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws import regimes as law
from trainground.solver.regimes.drop import drop_of
from trainground.solver.solve import solve_instance
from trainground.solver.uncertainty import drop as drop_scenarios
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.stages import evaluate_any

ROOT = Path(__file__).resolve().parent.parent
FILTERED = ROOT / "instances" / "regimes" / "seed-week-timeout-filter.yaml"
THROUGHPUT = "inference.shapes[*].tokens_per_gpu_s"
LIFETIMES = ["environment.occupancy.median", "environment.occupancy.p99"]
REGIME = {
    "mode": "async",
    "staleness": "drop",
    "in_flight_updates": True,
    "recompute": "prefix",
    "prefill_cost": 0.05,
    "context_tokens": 2000.0,
    "rollout_timeout": "3600s",
    "truncated": "filter",
    "weight_sync_time": "20s",
}


def fixed(name: str, paths: list[str], value: float) -> dict:
    """A factor that draws ``value`` every time."""
    return {"name": name, "paths": paths, "dist": "uniform", "low": value, "high": value}


def spread(name: str, paths: list[str], sigma: float) -> dict:
    return {"name": name, "paths": paths, "dist": "lognormal", "median": 1.0, "sigma": sigma}


def instance(factors: list[dict], basis: str = "steady_state", startup: bool = False, regime=None, **changes):
    """A quarter of the filtered-timeout week with in-flight updates, re-prefills, a weight sync and a version
    slowdown (so the resident versions matter), and ``factors`` as its uncertainty."""
    doc = read_document(FILTERED)
    doc["workload"]["iterations"] = 250
    doc["schedule"] = dict(doc["schedule"], deadline="42h", count_startup=startup)
    doc["inference"]["shapes"][0]["version_slowdown"] = 0.1
    doc["regime"] = dict(regime or REGIME)
    doc["planning"] = {"basis": basis}
    doc["uncertainty"] = {"factors": factors}
    edit_sections(doc, changes)
    return validate(doc, "drop-risk.yaml")


def solved(inst):
    result = solve_instance(inst)
    assert result.status == "optimal", result.message
    return result


DEGENERATE = [
    fixed("throughput", [THROUGHPUT], 1.0),
    spread("lifetimes", LIFETIMES, 0.0),
    fixed("timeout", ["regime.rollout_timeout"], 1.0),
    fixed("sync", ["regime.weight_sync_time", "regime.prefill_cost", "regime.context_tokens"], 1.0),
]


@pytest.mark.parametrize(
    "basis,startup,gap",
    [("steady_state", False, None), ("steady_state", True, 6.0), ("hold", True, None), ("hold", True, 5.6)],
    ids=["steady", "startup-mean-gap", "hold", "hold-mean-gap"],
)
def test_degenerate_factors_give_the_plans_own_cadence_and_makespan(basis: str, startup: bool, gap: float | None):
    inst = instance(DEGENERATE, basis, startup, freshness__max_mean_gap=gap)
    result = solved(inst)
    plan = result.plan
    assert plan.age_limit is not None and plan.versions_kept == 1  # in-flight updates: one version resident
    report = assess(inst, plan, samples=64, seed=3, allowance=result.allowance_s)
    out = report.outcome
    assert np.all(out.cadence == plan.cadence_s)
    assert out.makespan == pytest.approx(np.full(64, plan.makespan_s), rel=1e-6 if startup else 1e-12)
    assert out.attempts == pytest.approx(np.full(64, result.metrics.attempts_per_s), rel=1e-9)
    assert report.on_time_probability == 1.0
    assert all(f.on_time_low and f.on_time_high and f.swing_s == 0.0 for f in report.factors)


def test_on_hold_the_consumed_gap_row_is_met_at_the_realised_cadence():
    """On the hold basis the mean-gap row is the consumed gap's at the age limit (MODEL §11 item 3 over W_τ): a
    scenario whose limit is 5 % tighter than the plan's consumed gap runs where that gap, by the planner's own law
    on the scenario as an instance, meets the limit."""
    inst = instance([fixed("gap", ["freshness.max_mean_gap"], 0.95)], "hold", True, freshness__max_mean_gap=5.6)
    result = solved(inst)
    plan, K = result.plan, result.plan.age_limit
    assert result.metrics.consumed_mean_gap > 0.95 * 5.6  # the plan's own gap breaks the scenario's limit
    out = assess(inst, plan, samples=2, seed=0, allowance=result.allowance_s).outcome
    own = sc.instance_of(inst, sc.draw(inst, 2, 0), 0)
    d = drop_of(own)
    assert d is not None

    def gap(cadence: float) -> float:
        return float(holding.consumed_mean_gap(d.occupancy, cadence, K, own, d.tau)[0, K - 1])

    L = float(out.cadence[0])
    assert L > plan.cadence_s * 1.001
    assert gap(L) <= 0.95 * 5.6 * (1 + 1e-9) < gap(L * (1 - 1e-6))


def test_a_slower_scenario_is_later_on_either_basis_and_the_sensitivity_sees_it():
    factors = [fixed("throughput", [THROUGHPUT], 0.9), spread("lifetimes", LIFETIMES, 0.2)]
    for basis in ("steady_state", "hold"):
        inst = instance(factors, basis)
        result = solved(inst)
        report = assess(inst, result.plan, samples=200, seed=1, allowance=result.allowance_s)
        assert np.all(report.outcome.cadence > result.plan.cadence_s)  # 10 % less throughput: every scenario slower
        effects = {f.name: f for f in report.factors}
        assert effects["lifetimes"].makespan_s_high > effects["lifetimes"].makespan_s_low  # longer lifetimes: later
        assert effects["throughput"].swing_s == 0.0


@pytest.mark.parametrize(
    "empirical,policy",
    [(False, "drop"), (True, "drop"), (False, "downweight")],
    ids=["lognormal", "empirical", "downweight"],
)
def test_each_scenarios_quantities_are_the_planners_on_the_scenario_as_an_instance(empirical: bool, policy: str):
    factors = [
        spread("lifetimes", ["environment.occupancy.samples[*]"] if empirical else LIFETIMES, 0.3),
        spread("timeout", ["regime.rollout_timeout"], 0.3),
        spread("regime", ["regime.weight_sync_time", "regime.prefill_cost", "regime.context_tokens"], 0.3),
    ]
    changes = {}
    if empirical:  # a lognormal's quantiles as samples
        levels = (np.arange(400) + 0.5) / 400
        samples = [1044.0 * math.exp(1.13 * NormalDist().inv_cdf(u)) for u in levels]
        changes["environment__occupancy"] = {"distribution": "empirical", "samples": samples}
    inst = instance(factors, startup=True, freshness__overrun_policy=policy, **changes)
    scen = sc.draw(inst, 6, seed=11)
    v = sc.values_of(inst, scen)
    d = drop_scenarios.values_of(inst, scen, v)
    batch_time = np.linspace(600.0, 9000.0, 6)  # B/(p·R_raw) of six fills, one per scenario
    fills = drop_scenarios.cut_fill(inst, v.lifetimes, d, 4096 / (d.intake * batch_time))
    g, corr = inst.workload.group_size, inst.freshness.group_correlation
    for s in range(scen.size):
        own = sc.instance_of(inst, scen, s)
        planner = drop_of(own)
        assert planner is not None and planner.tau is not None
        assert d.tau is not None and d.tau[s] == pytest.approx(planner.tau, rel=1e-12)
        for ours, theirs in [
            (d.intake[s], planner.intake),
            (d.tokens[s], planner.tokens),
            (d.mean_cut[s], planner.mean_cut),
            (d.w_use[s], planner.w_use),
            (d.sync[s], planner.sync),
            (d.pair[s], law.pair_min_mean(planner.occupancy, planner.tau)),
        ]:
            assert ours == pytest.approx(theirs, rel=1e-9)
        assert planner.prefill is not None and d.recompute is not None
        cost, context, bias = planner.prefill
        assert d.recompute[s] == pytest.approx(planner.mean_cut * cost * (context + planner.tokens * bias), rel=1e-9)
        for L in (300.0, 900.0):
            at = np.full(scen.size, L)
            assert drop_scenarios.exceedance(v.lifetimes, d, at, 3)[s] == pytest.approx(
                float(planner.exceedance(L, 3)), rel=1e-9, abs=1e-15
            )
            consumed = holding.consumed_mean_gap(planner.occupancy, L, 3, own, planner.tau)[0, 2]
            assert drop_scenarios.consumed_mean_gap(inst, v.lifetimes, d, at, 3)[s] == pytest.approx(consumed, rel=1e-9)
        expected = float(law.cut_fill(planner.occupancy, np.array([batch_time[s]]), g, corr, planner.tau)[0])
        assert fills[s] == pytest.approx(expected, rel=1e-6)
    assert np.ptp(d.tau) > 0 and np.ptp(d.pair) > 0  # the factors did move τ and the cut moments


@pytest.mark.parametrize("tau_scale", [1.0, 1.5])
def test_lifetimes_far_above_the_timeout_give_a_quadratics_root(tau_scale: float):
    """Every lifetime ends at the timeout: W_τ = τ, so mean(W_τ) = τ, E[W_τ²]/(2·E[W_τ]²) = 1/2, F(τ) = 0 (kept
    under truncated: keep) and nothing is dropped once K·L >= τ. The token row with one version resident is then
    S·(L - t_s) = B·t/p + B·τ·c·(ctx + t/2)/(p·L), t the tokens per attempt cut to τ: a quadratic in L."""
    median, p99, tau = 1.0e4, 2.0e4, 300.0
    regime = dict(REGIME, rollout_timeout=tau, truncated="keep")
    factors = [fixed("throughput", [THROUGHPUT], 0.8), fixed("timeout", ["regime.rollout_timeout"], tau_scale)]
    sigma = math.log(p99 / median) / NormalDist().inv_cdf(0.99)
    mean = median * math.exp(sigma * sigma / 2)
    tokens = 32768.0 * mean / tau  # so that an attempt cut at τ has 32,768 tokens
    inst = instance(
        factors,
        regime=regime,
        environment__occupancy={"distribution": "lognormal", "median": median, "p99": p99},
        workload__tokens_per_attempt=tokens,
    )
    plan = solved(inst).plan
    out = assess(inst, plan, samples=8, seed=0).outcome
    B, p, ts, c, ctx = 4096.0, 1.0, 20.0, 0.05, 2000.0
    cut = tau * tau_scale
    t = 32768.0 * cut / tau
    S = 0.8 * sum(r.replicas for r in plan.inference) * 8 * 75.0  # tokens/s, no slowdown with one version resident
    a, c0 = S * ts + B * t / p, B * cut * c * (ctx + t / 2) / p
    L = (a + math.sqrt(a * a + 4 * S * c0)) / (2 * S)
    assert L > plan.cadence_s and plan.age_limit * L >= cut  # the token row binds, and nothing is dropped
    # the rows are met to REL_TOL (1e-9) of their needs, as the planner's
    assert out.cadence == pytest.approx(np.full(8, L), rel=1e-8)
    assert out.makespan == pytest.approx(np.full(8, 250 * L), rel=1e-8)
    assert out.attempts == pytest.approx(np.full(8, B / (L * p)), rel=1e-8)


def test_the_concurrency_cap_is_a_floor_on_the_realised_cadence():
    """With lifetimes far above the timeout R_raw·mean(W_τ) = B·τ/(p·L) <= cap asks L >= B·τ/(p·cap): a scenario with
    τ 1.5 times longer and twice the throughput (its token row met below the plan's cadence) runs at that floor."""
    median, p99, tau, cap = 1.0e4, 2.0e4, 300.0, 1800
    regime = dict(REGIME, rollout_timeout=tau, truncated="keep", max_concurrent_attempts=cap)
    factors = [fixed("throughput", [THROUGHPUT], 2.0), fixed("timeout", ["regime.rollout_timeout"], 1.5)]
    sigma = math.log(p99 / median) / NormalDist().inv_cdf(0.99)
    inst = instance(
        factors,
        regime=regime,
        environment__occupancy={"distribution": "lognormal", "median": median, "p99": p99},
        workload__tokens_per_attempt=32768.0 * median * math.exp(sigma * sigma / 2) / tau,
        schedule__deadline="60h",
    )
    plan = solved(inst).plan
    floor = 4096.0 * 1.5 * tau / cap
    assert floor > plan.cadence_s  # the cap binds in the scenario, not at the plan's cadence
    out = assess(inst, plan, samples=4, seed=0).outcome
    assert out.cadence == pytest.approx(np.full(4, floor), rel=1e-8)
    assert out.attempts * 1.5 * tau == pytest.approx(np.full(4, cap), rel=1e-8)  # the cap's own row, met exactly
    unbound = instance(
        factors,
        regime=dict(regime, max_concurrent_attempts=None),
        **{
            "environment__occupancy": {"distribution": "lognormal", "median": median, "p99": p99},
            "workload__tokens_per_attempt": 32768.0 * median * math.exp(sigma * sigma / 2) / tau,
            "schedule__deadline": "60h",
        },
    )
    assert np.all(assess(unbound, plan, samples=4, seed=0).outcome.cadence < floor)  # without the cap: earlier


@pytest.mark.parametrize("basis", ["steady_state", "hold"])
@pytest.mark.parametrize(
    "timeout",
    [False, True],
    ids=["in-flight-only", "timeout-with-tokens"],
)
def test_longer_lifetimes_never_make_a_scenario_earlier(basis: str, timeout: bool):
    """Scaling lifetimes up by c never lowers a scenario's realised cadence or T. Under a timeout an attempt's tokens
    are taken to grow with its time (MODEL §14's token scale mean(W_τ)/mean(W)), so there the factor scales
    tokens_per_attempt with the lifetimes: a longer law at the same tokens per attempt keeps fewer tokens per cut
    attempt, which can make a scenario earlier."""
    regime = dict(REGIME) if timeout else {"mode": "async", "staleness": "drop", "in_flight_updates": True}
    paths = LIFETIMES + (["workload.tokens_per_attempt"] if timeout else [])
    inst = instance([spread("throughput", [THROUGHPUT], 0.05), spread("lifetimes", paths, 0.3)], basis, regime=regime)
    result = solved(inst)
    scen = sc.draw(inst, 300, seed=4)
    base = evaluate_any(inst, result.plan, scen)
    for factor in (1.1, 1.5):
        draws = scen.draws.copy()
        draws[:, 1] *= factor
        longer = evaluate_any(inst, result.plan, sc.from_draws(inst, draws))
        assert np.all(longer.cadence >= base.cadence)
        assert np.all(longer.makespan >= base.makespan * (1 - 1e-12))
        assert np.any(longer.makespan > base.makespan * 1.001)  # and some are really later


def test_simulate_scenarios_and_risk_replays_stay_refused_for_a_drop_run(tmp_path):
    doc = read_document(FILTERED)
    doc["uncertainty"] = {"samples": 20, "factors": [spread("throughput", [THROUGHPUT], 0.05)]}
    path = tmp_path / "filtered-uncertain.yaml"
    path.write_text(json.dumps(doc))
    steady = ["--basis", "steady_state"]
    for args in (
        ["risk", str(path), *steady, "--samples", "20", "--simulate", "1"],
        ["simulate", str(path), *steady, "--iterations", "5", "--scenarios"],
    ):
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 2, done.output
        assert (
            "async drop (with rollout_timeout, truncated) is planned, but its scenarios are not replayed yet"
            in done.stderr
        )


def test_report_gives_a_drop_run_its_risk_and_a_note_in_place_of_the_price_of_certainty():
    from trainground.drivers.report import gather

    inst = instance([spread("throughput", [THROUGHPUT], 0.05)])
    found = gather(inst, with_frontier=False, samples=200, levers_time=0.5, replications=1)
    assert found.risk is not None and found.certainty is None
    plan = found.answer.result.plan
    assert np.array_equal(found.risk.outcome.makespan, assess(inst, plan, samples=200).outcome.makespan)
    assert any("no price of certainty: solve --confidence plans the seed's regime only" in n for n in found.notes)


def test_realised_cadence_is_where_the_planners_rows_start_to_hold():
    """Per scenario, §3's rows with the planner's own quantities (solver/regimes/drop.py on the scenario as an
    instance of its own): the resident versions' supply times the sync factor covers the attempts' and the
    re-prefills' tokens, the update keeps up and the plan's nodes hold R_raw·W_use(W_τ), at L_s; where L_s is above
    the plan's cadence one of them fails just below it."""
    factors = [
        spread("throughput", [THROUGHPUT], 0.05),
        spread("lifetimes", LIFETIMES, 0.3),
        spread("timeout", ["regime.rollout_timeout"], 0.2),
    ]
    inst = instance(factors)
    plan = solved(inst).plan
    assert not any(c.count for c in plan.cloud_vms)
    scen = sc.draw(inst, 40, seed=3)
    out = evaluate_any(inst, plan, scen)
    node, K = inst.environment.node_types[0], plan.age_limit

    def holds(here, cadence: float) -> bool:
        d = drop_of(here)
        assert d is not None
        drop = calc.group_drop(d.exceedance(cadence, K), 8, "drop", "independent")
        attempts = 4096 / (cadence * d.intake * (1 - drop))
        shape, backend = here.inference.shapes[0], here.environment.backends[0]
        supply = plan.inference[0].replicas * shape.gpus_per_replica * shape.tokens_per_gpu_s
        supply *= calc.supply_multiplier(shape.version_slowdown, 1) * float(d.sync_kept(cadence))
        per_node = min(node.density["container"], node.cores / backend.cores, node.memory_gb / backend.memory_gb)
        hosts = sum(c.count for c in plan.local_nodes) * per_node
        update = calc.update_time(here.training.update_time, plan.training_gpus)
        return bool(
            supply >= float(d.token_demand(attempts, cadence)) * (1 - 1e-7)
            and update <= cadence * (1 + 1e-7)
            and attempts * d.w_use <= hosts * (1 + 1e-7)
        )

    raised = smallest_cadences(inst, scen, out.cadence, plan.cadence_s, holds)
    assert out.makespan == pytest.approx(250 * out.cadence, rel=1e-12)
    assert raised >= 10  # the check covered scenarios that slow the plan down
