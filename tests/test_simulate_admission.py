"""The admission replay (simulate/admission*.py) against closed forms of MODEL §14 where they hold.

Small runs (B = 64, g = 8: eight groups a batch) with the update time and the sync set on the setup, so that each
closed form's terms are the test's own numbers. With deterministic lifetimes (an empirical law of one value) the
replay's steady state is exact: a saturated run cycles each slot in ``M + U + t_s`` and consumes at gap ``k``.
With a lognormal law a figure that is a mean over many attempts must agree within the tolerance each test states
(the draws are seeded, so each assertion is fixed).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from trainground.models.edits import edited
from trainground.models.errors import InstanceError
from trainground.models.load import load_instance
from trainground.simulation import admission as ad
from trainground.simulation import admission_replay as ar
from trainground.simulation.admission_figures import figures
from trainground.solver.laws import regimes as rg

ROOT = Path(__file__).resolve().parents[1]
ADMISSION = ROOT / "instances" / "regimes" / "seed-week-admission-8.yaml"
AREAL = ROOT / "instances" / "regimes" / "areal-1.5b-128gpus.yaml"
FIXED = {"environment.occupancy": {"distribution": "empirical", "samples": [100.0, 100.0]}}  # every lifetime 100 s
SHORT = {"environment.occupancy": {"distribution": "lognormal", "median": 100.0, "p99": 300.0}}


def small(**changes):
    """The seed week under admission with B = 64 (8 groups of 8), 400 iterations, k = 2, and ``changes``."""
    base = {"workload.batch_trajectories": 64, "workload.iterations": 400, "regime.steps_ahead": 2}
    return edited(load_instance(ADMISSION), {**base, **changes})


def setup(inst, cadence: float, update: float, sync: float = 0.0) -> ad.AdmissionSetup:
    """The replay at ``cadence`` with U and t_s given (the supply is not a limit on time)."""
    return dataclasses.replace(ad.admission_setup(inst, cadence, 1e9, 1000), update_s=update, sync_s=sync)


def gaps(run: ad.AdmissionRun, first_batch: int = 0) -> np.ndarray:
    """The consumed gap of each group taken by batch ``first_batch`` or later."""
    taken = np.flatnonzero(run.consumed >= first_batch)
    return run.consumed[taken] - np.searchsorted(run.publishes, run.launch[taken], side="right")


def test_the_two_timelines_replay_the_same_run():
    """The batch-by-batch timeline and the event-by-event one give the same launches, batches and publishes from
    one seed (the seed's long-tailed law, slots binding at k = 2)."""
    inst = small(**{"workload.iterations": 300})
    s = setup(inst, 60.0, 150.0, 7.0)
    fast, events = ar.replicate(s, [3, 0]), ar.replicate(s, [3, 0], events=True)
    assert fast.finished and events.finished
    common = min(fast.launched, events.launched)
    assert np.array_equal(fast.boundaries, events.boundaries) and np.array_equal(fast.publishes, events.publishes)
    assert np.array_equal(fast.launch[:common], events.launch[:common])
    assert np.array_equal(fast.consumed[:common], events.consumed[:common])
    assert fast.makespan == events.makespan == fast.boundaries[-1] + 150.0 + inst.schedule.extra_time
    assert figures(fast)["held_back_share"] > 0.5  # the slots bind: the test covers held launches


def test_a_saturated_run_cycles_each_slot_in_m_plus_u_plus_ts_and_consumes_at_gap_k():
    """M = 100 s, U = 20 s, t_s = 10 s, k = 2, groups due every 3.75 s (L = 30 s): the 24 slots bind. In the steady
    state a publish frees a batch's 8 groups, which launch together there, complete 100 s later and are the batch
    k + 1 later: b_{j+3} = b_j + 130 s, the mean iteration (M + U + t_s)/(k + 1) = 43.3 s (the admission row with
    k + 1 for its k + 1/2: no group waits for its boundary), every gap k, and right after each publish the
    attempts of every burst launched less than M before it run."""
    run = ar.replicate(setup(small(**FIXED), 30.0, 20.0, 10.0), [0, 0])
    b, p = run.boundaries, run.publishes
    steady = slice(200, None)
    assert np.allclose((b[3:] - b[:-3])[steady], 130.0, rtol=0, atol=1e-9)
    periods = (b.size - 200) // 3
    assert (b[199 + 3 * periods] - b[199]) / (3 * periods) == pytest.approx(130.0 / 3.0, rel=1e-12)
    assert set(gaps(run, 200).tolist()) == {2}
    late = run.launch >= p[199]
    assert np.all(np.isin(run.launch[late], p))  # every launch is a publish's
    running = np.array([8 * np.count_nonzero((run.launch <= x) & (run.launch + 100.0 > x)) for x in p[:-1]])
    bursts = np.array([64 * np.count_nonzero(p[: j + 1] > x - 100.0) for j, x in enumerate(p[:-1])])
    assert np.array_equal(running[200:], bursts[200:])  # in the steady state, each burst in flight is a batch
    out = figures(run)
    assert out["launch_peak"] == pytest.approx(running.mean(), rel=1e-12)
    assert 2 * 64 <= out["launch_peak"] <= 3 * 64 and out["held_back_share"] > 0.9


def test_when_the_trainer_binds_the_cadence_is_u_and_the_gap_k():
    """U = 60 s above both the due pace (30 s) and the slots' (100 + 60)/3 = 53.3 s: batches every U, and the slots
    fill behind the trainer, so every group launches at a publish and is consumed k batches after it."""
    run = ar.replicate(setup(small(**FIXED), 30.0, 60.0), [0, 0])
    assert np.allclose(np.diff(run.boundaries)[200:], 60.0, rtol=0, atol=1e-9)
    assert set(gaps(run, 200).tolist()) == {2}


def test_a_free_run_keeps_the_plans_cadence_littles_law_and_counts_gaps_from_publishes():
    """A short-tailed law (median 100 s, p99 300 s), k = 8, L = 40 s, U = 20 s, t_s = 5 s: the slots never bind,
    batches come every L, the time-average in flight is R_raw·mean(W) (Little's law; its standard error here is
    about 0.1 %), each attempt moves to mean(W)/L new versions, a group's slowest member averages E[M_8]. A
    consumed gap counts the publishes (b + U + t_s) before its launch: (E[M_g] + U + t_s)/L with evenly spaced
    publishes, which the boundaries' jitter moves by a few hundredths."""
    inst = small(**SHORT, **{"workload.iterations": 3000, "regime.steps_ahead": 8})
    s = setup(inst, 40.0, 20.0, 5.0)
    out = figures(ar.replicate(s, [0, 0]))
    occ, rate = s.occupancy, 64 / 40.0
    group_max = rg.expected_max(occ, 8, None)
    assert out["held_back_share"] == 0.0
    assert out["iteration_mean_s"] == pytest.approx(40.0, rel=1e-3)
    assert out["attempts_per_s"] == pytest.approx(rate, rel=1e-3)
    assert out["inflight_mean"] == pytest.approx(rate * occ.mean, rel=0.005)
    assert out["version_switches"] == pytest.approx(occ.mean / 40.0, rel=0.01)
    assert out["slowest_attempt_s"] == pytest.approx(group_max, rel=0.005)
    assert abs(out["consumed_mean_gap"] - (group_max + 25.0) / 40.0) < 0.1
    assert out["consumed_mean_gap"] - group_max / 40.0 > 0.4  # the boundary's reading E[M_g]/L counts fewer


def test_re_prefills_follow_the_length_bias_of_running_attempts():
    """recompute: prefix at 0.1 tokens per context token, 2,000 context tokens: each publish re-prefills every
    running attempt, R·mean(W)·0.1·(2,000 + tokens·E[W²]/(2·E[W]²)) per cadence (MODEL §14's closed form)."""
    prefix = {"regime.recompute": "prefix", "regime.prefill_cost": 0.1, "regime.context_tokens": 2000}
    inst = small(**SHORT, **prefix, **{"workload.iterations": 3000, "regime.steps_ahead": 8})
    s = setup(inst, 40.0, 20.0, 5.0)
    out = figures(ar.replicate(s, [0, 0]))
    occ, rate, tokens = s.occupancy, 64 / 40.0, inst.workload.tokens_per_attempt
    refill = rate * occ.mean * 0.1 * (2000 + tokens * rg.length_bias(occ, None)) / 40.0
    assert out["recompute_share"] == pytest.approx(refill / (rate * tokens + refill), rel=0.02)
    assert out["token_demand_per_s"] == pytest.approx(rate * tokens + refill, rel=0.005)
    assert out["generation_busy_share"] == pytest.approx(out["token_demand_per_s"] / (1e9 * (1 - 5.0 / 40.0)), rel=0.01)


def test_a_timeout_with_filter_and_group_intake_is_replayed_event_by_event():
    """τ = 150 s under filter, p = 0.8 per group: groups are due at B/(L·p·F(τ)) attempts/s and complete by τ; a
    batch takes whole groups, so it trains on B plus the last group's overshoot and comes every L·(its samples)/B
    (renewal: the samples arrive at B per L)."""
    cut = {"regime.rollout_timeout": 150.0, "regime.truncated": "filter", "workload.intake_rate": 0.8}
    inst = small(**SHORT, **cut, **{"workload.iterations": 1500, "regime.steps_ahead": 8})
    s = setup(inst, 40.0, 20.0, 5.0)
    assert not s.every_group_samples
    run = ar.replicate(s, [0, 0])
    out = figures(run)
    occ = s.occupancy
    assert out["attempts_per_s"] == pytest.approx(64 / (40.0 * 0.8 * rg.timeout_cdf(occ, 150.0)), rel=0.01)
    assert out["slowest_attempt_s"] == pytest.approx(rg.expected_max(occ, 8, 150.0), rel=0.005)
    assert run.draws.finish[: run.launched].max() <= 150.0
    taken = run.consumed >= 0
    per_batch = run.draws.samples[: run.launched][taken].sum() / run.boundaries.size
    assert 64 <= per_batch < 64 + 8
    assert out["iteration_mean_s"] == pytest.approx(40.0 * per_batch / 64, rel=0.01)


def test_the_concurrency_cap_paces_launches():
    """max_concurrent_attempts 64 with 100 s lifetimes: 8 groups run at once, a batch's worth every 100 s."""
    run = ar.replicate(setup(small(**FIXED, **{"regime.max_concurrent_attempts": 64}), 30.0, 20.0), [0, 0])
    assert np.allclose(np.diff(run.boundaries)[100:], 100.0, rtol=0, atol=1e-9)
    assert figures(run)["inflight_max"] == 64


def test_slots_held_by_groups_that_cannot_fill_a_batch_stop_the_run():
    """k = 1 under filter with τ at F(τ) = 0.41: the 16 slots hold groups of about 3.3 samples, never 64: no batch
    forms, the run does not finish and its makespan is infinite."""
    cut = {"regime.steps_ahead": 1, "regime.rollout_timeout": 90.0, "regime.truncated": "filter"}
    run = ar.replicate(setup(small(**SHORT, **cut, **{"workload.iterations": 20}), 40.0, 20.0), [0, 0])
    assert not run.finished and run.makespan == math.inf and run.boundaries.size == 0
    assert run.launched == 16
    out = figures(run)
    assert out["makespan_s"] == math.inf and out["iteration_mean_s"] is None


@pytest.mark.parametrize(
    ("inst", "cadence", "field"),
    [
        (lambda: small(regime={"mode": "pipelined", "steps_ahead": 1}), 40.0, "regime.staleness"),
        (lambda: small(), 0.0, "plan.cadence_s"),
    ],
)
def test_decisions_the_replay_cannot_play_name_the_field(inst, cadence, field):
    with pytest.raises(InstanceError, match=f"a.yaml: {field}: "):
        ad.admission_setup(inst(), cadence, 1e6, 100, label="a.yaml")


def test_simulate_prints_an_admission_plans_replay_beside_the_model(tmp_path):
    """AReaL's run under admission at k = 8 (steady_state): `simulate` replays the plan solve printed, each figure
    beside the model's; the seed regime's engine options are refused by name."""
    from trainground.cli import main

    regime = "{mode: async, staleness: admission, steps_ahead: 8, in_flight_updates: true, rollout_timeout: 553s}"
    edits = ["--set", f"regime={regime}"]
    solved = CliRunner().invoke(main, ["solve", str(AREAL), *edits, "--no-levers", "--json"])
    assert solved.exit_code == 0, solved.output
    plan = tmp_path / "plan.json"
    plan.write_text(solved.stdout)
    args = ["simulate", str(AREAL), *edits, "--plan", str(plan), "--iterations", "30", "--replications", "2"]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert "2 replications of the async admission k=8, in-flight updates plan" in shown.stdout
    assert "consumed gap, mean" in shown.stdout and "on time: 2 of 2" in shown.stdout
    report = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    figs = report["figures"]
    assert report["regime"] == {"mode": "async", "staleness": "admission", "steps_ahead": 8.0}
    assert figs["iteration_mean_s"]["model"] == json.loads(solved.stdout)["plan"]["cadence_s"] == 200.0
    for key in ("slowest_attempt_s", "attempts_per_s", "inflight_mean", "version_switches"):
        assert figs[key]["simulated"] == pytest.approx(figs[key]["model"], rel=0.02), key
    traced = CliRunner().invoke(main, [*args, "--trace", str(tmp_path / "trace")])
    assert traced.exit_code == 2 and "--trace does not apply to an admission run's replay" in traced.stderr
