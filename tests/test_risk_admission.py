"""`risk` of an async run with admission control (MODEL.md §9 with §14: staleness admission, steps_ahead k, in-flight
updates): a fixed plan over scenarios, each with its own E[M_g] and cut lifetimes, at the smallest cadence where the
admission rows hold.

Known answers: with degenerate factors the realised cadence, T and the cost are the plan's own (steady_state with and
without the start-up, hold, a mean-gap limit); each scenario's quantities are the planner's own
(solver/regimes/admission.py) on the scenario as an instance; with every lifetime far above the timeout (W_τ = τ,
E[M_g] = τ) the realised cadence is the token row's quadratic root, or the admission row (τ/p + U + t_s)/(k + 1/2),
computed here by hand; slower throughput or longer lifetimes never make a scenario earlier; hosts too small for one
publish burst of B/p environments leave no cadence that works; the `risk` command assesses the bundled k = 8 instance,
and replaying scenarios of an admission run stays refused.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from click.testing import CliRunner

from tests.scenario_checks import edit_sections
from tests.test_risk_drop import LIFETIMES, THROUGHPUT, fixed, solved, spread
from trainground.cli import main
from trainground.drivers.risk import assess
from trainground.models.load import read_document, validate
from trainground.solver.regimes.admission import admission_of
from trainground.solver.uncertainty import admission as admission_scenarios
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.stages import evaluate_any

ROOT = Path(__file__).resolve().parent.parent
ADMISSION = ROOT / "instances" / "regimes" / "seed-week-admission-8-timeout.yaml"
UPDATES = "training.update_time.reference_time"
DENSITY = ["environment.node_types[*].density.container", "environment.cloud.vm_types[*].density.container"]
PREFIX = {"recompute": "prefix", "prefill_cost": 0.05, "context_tokens": 2000.0, "weight_sync_time": "20s"}


def instance(factors: list[dict], basis: str = "steady_state", regime: dict | None = None, **changes):
    """The bundled k = 8 admission week (attempts cut at one hour) with re-prefills at each publish and a 20 s weight
    sync, and ``factors`` as its uncertainty."""
    doc = read_document(ADMISSION)
    doc["regime"] = dict(doc["regime"], **PREFIX, **(regime or {}))
    doc["planning"] = {"basis": basis}
    doc["uncertainty"] = {"factors": factors}
    edit_sections(doc, changes)
    return validate(doc, "admission-risk.yaml")


DEGENERATE = [
    fixed("throughput", [THROUGHPUT], 1.0),
    spread("lifetimes", LIFETIMES, 0.0),
    fixed("updates", [UPDATES], 1.0),
    fixed("regime", ["regime.rollout_timeout", "regime.weight_sync_time", "regime.context_tokens"], 1.0),
]


@pytest.mark.parametrize(
    "basis,startup,gap",
    [("steady_state", False, None), ("steady_state", True, None), ("hold", False, None), ("steady_state", False, 6.0)],
    ids=["steady", "startup", "hold", "mean-gap"],
)
def test_degenerate_factors_give_the_plans_own_cadence_makespan_and_cost(basis: str, startup: bool, gap):
    inst = instance(DEGENERATE, basis, schedule__count_startup=startup, freshness__max_mean_gap=gap)
    result = solved(inst)
    plan = result.plan
    assert plan.versions_kept == 1  # in-flight updates: one version resident
    report = assess(inst, plan, samples=16, seed=3, allowance=result.allowance_s)
    out = report.outcome
    assert np.all(out.cadence == plan.cadence_s)
    exact = not inst.counts_startup  # the fill is the planner's to 1e-6 (tests/test_risk_drop.py)
    assert out.makespan == pytest.approx(np.full(16, plan.makespan_s), rel=1e-12 if exact else 1e-6)
    assert out.total_cost == pytest.approx(np.full(16, plan.total_cost), rel=1e-9 if exact else 1e-6)
    assert out.hourly_cost == pytest.approx(np.full(16, plan.hourly_cost), rel=1e-12)
    assert out.attempts == pytest.approx(np.full(16, result.metrics.attempts_per_s), rel=1e-12)
    assert report.on_time_probability == 1.0
    assert all(f.on_time_low and f.on_time_high and f.swing_s == 0.0 for f in report.factors)


@pytest.mark.parametrize(
    "occupancy,correlation,policy",
    [("lognormal", "independent", "consumer"), ("lognormal", "comonotone", "post_publish"),
     ("empirical", "independent", "consumer")],
)  # fmt: skip
def test_each_scenarios_quantities_are_the_planners_on_the_scenario_as_an_instance(occupancy, correlation, policy):
    empirical = occupancy == "empirical"
    factors = [
        spread("lifetimes", ["environment.occupancy.samples[*]"] if empirical else LIFETIMES, 0.3),
        spread("timeout", ["regime.rollout_timeout"], 0.3),
        spread("regime", ["regime.weight_sync_time", "regime.prefill_cost", "regime.context_tokens"], 0.3),
    ]
    changes: dict = {"freshness__group_correlation": correlation, "freshness__gap_convention": policy}
    if empirical:  # a lognormal's quantiles as samples
        levels = (np.arange(400) + 0.5) / 400
        samples = [1044.0 * math.exp(1.13 * NormalDist().inv_cdf(u)) for u in levels]
        changes["environment__occupancy"] = {"distribution": "empirical", "samples": samples}
    inst = instance(factors, regime={"truncated": "filter"}, **changes)
    scen = sc.draw(inst, 5, seed=7)
    a = admission_scenarios.values_of(inst, scen, sc.values_of(inst, scen))
    for s in range(scen.size):
        planner = admission_of(sc.instance_of(inst, scen, s))
        assert planner is not None
        assert a.steps_ahead == planner.steps_ahead and a.post == planner.post
        d = a.cut
        assert d.recompute is not None
        for ours, theirs in [
            (a.group_max[s], planner.group_max),
            (d.intake[s], planner.intake),
            (d.tokens[s], planner.tokens),
            (d.mean_cut[s], planner.mean_cut),
            (d.w_use[s], planner.w_use),
            (d.sync[s], planner.sync),
            (d.recompute[s], planner.recompute),
        ]:
            assert ours == pytest.approx(theirs, rel=1e-9)
    assert np.ptp(a.group_max) > 0 and np.ptp(a.cut.intake) > 0  # the factors did move E[M_g] and the intake


def far_above(factors: list[dict], **changes):
    """Lifetimes with median 10,000 s and p99 20,000 s cut at τ = 400 s with k = 1: every attempt ends at τ
    (F(τ) < 1e-26), so W_τ = τ, E[M_g] = τ and E[W_τ²]/(2·E[W_τ]²) = 1/2; tokens per attempt are set so that an attempt
    cut at τ has 32,768. The admission row asks (400 s + U + 20 s)/1.5 <= L."""
    median, p99 = 1.0e4, 2.0e4
    sigma = math.log(p99 / median) / NormalDist().inv_cdf(0.99)
    return instance(
        factors,
        regime={"steps_ahead": 1, "rollout_timeout": 400.0},
        environment__occupancy={"distribution": "lognormal", "median": median, "p99": p99},
        workload__tokens_per_attempt=32768.0 * median * math.exp(sigma * sigma / 2) / 400.0,
        **changes,
    )


@pytest.mark.parametrize("throughput,updates,binding", [(0.8, 1.0, "tokens"), (1.0, 1.3, "admission")])
def test_with_every_lifetime_above_the_timeout_the_rows_are_computed_by_hand(throughput, updates, binding):
    """MODEL §14 with W_τ = τ = 400 s, p = 1, B = 4,096, t = 32,768 tokens, t_s = 20 s: the token row with one version
    resident is S·(1 - t_s/L) = (B/L)·(t + τ·c·(ctx + t/2)/L), S the plan's replicas' tokens/s at the scenario's
    throughput, a quadratic in L; the admission row is (τ + U + t_s)/(k + 1/2), U = 300 s·7,000/G_t at the scenario's
    update factor; the trainer's row U <= L. The realised cadence is the largest of them and the plan's own."""
    factors = [fixed("throughput", [THROUGHPUT], throughput), fixed("updates", [UPDATES], updates)]
    plan = solved(far_above(DEGENERATE)).plan
    out = assess(far_above(factors), plan, samples=4, seed=0).outcome
    B, t, tau, ts, c, ctx = 4096.0, 32768.0, 400.0, 20.0, 0.05, 2000.0
    S = throughput * sum(r.replicas for r in plan.inference) * 8 * 75.0
    a, c0 = S * ts + B * t, B * tau * c * (ctx + t / 2)
    U = updates * 300.0 * 7000 / plan.training_gpus
    rows = {
        "tokens": (a + math.sqrt(a * a + 4 * S * c0)) / (2 * S),
        "admission": (tau + U + ts) / 1.5,
        "update": U,
    }
    assert rows[binding] == max(rows.values()) and rows[binding] > plan.cadence_s * 1.01  # the row this case tests
    # the rows are met to REL_TOL (1e-9) of their needs, as the planner's
    assert out.cadence == pytest.approx(np.full(4, rows[binding]), rel=1e-8)
    assert out.makespan == pytest.approx(np.full(4, 1000 * rows[binding]), rel=1e-8)
    assert out.attempts == pytest.approx(np.full(4, B / rows[binding]), rel=1e-8)


@pytest.fixture(scope="module")
def plans():
    """The plan of the bundled week on each basis (the uncertainty section does not change it)."""
    return {basis: solved(instance(DEGENERATE, basis)) for basis in ("steady_state", "hold")}


@pytest.mark.parametrize("basis", ["steady_state", "hold"])
def test_slower_throughput_or_longer_lifetimes_never_make_a_scenario_earlier(basis: str, plans):
    """Scaling throughput down, or lifetimes up, never lowers a scenario's realised cadence or T. Under the timeout an
    attempt's tokens are taken to grow with its time (MODEL §14's token scale mean(W_τ)/mean(W)), so the lifetimes
    factor scales tokens_per_attempt with them (as tests/test_risk_drop.py does)."""
    factors = [
        spread("throughput", [THROUGHPUT], 0.05),
        spread("lifetimes", LIFETIMES + ["workload.tokens_per_attempt"], 0.2),
        spread("updates", [UPDATES], 0.05),
    ]
    inst = instance(factors, basis)
    plan = plans[basis].plan
    scen = sc.draw(inst, 300, seed=4)
    base = evaluate_any(inst, plan, scen)
    assert np.all(np.isfinite(base.makespan))
    for column, factor in ((0, 0.9), (1, 1.2), (1, 1.5)):
        draws = scen.draws.copy()
        draws[:, column] *= factor
        later = evaluate_any(inst, plan, sc.from_draws(inst, draws))
        # a cadence set by the publish row is a bisection's, to 1e-13 of itself from either floor
        assert np.all(later.cadence >= base.cadence * (1 - 1e-12))
        assert np.all(later.makespan >= base.makespan * (1 - 1e-12))
        assert np.any(later.makespan > base.makespan * 1.001)  # and some are really later


@pytest.mark.parametrize("basis", ["steady_state", "hold"])
def test_hosts_that_cannot_hold_one_publish_burst_leave_no_cadence(basis: str, plans):
    """Row 6's publish peak (B/p)·Σ_i S_τ(i·L) is at least the burst B/p = 4,096 environments at any cadence: with
    every host's density scaled a little under 4,096 over the plan's hosts (nodes × 1,048 + VMs × 64, density their
    tightest row), no cadence works, T is inf and the scenario is late; a little over, the scenario finishes, later."""
    plan = plans[basis].plan
    hosts = sum(c.count for c in plan.local_nodes) * 1048 + sum(c.count for c in plan.cloud_vms) * 64
    edge = 4096 / hosts
    none = assess(instance([fixed("density", DENSITY, 0.98 * edge)], basis), plan, samples=3, seed=0)
    assert np.all(np.isinf(none.outcome.cadence)) and np.all(np.isinf(none.outcome.makespan))
    assert np.all(np.isinf(none.outcome.total_cost)) and none.on_time_probability == 0.0
    some = assess(instance([fixed("density", DENSITY, 1.02 * edge)], basis), plan, samples=3, seed=0).outcome
    assert np.all(np.isfinite(some.makespan)) and np.all(some.cadence > plan.cadence_s)


@pytest.mark.parametrize("limit,moved", [(0.45, True), (0.55, False)])
def test_a_mean_gap_limit_under_k_moves_the_cadence_to_where_the_admission_row_has_slack(limit: float, moved: bool):
    """MODEL §14's consumed mean gap is k while the admission row has under 1 % slack, E[M_g]/L beyond. With W_τ = τ
    and k = 1, an update factor of 1.3 makes the admission row bind at (τ + U + t_s)/1.5, where the gap reads k = 1:
    a limit of 0.9 (2 × 0.45) moves the cadence to the row's 1 % edge, where τ/L is under it; a limit of 1.1 does not."""
    nominal = far_above(DEGENERATE, freshness__max_mean_gap=2.0)
    plan = solved(nominal).plan
    factors = [fixed("gap", ["freshness.max_mean_gap"], limit), fixed("updates", [UPDATES], 1.3)]
    out = assess(far_above(factors, freshness__max_mean_gap=2.0), plan, samples=2, seed=0).outcome
    U = 1.3 * 300.0 * 7000 / plan.training_gpus
    tight = (400.0 + U + 20.0) / 1.5
    edge = tight / 0.99
    assert tight > max(plan.cadence_s, U) and 400.0 / edge < 2 * limit  # the admission row binds; past it τ/L is met
    assert out.cadence == pytest.approx(np.full(2, edge if moved else tight), rel=1e-8)


