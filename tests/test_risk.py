"""`risk` and the scenarios under it (MODEL.md §9): a fixed plan over scenarios of the uncertainty factors.

Known answers: degenerate factors change nothing; the seed baseline's optimum is a coin flip under a
±5 % throughput factor; with one normal throughput factor the on-time share is a normal tail at a
threshold computed here from the verifier's own laws; the realised cadence is where §3's rows start
to hold (re-checked with the verifier's laws on the scenario as an instance of its own); Wilson
intervals against hand values; the same seed gives the same report; the CLI's exit codes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from tests.scenario_checks import smallest_cadences
from trainground.cli import main
from trainground.drivers.risk import assess
from trainground.models.load import read_document, validate
from trainground.models.result import Plan
from trainground.solver.laws.calculus import wilson
from trainground.solver.solve import solve_instance
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.deadline import at_deadline
from trainground.solver.uncertainty.hosts import _hosts, _lp, room
from trainground.solver.verify import laws as laws

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
TWO_BACKENDS = ROOT / "instances" / "two-backends-cloud.yaml"
THROUGHPUT_PATH = "inference.shapes[*].tokens_per_gpu_s"
LIFETIME_PATHS = ["environment.occupancy.median", "environment.occupancy.p99"]


def uncertain(factors: list[dict], base: Path = SEED, **sections):
    document = read_document(base)
    document.update(sections)
    document["uncertainty"] = {"factors": factors}
    return validate(document, f"{base.stem}.yaml")


def optimum(inst):
    result = solve_instance(inst)
    assert result.status == "optimal", result.message
    return result.plan


def normal(name: str, paths: list[str], sd: float) -> dict:
    return {"name": name, "paths": paths, "dist": "normal", "mean": 1.0, "sd": sd}


DEGENERATE = [
    normal("throughput", [THROUGHPUT_PATH], 0.0),
    {"name": "lifetimes", "paths": LIFETIME_PATHS, "dist": "lognormal", "median": 1.0, "sigma": 0.0},
    {"name": "updates", "paths": ["training.update_time.reference_time"], "dist": "uniform", "low": 1.0, "high": 1.0},
    {
        "name": "tokens",
        "paths": ["workload.tokens_per_attempt"],
        "dist": "triangular",
        "low": 1.0,
        "mode": 1.0,
        "high": 1.0,
    },
]


@pytest.mark.parametrize(
    "base,startup",
    [(SEED, False), (SEED, True), (TWO_BACKENDS, False)],
    ids=["seed", "seed-count-startup", "two-backends-cloud"],
)
def test_degenerate_factors_leave_the_deterministic_optimum_on_time(base: Path, startup: bool):
    document = read_document(base)
    schedule = dict(document["schedule"], count_startup=startup)
    inst = uncertain(DEGENERATE, base, schedule=schedule)
    plan = optimum(inst)
    report = assess(inst, plan, samples=300, seed=5)
    assert report.on_time_probability == 1.0
    assert report.on_time_interval[1] == 1.0
    out = report.outcome
    assert np.all(out.cadence == plan.cadence_s)
    assert out.makespan == pytest.approx(np.full(300, plan.makespan_s), rel=1e-6 if startup else 1e-12)
    assert out.total_cost == pytest.approx(np.full(300, plan.total_cost), rel=1e-6 if startup else 1e-9)
    assert float(np.mean(out.lateness)) == 0.0
    assert all(f.on_time_low and f.on_time_high for f in report.factors)


def test_knife_edge_of_the_seed_baseline():
    """MODEL §9: the deterministic optimum under a ±5 % (sd) throughput factor is on time about
    half the time."""
    inst = uncertain([normal("throughput", [THROUGHPUT_PATH], 0.05)])
    share = assess(inst, optimum(inst), samples=4000, seed=0).on_time_probability
    assert 0.35 <= share <= 0.65, share


def _threshold(inst, plan) -> float:
    """The throughput multiplier at which the plan's supply meets the demand at the deadline pace, from the
    verifier's own laws: on time iff the multiplier is at least this (§9's equivalence at L_dl)."""
    pace = (inst.schedule.deadline - inst.schedule.extra_time) / inst.workload.iterations
    law = laws.law_of(inst.environment.occupancy)
    run = laws.run_at(inst, law, pace, plan.versions_kept, plan.training_groups, startup=False)
    demand = run.attempts * inst.workload.tokens_per_attempt
    shapes = {s.name: s for s in inst.inference.shapes}
    supply = inst.inference.availability * sum(
        r.replicas * shapes[r.shape].gpus_per_replica * shapes[r.shape].tokens_per_gpu_s for r in plan.inference
    )
    return demand / supply


@pytest.mark.parametrize("sd", [0.05, 0.01, 0.002])
def test_one_normal_throughput_factor_gives_a_normal_tail(sd: float):
    inst = uncertain([normal("throughput", [THROUGHPUT_PATH], sd)])
    plan = optimum(inst)
    expected = 1.0 - stats.norm.cdf((_threshold(inst, plan) - 1.0) / sd)
    n = 20000
    share = assess(inst, plan, samples=n, seed=11).on_time_probability
    tolerance = 4.0 * math.sqrt(max(expected * (1 - expected), 1e-4) / n)
    assert abs(share - expected) <= tolerance, (share, expected, tolerance)


def test_realised_cadence_is_where_the_rows_start_to_hold():
    """For scenarios of the bundled instance, re-check §3's throughput, update and sandbox rows at L_s with
    the verifier's laws on the scenario as an instance of its own: they hold at L_s and, where L_s is
    above the planned cadence, one fails just below it."""
    inst = validate(read_document(UNCERTAIN), str(UNCERTAIN))
    plan = optimum(inst)
    scen = sc.draw(inst, 40, seed=3)
    out = sc.evaluate(inst, plan, scen)
    node = inst.environment.node_types[0]

    def holds(here, cadence: float) -> bool:
        run = laws.run_at(
            here,
            laws.law_of(here.environment.occupancy),
            cadence,
            plan.versions_kept,
            plan.training_groups,
            startup=False,
        )
        shape = here.inference.shapes[0]
        supply = plan.inference[0].replicas * shape.gpus_per_replica * shape.tokens_per_gpu_s
        backend = here.environment.backends[0]
        per_node = min(node.density["container"], node.cores / backend.cores, node.memory_gb / backend.memory_gb)
        hosts = sum(c.count for c in plan.local_nodes) * per_node
        return (
            supply >= run.attempts * here.workload.tokens_per_attempt * (1 - 1e-7)
            and run.update <= cadence * (1 + 1e-7)
            and run.attempts * run.w_use <= hosts * (1 + 1e-7)
        )

    assert not plan.cloud_vms or all(c.count == 0 for c in plan.cloud_vms)
    raised = smallest_cadences(inst, scen, out.cadence, plan.cadence_s, holds)
    for s in range(scen.size):
        assert out.makespan[s] == pytest.approx(inst.workload.iterations * float(out.cadence[s]))
        deadline = sc.instance_of(inst, scen, s).schedule.deadline
        assert out.on_time[s] == (out.makespan[s] <= deadline * (1 + 1e-9))
    assert raised >= 10  # the check covered scenarios that slow the plan down


def test_sandbox_room_lp_agrees_with_the_closed_form():
    inst = uncertain(
        [
            {
                "name": "density",
                "paths": ["environment.node_types[0].density.container"],
                "dist": "uniform",
                "low": 0.5,
                "high": 1.5,
            }
        ]
    )
    plan = optimum(inst)
    scen = sc.draw(inst, 6, seed=2)
    closed = room(inst, plan, scen, np.ones(6))
    hosts = _hosts(inst, plan, scen, [0])
    shares = {0: 1.0}
    eligible = {0: np.full(6, inst.environment.cloud.eligible_share["container"])}
    for s in range(6):
        assert closed[s] == pytest.approx(
            min(_lp(hosts, shares, eligible, s, False), _lp(hosts, shares, eligible, s, True)), rel=1e-7
        )


def test_two_backends_hold_their_nominal_load():
    inst = uncertain(
        [{"name": "lifetimes", "paths": LIFETIME_PATHS, "dist": "lognormal", "median": 1.0, "sigma": 0.3}], TWO_BACKENDS
    )
    plan = optimum(inst)
    scen = sc.from_draws(inst, np.array([[1.0], [1.3], [0.7]]))
    v = sc.values_of(inst, scen)
    theta = room(inst, plan, scen, v.peak_to_mean)
    result = solve_instance(inst)
    assert theta[0] >= result.metrics.inflight_mean * (1 - 1e-7)
    out = sc.evaluate(inst, plan, scen)
    assert out.cadence[0] == plan.cadence_s and out.on_time[0]
    assert out.cadence[1] > plan.cadence_s and not out.on_time[1]  # 30 % longer lifetimes overflow the hosts
    assert out.on_time[2]


def test_more_throughput_never_hurts_and_longer_lifetimes_never_help():
    inst = validate(read_document(UNCERTAIN), str(UNCERTAIN))
    plan = optimum(inst)
    grid = np.linspace(0.85, 1.15, 13)
    for column in range(3):
        draws = np.ones((grid.size, 3))
        draws[:, column] = grid
        span = sc.evaluate(inst, plan, sc.from_draws(inst, draws)).makespan
        steps = np.diff(span)
        assert np.all(steps <= 1e-9 * span[1:]) if column == 0 else np.all(steps >= -1e-9 * span[1:]), (column, span)


def test_sensitivity_uses_each_factors_deciles_and_others_at_their_median():
    inst = uncertain(
        [
            normal("throughput", [THROUGHPUT_PATH], 0.05),
            {"name": "lifetimes", "paths": LIFETIME_PATHS, "dist": "lognormal", "median": 1.0, "sigma": 0.2},
        ]
    )
    plan = optimum(inst)
    report = assess(inst, plan, samples=200)
    throughput, lifetimes = report.factors
    assert throughput.low == pytest.approx(1 - 0.05 * 1.2815515655446004) and throughput.high > 1
    assert (throughput.on_time_low, throughput.on_time_high) == (False, True)
    assert throughput.makespan_s_low > throughput.makespan_s_high == pytest.approx(plan.makespan_s)
    assert lifetimes.low == pytest.approx(math.exp(-0.2 * 1.2815515655446004))
    assert lifetimes.makespan_s_high >= lifetimes.makespan_s_low


def test_wilson_interval_against_hand_values():
    """(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964, worked by hand to 6 places."""
    assert wilson(50, 100) == (pytest.approx(0.403832, abs=1e-6), pytest.approx(0.596168, abs=1e-6))
    assert wilson(0, 10) == (0.0, pytest.approx(0.277533, abs=1e-6))  # z²/(n + z²) = 3.841459/13.841459
    assert wilson(10, 10) == (pytest.approx(0.722467, abs=1e-6), 1.0)
    assert wilson(9, 10) == (pytest.approx(0.595850, abs=1e-6), pytest.approx(0.982124, abs=1e-6))
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_same_seed_gives_the_same_report():
    inst = validate(read_document(UNCERTAIN), str(UNCERTAIN))
    plan = optimum(inst)
    a, b = assess(inst, plan, 500, 4).to_json(), assess(inst, plan, 500, 4).to_json()
    assert a == b
    assert assess(inst, plan, 500, 5).to_json()["makespan_s"] != a["makespan_s"]


# ---------------------------------------------------------------- CLI

RISK_KEYS = {
    "instance",
    "plan",
    "samples",
    "seed",
    "on_time_probability",
    "on_time_interval",
    "makespan_s",
    "total_cost",
    "expected_lateness_s",
    "factors",
}
FACTOR_KEYS = {"name", "low", "high", "makespan_s_low", "makespan_s_high", "on_time_low", "on_time_high"}


def _risk(*args: str):
    return CliRunner().invoke(main, ["risk", *args])


def test_cli_json_keys_and_plots(tmp_path: Path):
    result = _risk(str(UNCERTAIN), "--samples", "800", "--seed", "2", "--json", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert RISK_KEYS <= set(payload) and payload["samples"] == 800 and payload["seed"] == 2
    assert {"mean", "p50", "p90", "p99"} <= set(payload["makespan_s"]) and len(payload["on_time_interval"]) == 2
    assert [set(f) for f in payload["factors"]] == [FACTOR_KEYS] * 3
    assert json.loads((tmp_path / "risk.json").read_text()) == payload
    for name in ("risk-makespan.png", "risk-tornado.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_human_report_and_a_given_plan(tmp_path: Path):
    solved = CliRunner().invoke(main, ["solve", str(UNCERTAIN), "--json", "--out", str(tmp_path / "plan.json")])
    assert solved.exit_code == 0
    result = _risk(str(UNCERTAIN), "--plan", str(tmp_path / "plan.json"), "--samples", "300")
    assert result.exit_code == 0, result.output
    assert "on time:" in result.stdout and "95 % Wilson interval" in result.stdout
    assert "one at a time" in result.stdout


def test_cli_replays_scenarios_with_the_simulator():
    result = _risk(str(UNCERTAIN), "--samples", "50", "--simulate", "1", "--sim-iterations", "15", "--json")
    assert result.exit_code == 0, result.output
    simulation = json.loads(result.stdout)["simulation"]
    assert simulation["replayed"] == 1
    row = simulation["replays"][0]
    assert row["iterations"] == 15 and row["simulated_makespan_s"] > 0 and row["analytic_makespan_s"] > 0


def test_cli_bad_input_exits_2(tmp_path: Path):
    (tmp_path / "empty.json").write_text('{"instance": "x", "status": "infeasible"}')
    (tmp_path / "broken.json").write_text("{not json")
    other = CliRunner().invoke(main, ["solve", str(ROOT / "instances" / "seed-week-200.yaml"), "--json"])
    (tmp_path / "other.json").write_text(other.stdout)
    cases = [
        (["--plan", str(tmp_path / "missing.json")], "missing.json", "cannot read plan file"),
        (["--plan", str(tmp_path / "broken.json")], "broken.json", "not a JSON result"),
        (["--plan", str(tmp_path / "empty.json")], "empty.json: plan: no plan", ""),
        (["--plan", str(tmp_path / "other.json")], "other.json: plan: does not fit", ""),
    ]
    for args, where, rule in cases:
        result = _risk(str(UNCERTAIN), *args)
        assert result.exit_code == 2, (args, result.output)
        assert where in result.stderr and rule in result.stderr and "Traceback" not in result.output
    plain = _risk(str(SEED))
    assert plain.exit_code == 2 and "uncertainty: risk needs an uncertainty section" in plain.stderr
    assert _risk(str(UNCERTAIN), "--samples", "0").exit_code == 2


def test_at_deadline_coefficients_give_the_same_verdict_as_evaluate():
    """The per-scenario coefficients a chance-constrained model reads (MODEL §9: constraints at L_dl) decide
    on time exactly as the plan's evaluation does."""
    inst = validate(read_document(UNCERTAIN), str(UNCERTAIN))
    plan = optimum(inst)
    scen = sc.draw(inst, 2000, seed=9)
    out = sc.evaluate(inst, plan, scen)
    at = at_deadline(inst, scen, [plan.versions_kept])
    v = sc.values_of(inst, scen)
    supply = at.supply_per_replica[:, 0, 0] * plan.inference[0].replicas
    update = sc.update_time(inst, scen, plan.training_gpus)
    theta = room(inst, plan, scen, v.peak_to_mean)
    verdict = (
        (plan.cadence_s <= at.pace[:, 0])
        & (update <= at.pace[:, 0] * (1 + 1e-9))
        & at.fresh[:, 0]
        & (supply >= at.token_demand[:, 0] * (1 - 1e-9))
        & (at.level[:, 0] <= theta * (1 + 1e-9))
    )
    assert 0.02 < out.on_time.mean() < 0.98
    assert np.array_equal(verdict, out.on_time)


def test_start_up_fill_per_scenario_matches_the_calculus():
    """MODEL §8's fill with a sigma per scenario (a factor on p99 alone) against solver.laws.startup.fill, one law
    at a time, for independent and comonotone groups."""
    from trainground.solver.laws import calculus as calc
    from trainground.solver.laws import startup
    from trainground.solver.uncertainty.lifetimes import Lifetimes

    rng = np.random.default_rng(4)
    mu, sigma, rate = rng.uniform(5.0, 8.0, 40), rng.uniform(0.05, 2.0, 40), rng.uniform(0.5, 20.0, 40)
    life = Lifetimes(
        mean=np.exp(mu + sigma**2 / 2), median=np.exp(mu), p99=np.exp(mu + 2.33 * sigma), mu=mu, sigma=sigma
    )
    for correlation in ("independent", "comonotone"):
        mine = life.fill(rate, 4096, 8, 0.9, correlation)
        for s in range(40):
            ref = float(startup.fill(calc.lognormal(mu[s], sigma[s]), rate[s], 4096, 8, 0.9, correlation))
            assert mine[s] == pytest.approx(ref, rel=1e-9), (correlation, s)


def test_an_empirical_occupancy_is_scaled_as_a_whole():
    from trainground.solver.laws import calculus as calc

    samples = [300.0, 500.0, 700.0, 900.0, 1044.0, 1200.0, 1500.0, 2000.0, 3000.0, 5000.0]
    document = read_document(SEED)
    document["environment"] = dict(document["environment"], occupancy={"distribution": "empirical", "samples": samples})
    document["uncertainty"] = {
        "factors": [
            {
                "name": "lifetimes",
                "paths": ["environment.occupancy.samples[*]"],
                "dist": "lognormal",
                "median": 1.0,
                "sigma": 0.2,
            }
        ]
    }
    inst = validate(document, "empirical.yaml")
    plan = optimum(inst)
    scen = sc.from_draws(inst, np.array([[1.0], [1.4]]))
    life = sc.values_of(inst, scen).lifetimes
    for s, c in enumerate((1.0, 1.4)):
        law = calc.empirical(np.array(samples) * c)
        assert life.mean[s] == pytest.approx(law.mean)
        assert life.exceedance(np.array([604.0, 604.0]), 10)[s] == pytest.approx(float(calc.exceedance(law, 604.0, 10)))
    out = sc.evaluate(inst, plan, scen)
    assert out.cadence[0] == plan.cadence_s and out.on_time[0]
    assert out.cadence[1] > plan.cadence_s and not out.on_time[1]


def test_an_allowance_counts_against_every_scenario_and_risk_reads_it_from_a_hold_plan(tmp_path):
    """Under hold a scenario is on time iff T_s + Δ <= deadline (MODEL §11): with Δ the on-time set shrinks
    to exactly those scenarios, lateness is zero exactly there, and `risk --plan` of a hold result uses its Δ."""
    inst = validate(read_document(UNCERTAIN), str(UNCERTAIN))
    plan = optimum(inst)
    scen = sc.draw(inst, 400, seed=2)
    bare = sc.evaluate(inst, plan, scen)
    slack = (bare.deadline - bare.makespan)[bare.on_time]
    allowance = float(np.median(slack))
    held = sc.evaluate(inst, plan, scen, allowance)
    assert np.array_equal(held.on_time, bare.makespan + allowance <= bare.deadline * (1 + 1e-9))
    assert 0 < held.on_time.sum() < bare.on_time.sum()
    assert np.array_equal(held.lateness == 0, held.on_time)
    solved = CliRunner().invoke(main, ["solve", str(UNCERTAIN), "--json", "--no-levers", "--basis", "hold"])
    result = json.loads(solved.output)
    assert result["hold"]["allowance_s"] > 0
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(solved.output)
    out = CliRunner().invoke(main, ["risk", str(UNCERTAIN), "--plan", str(plan_file), "--samples", "400", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["allowance_s"] == result["hold"]["allowance_s"]
    hold = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": "hold"})})
    expected = sc.evaluate(hold, Plan.model_validate(result["plan"]), sc.draw(hold, 400), report["allowance_s"])
    assert report["on_time_probability"] == pytest.approx(float(expected.on_time.mean()))
    text = CliRunner().invoke(main, ["risk", str(UNCERTAIN), "--plan", str(plan_file), "--samples", "400"])
    assert "run-variance allowance" in text.output
