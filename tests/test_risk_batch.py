"""`risk` of a batch run (MODEL.md §9 with §14: pipelined with steps_ahead 0 or 1, colocated): a fixed plan over
scenarios, each with its own batch (N_s attempts, the slowest of them M_N,s, the generation phase D_s) and the
regime's row as the realised cadence's floor.

Known answers: with degenerate factors the realised cadence, T and the cost are the plan's own; with every lifetime
far above the timeout M_N = τ, so the realised cadence is the regime's row computed here by hand (a factor on the
update time moves it by exactly ΔU under k = 0, not at all under k = 1 while U < D); each scenario's batch is the
planner's own (solver/regimes/batch.py) on the scenario as an instance; a launch the plan's hosts no longer hold, or
a batch above the concurrency cap, is never on time.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from tests.scenario_checks import edit_sections
from tests.test_risk_drop import LIFETIMES, THROUGHPUT, fixed, solved, spread
from trainground.drivers.risk import assess
from trainground.models.load import InstanceError, read_document, validate
from trainground.solver.regimes.batch import batch_of
from trainground.solver.uncertainty import batch as batch_scenarios
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.hosts import launch_room

ROOT = Path(__file__).resolve().parent.parent
COLOCATED = ROOT / "instances" / "regimes" / "seed-week-colocated.yaml"
UPDATES = "training.update_time.reference_time"
MODES = {
    "colocated": {"mode": "colocated", "switch_time": "30s"},
    "k0": {"mode": "pipelined", "steps_ahead": 0},
    "k1": {"mode": "pipelined", "steps_ahead": 1},
}


def instance(
    mode: str,
    factors: list[dict],
    basis: str = "steady_state",
    tau: float | None = 3600.0,
    grid: tuple[str, str] = ("60s", "10s"),
    **changes,
):
    """The seed week as a batch run over 60 days (1,000 iterations, cadences from ``grid``'s least in its steps), a
    20 s weight sync, and ``factors`` as its uncertainty."""
    doc = read_document(COLOCATED)
    doc["regime"] = dict(MODES[mode], rollout_timeout=tau, weight_sync_time="20s")
    doc["schedule"] = dict(doc["schedule"], deadline="60d", cadence={"min": grid[0], "step": grid[1]})
    doc["planning"] = {"basis": basis}
    doc["uncertainty"] = {"factors": factors}
    edit_sections(doc, changes)
    return validate(doc, "batch-risk.yaml")


DEGENERATE = [
    fixed("throughput", [THROUGHPUT], 1.0),
    spread("lifetimes", LIFETIMES, 0.0),
    fixed("updates", [UPDATES], 1.0),
    fixed("regime", ["regime.rollout_timeout", "regime.weight_sync_time"], 1.0),
]


@pytest.mark.parametrize(
    "mode,basis",
    [
        ("colocated", "steady_state"),
        ("colocated", "hold"),
        ("k0", "steady_state"),
        ("k0", "hold"),
        ("k1", "steady_state"),
    ],
)
def test_degenerate_factors_give_the_plans_own_cadence_makespan_and_cost(mode: str, basis: str):
    inst = instance(mode, DEGENERATE, basis)
    result = solved(inst)
    plan = result.plan
    report = assess(inst, plan, samples=16, seed=3, allowance=result.allowance_s)
    out = report.outcome
    assert np.all(out.cadence == plan.cadence_s)
    assert np.all(out.makespan == plan.makespan_s)
    assert out.total_cost == pytest.approx(np.full(16, plan.total_cost), rel=1e-9)
    assert out.hourly_cost == pytest.approx(np.full(16, plan.hourly_cost), rel=1e-12)
    assert out.attempts == pytest.approx(np.full(16, result.metrics.attempts_per_s), rel=1e-12)
    assert report.on_time_probability == 1.0
    assert all(f.on_time_low and f.on_time_high and f.swing_s == 0.0 for f in report.factors)


def far_above(mode: str, factors: list[dict], **changes):
    """Lifetimes with median 10,000 s and p99 20,000 s cut at τ = 300 s: every attempt ends at τ (F(τ) < 1e-30),
    so M_N = τ and W_τ = τ; tokens per attempt are set so that an attempt cut at τ has 32,768. A 2,000-GPU pool and
    a one-minute grid from 2,000 s keep the planner's table of k = 0 (every group count at every cadence) small."""
    median, p99, tau = 1.0e4, 2.0e4, 300.0
    sigma = math.log(p99 / median) / NormalDist().inv_cdf(0.99)
    return instance(
        mode,
        factors,
        tau=tau,
        grid=("2000s", "60s"),
        gpu_pools__0={"name": "main", "gpus": 2000, "gpu_hour_cost": 2.0},
        environment__occupancy={"distribution": "lognormal", "median": median, "p99": p99},
        workload__tokens_per_attempt=32768.0 * median * math.exp(sigma * sigma / 2) / tau,
        **changes,
    )


@pytest.mark.parametrize("mode", ["colocated", "k0", "k1"])
def test_with_every_lifetime_above_the_timeout_the_regimes_row_is_computed_by_hand(mode: str):
    """D = max(N·32,768/S, τ) with S the plan's replicas' tokens/s at the scenario's throughput and N = 4,096
    (intake 1); U = 300 s·7,000/G_t. The realised cadence is max(L, the regime's row) with the scenario's values."""
    scale_u, scale_s = 2.0, 0.7
    factors = [fixed("throughput", [THROUGHPUT], scale_s), fixed("updates", [UPDATES], scale_u)]
    inst = far_above(mode, factors)
    plan = solved(inst).plan
    out = assess(inst, plan, samples=4, seed=0).outcome
    S = scale_s * sum(r.replicas for r in plan.inference) * 8 * 75.0
    D = max(4096 * 32768.0 / S, 300.0)
    U = 300.0 * 7000 / plan.training_gpus
    row = {
        "colocated": D + scale_u * U + 20.0 + 30.0,
        "k0": D + scale_u * U + 20.0,
        "k1": max(D, scale_u * U) + 20.0,
    }[mode]
    assert row > plan.cadence_s  # the scenario is slower than the plan
    assert out.cadence == pytest.approx(np.full(4, row), rel=1e-12)
    assert out.makespan == pytest.approx(np.full(4, 1000 * row), rel=1e-12)


def test_a_slower_update_moves_k0_by_its_own_growth_and_k1_not_while_it_is_shorter_than_the_generation():
    """With M_N = τ: a factor c on the update time moves k = 0's realised cadence to exactly its nominal row plus
    (c - 1)·U; under k = 1 with half the throughput (D twice the plan's, above c·U) the cadence is D + t_s whatever c."""
    plan = solved(far_above("k0", [fixed("updates", [UPDATES], 1.0)])).plan
    U = 300.0 * 7000 / plan.training_gpus
    D = max(4096 * 32768.0 / (sum(r.replicas for r in plan.inference) * 8 * 75.0), 300.0)
    for c in (1.5, 3.0):
        out = assess(far_above("k0", [fixed("updates", [UPDATES], c)]), plan, samples=2, seed=0).outcome
        assert np.all(out.cadence > plan.cadence_s)
        assert out.cadence == pytest.approx(np.full(2, D + U + 20.0 + (c - 1) * U), rel=1e-12)
    plan = solved(far_above("k1", [fixed("updates", [UPDATES], 1.0)])).plan
    U = 300.0 * 7000 / plan.training_gpus
    D = max(4096 * 32768.0 / (0.5 * sum(r.replicas for r in plan.inference) * 8 * 75.0), 300.0)
    for c in (1.0, 1.5):
        assert c * U < D  # the update hides behind the next batch's generation
        factors = [fixed("throughput", [THROUGHPUT], 0.5), fixed("updates", [UPDATES], c)]
        out = assess(far_above("k1", factors), plan, samples=2, seed=0).outcome
        assert out.cadence == pytest.approx(np.full(2, D + 20.0), rel=1e-12)


@pytest.mark.parametrize(
    "occupancy,tau,correlation",
    [("lognormal", 3600.0, "independent"), ("lognormal", None, "independent"), ("lognormal", None, "comonotone"),
     ("empirical", 3600.0, "independent"), ("empirical", None, "comonotone")],
)  # fmt: skip
def test_each_scenarios_batch_is_the_planners_on_the_scenario_as_an_instance(occupancy, tau, correlation):
    empirical = occupancy == "empirical"
    factors = [
        spread("lifetimes", ["environment.occupancy.samples[*]"] if empirical else LIFETIMES, 0.3),
        spread("intake", ["workload.intake_rate"], 0.2),
        spread("regime", ["regime.weight_sync_time", "regime.switch_time"], 0.3),
    ]
    if tau is not None:
        factors.append(spread("timeout", ["regime.rollout_timeout"], 0.3))
    changes: dict = {"freshness__group_correlation": correlation, "workload__intake_rate": 0.6}
    if empirical:  # a lognormal's quantiles as samples
        levels = (np.arange(400) + 0.5) / 400
        samples = [1044.0 * math.exp(1.13 * NormalDist().inv_cdf(u)) for u in levels]
        changes["environment__occupancy"] = {"distribution": "empirical", "samples": samples}
    inst = instance("colocated", factors, tau=tau, **changes)
    scen = sc.draw(inst, 6, seed=11)
    b = batch_scenarios.values_of(inst, scen, sc.values_of(inst, scen))
    for s in range(scen.size):
        planner = batch_of(sc.instance_of(inst, scen, s))
        assert planner is not None
        assert b.attempts[s] == planner.attempts
        for ours, theirs in [
            (b.slowest[s], planner.slowest),
            (b.tokens[s], planner.tokens),
            (b.w_use[s], planner.w_use),
            (b.sync[s], planner.sync),
            (b.switch[s], planner.switch),
        ]:
            assert ours == pytest.approx(theirs, rel=1e-9)
    assert np.ptp(b.slowest) > 0 and np.ptp(b.attempts) > 0  # the factors did move the batch


@pytest.mark.parametrize("basis", ["steady_state", "hold"])
def test_a_launch_the_plans_hosts_no_longer_hold_is_never_on_time(basis: str):
    """The plan's hosts hold the 4,096 attempts a batch launches at once; with each host 2 % less dense they hold
    fewer than 4,096 (whatever the cadence: all start together), so the scenario has no cadence that works, its
    makespan is inf; 0.5 % less dense still holds them."""
    density = ["environment.node_types[*].density.container", "environment.cloud.vm_types[*].density.container"]
    inst = instance("k0", [fixed("density", density, 0.98)], basis)
    plan = solved(instance("k0", [fixed("density", density, 1.0)], basis)).plan
    hosts = sum(c.count for c in plan.local_nodes) * 1048 + sum(c.count for c in plan.cloud_vms) * 64
    assert 0.98 * hosts < 4096 <= 0.995 * hosts  # what the factors below test
    report = assess(inst, plan, samples=3, seed=0)
    assert np.all(np.isinf(report.outcome.makespan)) and report.on_time_probability == 0.0
    assert np.all(np.isinf(report.outcome.total_cost))
    looser = assess(instance("k0", [fixed("density", density, 0.995)], basis), plan, samples=3, seed=0).outcome
    assert np.all(looser.cadence == plan.cadence_s)


def test_a_batch_above_the_concurrency_cap_is_never_on_time():
    """With intake 0.99 a batch launches 8·ceil(4,096/7.92) = 4,144 attempts, above a cap of 4,100."""
    changes = {"regime": dict(MODES["k1"], rollout_timeout=3600.0, max_concurrent_attempts=4100)}
    doc = read_document(COLOCATED)
    doc.update(changes)
    doc["schedule"] = dict(doc["schedule"], deadline="60d", cadence={"min": "60s", "step": "10s"})
    doc["planning"] = {"basis": "steady_state"}
    plan = None
    for intake, count in ((1.0, 4096), (0.99, 4144)):
        doc["uncertainty"] = {"factors": [fixed("intake", ["workload.intake_rate"], intake)]}
        inst = validate(doc, "capped.yaml")
        plan = plan or solved(inst).plan
        out = assess(inst, plan, samples=2, seed=0).outcome
        assert count == 8 * math.ceil(4096 / (8 * intake) - 1e-9)
        assert np.all(np.isfinite(out.makespan)) == (count <= 4100)


def test_the_sensitivity_sees_a_longer_timeout_and_a_slower_update():
    """k = 0 with M_N = τ: a longer timeout and a slower update each make the run later, and with every factor at its
    median the run is the plan's own."""
    factors = [spread("timeout", ["regime.rollout_timeout"], 0.1), spread("updates", [UPDATES], 0.2)]
    inst = instance("k0", factors)
    result = solved(inst)
    report = assess(inst, result.plan, samples=50, seed=1)
    effects = {f.name: f for f in report.factors}
    for name in ("timeout", "updates"):
        assert effects[name].makespan_s_high > effects[name].makespan_s_low
    assert report.median_makespan_s == result.plan.makespan_s


def test_pipelined_k1_with_the_start_up_counted_is_refused_as_unplanned():
    inst = instance("k1", DEGENERATE, schedule__count_startup=True)
    plan = solved(instance("k1", DEGENERATE)).plan
    with pytest.raises(InstanceError, match="regime.mode: pipelined k=1 is planned, but not yet with schedule.count"):
        assess(inst, plan)
    with pytest.raises(ValueError, match="pipelined k = 1 with the start-up counted is not planned"):
        batch_scenarios.evaluate(inst, plan, sc.draw(inst, 2, 0))


@pytest.mark.parametrize("basis", ["steady_state", "hold"])
def test_with_two_backends_the_launch_fits_at_the_plans_values_and_not_below_its_room(basis: str):
    """Two backends (a small LP per scenario): with degenerate factors the plan runs at its own cadence; a factor on
    every host's densities a little under (over) the reciprocal of the plan's launch room leaves the launch
    unplaceable (placeable): every row of the LP scales with the densities."""
    density = [
        f"environment.{where}[*].density.{name}"
        for where in ("node_types", "cloud.vm_types")
        for name in ("container", "vm")
    ]
    changes = {
        "environment__backends": [
            {"name": "container", "share": 0.7, "cores": 0.05, "memory_gb": 0.5},
            {"name": "vm", "share": 0.3, "cores": 0.05, "memory_gb": 0.5},
        ],
        "environment__node_types": [
            {
                "name": "standard",
                "cores": 188,
                "memory_gb": 1560,
                "density": {"container": 1048, "vm": 300},
                "hour_cost": 12.0,
            },
        ],  # fmt: skip
    }
    doc_cloud = {
        "eligible_share": {"container": 1.0, "vm": 0.5},
        "vm_types": [
            {"name": "burst", "density": {"container": 64, "vm": 32}, "cores": 16, "memory_gb": 64, "hour_cost": 1.0,
             "billed_fraction": 0.2, "max_vms": 200},
        ],
    }  # fmt: skip
    nominal = instance("k0", [fixed("density", density, 1.0)], basis, **changes, environment__cloud=doc_cloud)
    plan = solved(nominal).plan
    assert np.all(assess(nominal, plan, samples=2, seed=0).outcome.cadence == plan.cadence_s)
    scen = sc.draw(nominal, 1, 0)
    b = batch_scenarios.values_of(nominal, scen, sc.values_of(nominal, scen))
    room = float(launch_room(nominal, plan, scen, batch_scenarios.launch_peaks(nominal, b.attempts))[0])
    assert 1.0 - 1e-9 <= room < 2.0  # the plan holds its launch, with less than twice the hosts it asks
    for factor, fits in ((0.99 / room, False), (1.01 / room, True)):
        inst = instance("k0", [fixed("density", density, factor)], basis, **changes, environment__cloud=doc_cloud)
        out = assess(inst, plan, samples=2, seed=0).outcome
        assert np.all(np.isfinite(out.makespan)) == fits


def test_the_risk_text_counts_the_scenarios_that_never_finish():
    """A colocated plan whose launch the hosts hold only at their nominal density: the scenarios with denser-packed
    draws below it never finish, and the text says how many and shows ∞, not 'inf h'."""
    from click.testing import CliRunner

    from trainground.cli import main

    density = '["environment.node_types[*].density.container", "environment.cloud.vm_types[*].density.container"]'
    factor = f"uncertainty={{factors: [{{name: density, paths: {density}, dist: uniform, low: 0.9, high: 1.05}}]}}"
    args = ["risk", str(COLOCATED), "--basis", "steady_state", "--samples", "400"]
    edits = ["schedule.deadline=60d", "schedule.cadence.step=10s", factor]
    result = CliRunner().invoke(main, args + [x for e in edits for x in ("--set", e)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    never = int(text.split(" scenario(s) never finish")[0].rsplit(" ", 1)[1].replace(",", ""))
    assert 0 < never < 400 and "inf h" not in text and "∞" in text