def test_risk_assesses_the_bundled_admission_week_and_prints_its_on_time_probability():
    factor = (
        'uncertainty={factors: [{name: throughput, paths: ["inference.shapes[*].tokens_per_gpu_s"], dist: normal, '
        "mean: 1.0, sd: 0.08}]}"
    )
    args = ["risk", str(ADMISSION), "--basis", "steady_state", "--samples", "400", "--set", factor]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    share = float(text.split("on time: ")[1].split("%")[0])
    assert 0.0 < share < 100.0  # a 8 % spread on throughput makes some scenarios late and leaves others on time
    assert "throughput" in text


def test_replaying_scenarios_of_an_admission_run_stays_refused():
    factor = 'uncertainty={factors: [{name: t, paths: ["inference.shapes[*].tokens_per_gpu_s"], dist: uniform, low: 1, high: 1}]}'
    steady = ["--basis", "steady_state", "--set", factor]
    for args, refused in (
        (
            ["risk", str(ADMISSION), *steady, "--samples", "20", "--simulate", "1"],
            "async admission k=8, in-flight updates is planned, but its scenarios are not replayed yet",
        ),
        (
            ["simulate", str(ADMISSION), *steady, "--iterations", "5", "--scenarios"],
            "--scenarios does not apply to an admission run's replay",
        ),
    ):
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 2, done.output
        assert refused in done.stderr
