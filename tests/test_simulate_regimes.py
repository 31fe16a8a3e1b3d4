"""The batch-regime replay (simulate/regimes.py) against MODEL §14's closed forms (solver/laws/regimes.py).

Where a figure is a mean over i.i.d. batches the replay must agree within ``Z`` standard errors of the
sample (the sample's own standard deviation over the square root of its size; a ratio of two sums by the
delta method; a count by its binomial law). ``Z = 4``: the draws are seeded, so each assertion is fixed,
and a correct replay fails one on a fresh seed with probability about 6e-5. The closed forms are mean rows
(``D = max(N·tokens/S, M_N)``, ``max(D, U)``) that a replay's mean meets where one term of each max
binds in every batch: the instances below are chosen so, and the tests check that it is so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from trainground.models.edits import edited
from trainground.models.errors import InstanceError
from trainground.models.load import load_instance
from trainground.models.result import Plan, ShapeReplicas
from trainground.simulation import regimes as sim
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as rg

REGIMES = Path(__file__).resolve().parents[1] / "instances" / "regimes"
Z = 4.0
SEED_SUPPLY = 10000 * 75.0  # the seed's 10,000 GPUs generating at 75 tokens/s
SEED_GROUPS = 1250  # 10,000 training GPUs: U = 210 s
SMALL = {"workload.batch_trajectories": 256, "workload.iterations": 2000}  # N = 256: 2,000 batches, 0.5 M draws


def colocated(**changes):
    """The seed week colocated (τ = 3,600 s) with ``changes`` (MODEL paths)."""
    inst = load_instance(REGIMES / "seed-week-colocated.yaml")
    return edited(inst, changes) if changes else inst


def pipelined(k: int, **changes):
    """The same, pipelined with ``steps_ahead`` k (τ = 3,600 s)."""
    return colocated(**{"regime": {"mode": "pipelined", "steps_ahead": k, "rollout_timeout": 3600.0}, **changes})


def run_of(inst, supply=SEED_SUPPLY, groups=SEED_GROUPS, seed=1) -> sim.BatchRun:
    return sim.replicate(sim.batch_setup(inst, supply, groups), [seed, 0])


def se(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(values.size))


def ratio_se(num: np.ndarray, den: np.ndarray) -> float:
    """Standard error of sum(num)/sum(den) over i.i.d. pairs (delta method)."""
    ratio = num.sum() / den.sum()
    return float(np.std(num - ratio * den, ddof=1) / (math.sqrt(num.size) * den.mean()))


def closed_phase(inst, setup: sim.BatchSetup) -> float:
    """D = max(N·tokens/S, M_N) of MODEL §14, tokens scaled by the timeout."""
    occ, tau = setup.occupancy, setup.timeout
    tokens = inst.workload.tokens_per_attempt * rg.token_scale(occ, tau)
    slowest = rg.expected_max(occ, rg.batch_draws(inst, setup.attempts), tau)
    return rg.generation_phase(setup.attempts, tokens, setup.supply, slowest)


def test_the_colocated_seed_week_is_the_check_of_model_14():
    """All 10,000 GPUs generating, τ = 3,600 s, t_s = 0: every batch waits the full hour, L = 3,810 s, 44.1 days,
    busy 3.7 %; each batch launches all 4,096 attempts on its one backend, consumed at gap 0."""
    inst = colocated()
    run = run_of(inst)
    out = sim.figures(run)
    assert run.setup.attempts == 4096
    assert np.all(run.batches.slowest == 3600.0) and np.all(run.phase == 3600.0)
    assert np.all(run.iteration == 3810.0)
    assert round(out["makespan_s"] / 86400, 1) == 44.1
    busy = rg.busy_share(4096, 32768 * rg.token_scale(run.setup.occupancy, 3600.0), SEED_SUPPLY, 3600.0)
    assert round(busy, 3) == 0.037
    assert abs(out["generation_busy_share"] - busy) < Z * se(run.batches.tokens) / (SEED_SUPPLY * 3600.0)
    assert out["launch_peak"] == {"container": 4096.0} and out["launch_peak_max"] == {"container": 4096}
    assert out["consumed_mean_gap"] == 0.0 and out["consumed_p99_gap"] == 0


def test_the_slowest_of_a_seed_batch_is_the_check_figure():
    """N = 4,096, independent: the batch maxima's mean is 63,370 s without a timeout and their p10 and p90 are
    39,177 s and 94,525 s (the share of maxima below each within its binomial error); with τ = 3,600 s every
    maximum is τ (P(max < τ) = F(τ)^4096 ≈ e^-584)."""
    run = run_of(colocated(**{"regime.rollout_timeout": None, "workload.iterations": 1500}))
    maxima = run.batches.slowest
    assert abs(maxima.mean() - 63370.0) < Z * se(maxima)
    assert abs(maxima.mean() - rg.expected_max(run.setup.occupancy, 4096, None)) < Z * se(maxima)
    for level, value in ((0.1, 39177.0), (0.9, 94525.0)):
        assert abs(np.mean(maxima <= value) - level) < Z * math.sqrt(level * (1 - level) / maxima.size)
    cut = run_of(colocated(**{"workload.iterations": 1500})).batches.slowest
    assert sim.figures(run_of(colocated()))["slowest_attempt_s"] == pytest.approx(3600.0, abs=0.1)
    assert np.all(cut == 3600.0)


@pytest.mark.parametrize("correlation", ["independent", "comonotone"])
@pytest.mark.parametrize("tau", [None, 20000.0])
def test_the_mean_slowest_attempt_is_the_expected_max(correlation, tau):
    """N = 256 attempts (N' = 256 independent, 32 comonotone); τ = 20,000 s cuts the max in 64 % and 12 % of
    batches, so the cut and the uncut part both count. A batch's tokens average N·tokens_per_attempt·token
    scale (a comonotone group's members each count their shared lifetime)."""
    inst = colocated(**SMALL, **{"freshness.group_correlation": correlation, "regime.rollout_timeout": tau})
    run = run_of(inst)
    maxima = run.batches.slowest
    draws = 256 if correlation == "independent" else 32
    assert rg.batch_draws(inst, run.setup.attempts) == draws
    assert abs(maxima.mean() - rg.expected_max(run.setup.occupancy, draws, tau)) < Z * se(maxima)
    tokens = 256 * inst.workload.tokens_per_attempt * rg.token_scale(run.setup.occupancy, tau)
    assert abs(run.batches.tokens.mean() - tokens) < Z * se(run.batches.tokens)
    if tau is not None:
        assert 0.05 < np.mean(maxima == tau) < 0.95


@pytest.mark.parametrize("mode", ["colocated", "pipelined k=0", "pipelined k=1"])
def test_the_iteration_time_is_the_least_cadence_of_the_mode(mode):
    """No timeout, t_s = 30 s (switch 45 s colocated), U = 210 s: the slowest attempt (~20,000 s) sets D in every
    batch and, for k = 1, outlasts U in every batch, so the mean iteration is the closed form's cadence; the busy
    share is N·tokens/(S·D)."""
    regime = {"weight_sync_time": 30.0}
    if mode == "colocated":
        regime.update(mode="colocated", switch_time=45.0)
    else:
        regime.update(mode="pipelined", steps_ahead=int(mode[-1]))
    inst = colocated(**SMALL, regime=regime)
    run = run_of(inst)
    setup, out = run.setup, sim.figures(run)
    assert np.all(run.phase == run.batches.slowest) and np.all(run.phase > setup.update_s)
    phase = closed_phase(inst, setup)
    if mode == "colocated":
        cadence = rg.colocated_cadence(phase, 210.0, 30.0, 45.0)
    else:
        cadence = rg.pipelined_cadence(phase, 210.0, 30.0, setup.steps_ahead)
    assert abs(out["iteration_mean_s"] - cadence) < Z * se(run.iteration)
    assert abs(out["slowest_attempt_s"] - phase) < Z * se(run.batches.slowest)
    tokens = inst.workload.tokens_per_attempt
    busy = rg.busy_share(setup.attempts, tokens, SEED_SUPPLY, phase)
    assert abs(out["generation_busy_share"] - busy) < Z * ratio_se(run.batches.tokens, SEED_SUPPLY * run.phase)
    if mode == "pipelined k=1":
        assert out["generation_bound_share"] == 1.0 and out["update_bound_share"] == 0.0


@pytest.mark.parametrize("supply", [2.0e5, SEED_SUPPLY])
def test_one_step_off_with_a_timeout_needs_the_timeout_whatever_the_fleet(supply):
    """MODEL §14's check: pipelined k = 1 with τ = 3,600 s needs L >= 3,600 s + t_s whatever the fleet (every
    batch waits τ); with the start-up counted T = D + (n-1)·L + U, without it n·L (t_s = 20 s, U = 210 s)."""
    counted = pipelined(1, **{"regime.weight_sync_time": 20.0, "schedule.count_startup": True})
    run = run_of(counted, supply=supply)
    assert np.all(run.iteration == 3620.0) and run.iteration.size == 999
    assert run.makespan == pytest.approx(3600.0 + 999 * 3620.0 + 210.0, rel=1e-12)
    steady = run_of(pipelined(1, **{"regime.weight_sync_time": 20.0}), supply=supply)
    assert not steady.setup.counts_startup
    assert steady.makespan == pytest.approx(1000 * 3620.0, rel=1e-12)


def test_a_slow_trainer_paces_one_step_off():
    """U = 5,250 s (50 groups) above τ = 3,600 s: every iteration is U + t_s, every one bound by the update."""
    run = run_of(pipelined(1, **{"regime.weight_sync_time": 20.0}), groups=50)
    out = sim.figures(run)
    assert run.setup.update_s == 5250.0
    assert np.all(run.iteration == 5270.0)
    assert out["update_bound_share"] == 1.0 and out["generation_bound_share"] == 0.0


@pytest.mark.parametrize("counts_startup", [False, True])
@pytest.mark.parametrize("groups", [50, 400, 1250])
def test_one_step_off_is_never_slower_than_generate_then_train_on_the_same_draws(counts_startup, groups):
    """The same batches (same seed; the draws do not depend on k) under k = 0 and k = 1, U from 210 s to 5,250 s
    around the slowest attempt (no timeout): every iteration and the makespan of k = 1 are at most k = 0's."""
    changes = {**SMALL, "regime.rollout_timeout": None, "schedule.count_startup": counts_startup}
    changes["regime.weight_sync_time"] = 15.0
    first, second = (sim.batch_setup(pipelined(k, **changes), SEED_SUPPLY, groups) for k in (0, 1))
    batches = sim.draw_batches(first, np.random.default_rng([5, 0]))
    again = sim.draw_batches(second, np.random.default_rng([5, 0]))
    assert np.array_equal(batches.slowest, again.slowest) and np.array_equal(batches.tokens, again.tokens)
    k0, k1 = sim.timeline(first, batches), sim.timeline(second, batches)
    assert k1.makespan <= k0.makespan
    assert np.all(k1.iteration <= k0.iteration[-k1.iteration.size :])
    assert 0.0 < np.mean(k1.iteration < k0.iteration[-k1.iteration.size :])


def test_a_small_supply_binds_the_throughput():
    """S = 500 tokens/s: N·tokens/S = 16,777 s is above the slowest attempt of every batch (τ = 3,600 s), so
    D is the batch's tokens over S, whose mean is N·tokens/S; the supply is busy the whole phase."""
    inst = colocated(**SMALL)
    run = run_of(inst, supply=500.0)
    tokens = inst.workload.tokens_per_attempt * rg.token_scale(run.setup.occupancy, 3600.0)
    assert rg.generation_phase(256, tokens, 500.0, 3600.0) == pytest.approx(256 * tokens / 500.0)
    assert np.all(run.phase == run.batches.tokens / 500.0) and np.all(run.phase > 3600.0)
    assert abs(run.phase.mean() - closed_phase(inst, run.setup)) < Z * se(run.phase)
    assert sim.figures(run)["generation_busy_share"] == pytest.approx(1.0, rel=1e-12)


def test_the_launch_peak_per_backend_is_n_times_its_share():
    """Two backends (0.7, 0.3): each batch's attempts on a backend average N·s_b within their binomial error; the
    largest over the batches is above it (row 6 under hold adds β·sqrt(N·s_b·(1-s_b)) for that spread)."""
    backends = [
        {"name": "container", "share": 0.7, "cores": 0.05, "memory_gb": 0.5},
        {"name": "microvm", "share": 0.3, "cores": 0.25, "memory_gb": 2.0},
    ]
    node = {"name": "standard", "cores": 188, "memory_gb": 1560, "density": {"container": 1048, "microvm": 524}}
    inst = colocated(
        **SMALL,
        **{"environment.backends": backends, "environment.node_types": [{**node, "hour_cost": 12.0}]},
        **{"environment.cloud.eligible_share": {"container": 1.0}},
    )
    out = sim.figures(run_of(inst))
    for name, share in (("container", 0.7), ("microvm", 0.3)):
        error = math.sqrt(256 * share * (1 - share) / 2000)
        assert abs(out["launch_peak"][name] - 256 * share) < Z * error
        assert out["launch_peak_max"][name] > 256 * share + 2 * math.sqrt(256 * share * (1 - share))


def test_a_run_without_sandboxes_has_no_launch_peak():
    none = {"environment.backends": [], "environment.node_types": [], "environment.cloud": {}}
    inst = colocated(**SMALL, **none)
    out = sim.figures(run_of(inst))
    assert out["launch_peak"] == {} and out["launch_peak_max"] == {}
    assert out["slowest_attempt_s"] == pytest.approx(3600.0, rel=1e-3)


@pytest.mark.parametrize(
    ("regime", "startup", "convention", "mean", "p99"),
    [
        ({"mode": "colocated"}, False, "consumer", 0.0, 0),
        ({"mode": "pipelined", "steps_ahead": 0}, True, "post_publish", 1.0, 1),
        ({"mode": "pipelined", "steps_ahead": 1}, False, "consumer", 1.0, 1),
        ({"mode": "pipelined", "steps_ahead": 1}, False, "post_publish", 2.0, 2),
        ({"mode": "pipelined", "steps_ahead": 1}, True, "consumer", 1.0 - 1.0 / 2000, 1),
    ],
)
def test_the_consumed_gap_is_k(regime, startup, convention, mean, p99):
    """Gap k for every batch (+1 under post_publish), read from the versions published before each launch; with
    the start-up counted the first batch of k = 1 is launched on version 0 and consumed by update 0 (gap 0)."""
    inst = colocated(**SMALL, regime={**regime, "rollout_timeout": 3600.0}, **{"freshness.gap_convention": convention})
    inst = edited(inst, {"schedule.count_startup": startup})
    out = sim.figures(run_of(inst))
    assert out["consumed_mean_gap"] == pytest.approx(mean, rel=1e-12) and out["consumed_p99_gap"] == p99


def test_filtered_timeouts_leave_batches_short_of_b_as_often_as_chance_says():
    """truncated: filter with τ = 3,600 s and p = 0.9: N = 8·ceil(256/(8·0.9·F(τ))) attempts, of which each is a
    sample with probability p·F(τ); the batch trains on what it has."""
    inst = colocated(**SMALL, **{"regime.truncated": "filter", "workload.intake_rate": 0.9})
    run = run_of(inst)
    occ = run.setup.occupancy
    share = 0.9 * rg.timeout_cdf(occ, 3600.0)
    attempts = rg.attempts_per_batch(256, 8, share)
    assert run.setup.attempts == attempts == 8 * math.ceil(256 / (8 * share))
    error = math.sqrt(attempts * share * (1 - share) / 2000)
    assert abs(sim.figures(run)["effective_mean"] - attempts * share) < Z * error
    assert 0.0 < sim.figures(run)["short_batch_share"] < 0.5


def test_replications_are_seeded_and_differ():
    setup = sim.batch_setup(colocated(**{"workload.iterations": 50, "regime.rollout_timeout": None}), 7.5e5, 1250)
    twice = sim.replications(setup, 2, seed=3)
    assert twice == sim.replications(setup, 2, seed=3)
    assert twice[0]["slowest_attempt_s"] != twice[1]["slowest_attempt_s"]
    mean = sim.mean_figures(twice)
    assert mean["slowest_attempt_s"] == pytest.approx(
        (twice[0]["slowest_attempt_s"] + twice[1]["slowest_attempt_s"]) / 2
    )
    assert mean["generation_bound_share"] is None and set(mean["launch_peak"]) == {"container"}


def test_a_plans_supply_and_groups_set_the_replay():
    """Colocated: S = a·x·g·r; pipelined with §13's replica failures: a_s = a·(1 - rate·(restart + mean(W_τ)/2))."""
    plan = Plan.model_construct(
        inference=[ShapeReplicas(shape="tp8", pool="main", replicas=1000, gpus=8000)], training_groups=250
    )
    setup = sim.setup_of_plan(colocated(), plan)
    assert setup.supply == 8000 * 75.0 and setup.update_s == 300.0 * 7000 / 2000
    reliable = pipelined(0, reliability={"gpu_mtbf": "50000h", "replica_restart_time": "5m"})
    occ = calc.occupancy_of(reliable.environment.occupancy)
    kept = 1.0 - 8 / (50000 * 3600.0) * (300.0 + rg.timeout_mean(occ, 3600.0) / 2)
    assert sim.plan_supply(reliable, plan) == pytest.approx(8000 * 75.0 * kept, rel=1e-12)


def test_a_plan_with_a_shape_the_instance_lacks_is_named():
    plan = Plan.model_construct(inference=[ShapeReplicas(shape="tp4", pool="main", replicas=10, gpus=40)])
    with pytest.raises(
        InstanceError, match=r"plan.json: plan.inference\[0\].shape: 'tp4' is not a shape \(have: tp8\)"
    ):
        sim.plan_supply(colocated(), plan, label="plan.json")


@pytest.mark.parametrize(
    ("inst", "supply", "groups", "field"),
    [
        (lambda: colocated(regime={"mode": "async"}), 7.5e5, 1250, "regime.mode"),
        (lambda: colocated(), 0.0, 1250, "plan.inference"),
        (lambda: colocated(), 7.5e5, 0, "plan.training_groups"),
        (lambda: colocated(), math.inf, 1250, "plan.inference"),
        (
            lambda: colocated(
                **{
                    "training.update_time": {
                        "law": "table",
                        "points": [{"gpus": 800, "seconds": 900}, {"gpus": 1600, "seconds": 480}],
                    }
                }
            ),
            7.5e5,
            1250,
            "training.update_time",
        ),
    ],
)
def test_decisions_the_replay_cannot_play_name_the_field(inst, supply, groups, field):
    with pytest.raises(InstanceError, match=f"seed-week-colocated.yaml: {field}: "):
        sim.batch_setup(inst(), supply, groups, label="seed-week-colocated.yaml")


def test_the_sync_is_the_regimes_else_reliabilitys():
    """t_s = regime.weight_sync_time, else reliability.weight_sync_time; it is in every iteration of k = 0."""
    own = sim.batch_setup(colocated(**{"regime.weight_sync_time": 40.0}), SEED_SUPPLY, SEED_GROUPS)
    inherited = colocated(reliability={"weight_sync_time": "25s"})
    run = run_of(inherited)
    assert own.sync_s == 40.0 and run.setup.sync_s == 25.0
    assert np.all(run.iteration == 3600.0 + 210.0 + 25.0)


@pytest.mark.parametrize(
    "regime", [{"mode": "colocated", "switch_time": 60.0}, {"mode": "pipelined", "steps_ahead": 0}]
)
def test_generate_then_train_keeps_its_order(regime):
    """k = 0 and colocated: each batch launches after the previous one's generation, update, sync (and switch),
    and its update ends U after its generation."""
    run = run_of(colocated(**SMALL, regime={**regime, "weight_sync_time": 12.0}))
    gap = 12.0 + regime.get("switch_time", 0.0)
    assert np.allclose(run.trained, run.launch + run.phase + 210.0, rtol=1e-12)
    assert np.allclose(run.launch[1:], run.trained[:-1] + gap, rtol=1e-12)


@pytest.mark.parametrize("startup", [False, True])
def test_one_step_off_overlaps_one_update_with_one_generation(startup):
    """k = 1: batch i's update starts when batch i+1 launches, which waits for batch i's generation, the update
    before it and the sync; the run ends with the last update (counted) or the last sync (steady)."""
    inst = pipelined(1, **SMALL, **{"regime.rollout_timeout": None, "regime.weight_sync_time": 12.0})
    run = run_of(edited(inst, {"schedule.count_startup": startup}), groups=10)  # U = 26,250 s, near M_N
    start = run.trained - run.setup.update_s
    assert np.allclose(start[:-1], run.launch[1:], rtol=1e-12)
    assert np.all(run.launch[1:] >= run.launch[:-1] + run.phase[:-1])
    assert np.all(run.launch[2:] >= run.trained[:-2] + 12.0 - 1e-6)
    assert run.makespan == pytest.approx(run.trained[-1] if startup else run.launch[-1] + run.iteration[-1], rel=1e-12)


def test_an_empirical_law_is_resampled():
    """Samples (600, 1,200, 3,000, 9,000 s), τ = 5,000 s, N = 16 (B = 16): the batch maxima are cut samples
    whose mean is the empirical law's expected max; a batch's tokens average N·tokens_per_attempt·token scale.
    A replay of fewer than one iteration is refused."""
    law = {"distribution": "empirical", "samples": [600.0, 1200.0, 3000.0, 9000.0]}
    changes = {"environment.occupancy": law, "workload.batch_trajectories": 16, "regime.rollout_timeout": 5000.0}
    inst = colocated(**changes, **{"workload.iterations": 4000})
    run = run_of(inst)
    occ = run.setup.occupancy
    assert set(np.unique(run.batches.slowest)) <= {600.0, 1200.0, 3000.0, 5000.0}
    assert abs(run.batches.slowest.mean() - rg.expected_max(occ, 16, 5000.0)) < Z * se(run.batches.slowest)
    tokens = 16 * inst.workload.tokens_per_attempt * rg.token_scale(occ, 5000.0)
    assert abs(run.batches.tokens.mean() - tokens) < Z * se(run.batches.tokens)
    with pytest.raises(InstanceError, match="iterations: must be >= 1, got 0"):
        sim.batch_setup(inst, SEED_SUPPLY, SEED_GROUPS, iterations=0)
