"""MODEL.md §13 in `simulate`: the injected failures agree with §13's closed forms on long runs, within the
sampling error of the replications, and the replay without §13's terms draws exactly what it drew before."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from trainground.models.load import validate
from trainground.simulation.engine import replicate
from trainground.simulation.failures import FailurePlan, Trainer
from trainground.simulation.runner import checked_metrics, seed_for
from trainground.simulation.setup import setup_of
from trainground.solver.laws import calculus as calc
from trainground.solver.solve import solve_instance

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
Z = 3.5  # standard errors a mean may lie from its expectation (two-sided: about 5 in 10,000)


def _trainer_plan(mtbf: float, restart: float, checkpoint: float, interval: float) -> FailurePlan:
    return FailurePlan(
        training_mtbf=mtbf,
        restart=restart,
        checkpoint=checkpoint,
        interval=interval,
        shapes=(),
        replicas=(),
        per_replica=(),
        rates=(),
        replica_restart=0.0,
        weight_sync=0.0,
        cadence=1.0,
        availability=1.0,
    )


def test_a_busy_trainer_loses_the_closed_form_share_of_its_time():
    # U >= L: the trainer never waits for a batch, so §13's gamma is its share of useful time (to first order
    # in 1/M_train; the exact renewal differs by O((tau/M)^2), far below the error here).
    mtbf, restart, checkpoint = 200_000.0, 600.0, 60.0
    tau = math.sqrt(2 * checkpoint * mtbf)
    gamma = 1 - checkpoint / tau - (restart + tau / 2) / mtbf
    shares, counts, spans = [], [], []
    for r in range(40):
        trainer = Trainer(_trainer_plan(mtbf, restart, checkpoint, tau), np.random.default_rng([7, r]))
        work = 0.0
        for _ in range(4_000):  # 4,000 updates of 500 s: 2 Ms of work, about 11 failures per run
            trainer.update(trainer.take(trainer.free), 500.0)
            work += 500.0
        shares.append(work / trainer.free)
        counts.append(trainer.failures)
        spans.append(trainer.free)
    shares, counts = np.array(shares), np.array(counts)
    assert abs(shares.mean() - gamma) <= Z * shares.std(ddof=1) / math.sqrt(shares.size) + (tau / mtbf) ** 2
    expected = np.mean(spans) / mtbf  # Poisson: mean = variance
    assert abs(counts.mean() - expected) <= Z * math.sqrt(expected / counts.size)


def test_an_idle_trainer_loses_no_more_than_the_closed_form():
    # Updates of 100 s every 600 s: a stall is absorbed by the wait for the next batch, and failures while
    # idle lose only the uncheckpointed work, so the run ends no later than n·L/gamma.
    mtbf, restart, checkpoint = 100_000.0, 300.0, 30.0
    tau = math.sqrt(2 * checkpoint * mtbf)
    gamma = 1 - checkpoint / tau - (restart + tau / 2) / mtbf
    ends = []
    for r in range(20):
        trainer = Trainer(_trainer_plan(mtbf, restart, checkpoint, tau), np.random.default_rng([3, r]))
        for j in range(2_000):
            trainer.update(trainer.take(600.0 * (j + 1)), 100.0)
        ends.append(trainer.free)
    assert np.mean(ends) < 2_000 * 600.0 / gamma
    assert np.mean(ends) > 2_000 * 600.0  # failures still cost time


def _seed_week(**reliability) -> tuple:
    data = yaml.safe_load((INSTANCES / "seed-week-75.yaml").read_text())
    data["planning"] = {"basis": "steady_state"}
    data["reliability"] = reliability
    inst = validate(data, "seed.yaml")
    plan = solve_instance(inst).plan
    return inst, plan, checked_metrics(inst, plan, "seed.yaml")


def test_training_failures_and_time_lost_agree_with_the_closed_form_on_the_seed():
    # A 20,000 h MTBF on the seed's plan: a failure every ~5.7 h, gamma ~0.88; U(m) >= L - checkpoint_time.
    inst, plan, metrics = _seed_week(gpu_mtbf="20000h", restart_time="15m", checkpoint_time="60s")
    assert metrics.update_time_s >= plan.cadence_s - 60
    setup = setup_of(inst, plan, metrics, iterations=120)
    fp = setup.failures
    runs = [replicate(setup, seed_for(11, r), record=False) for r in range(20)]
    counts = np.array([run.failures["failures"]["training"] for run in runs], dtype=float)
    spans = np.array([run.makespan for run in runs])
    lost = np.array(
        [
            sum(run.failures["time_lost_s"][k] for k in ("training_restart", "training_rework", "checkpoints"))
            for run in runs
        ]
    )
    expected = spans.mean() / fp.training_mtbf
    assert abs(counts.mean() - expected) <= Z * math.sqrt(expected / counts.size)
    share = lost / spans
    gamma = metrics.training_goodput
    assert abs(share.mean() - (1 - gamma)) <= Z * share.std(ddof=1) / math.sqrt(share.size)
    reported = np.array([run.failures["training_goodput"] for run in runs])
    assert reported == pytest.approx(1 - share)


def _spot(iterations: int):
    data = yaml.safe_load((INSTANCES / "seed-week-spot.yaml").read_text())
    data["planning"] = {"basis": "steady_state"}
    inst = validate(data, "spot.yaml")
    plan = solve_instance(inst).plan
    metrics = checked_metrics(inst, plan, "spot.yaml")
    return inst, plan, metrics, setup_of(inst, plan, metrics, iterations=iterations)


def _chain_loss(occ: calc.Occupancy, rate: float) -> tuple[float, float]:
    """(work lost per member, work lost per ended attempt), in attempts, when each attempt is ended at rate
    ``rate`` and relaunched with a fresh lifetime: x/(1 - p) and x/p, with x = E[(E/W)·1(E < W)] =
    E[(1 - e^{-rW}(1 + rW))/(rW)] and p = P(E < W)."""
    u = (np.arange(200_000) + 0.5) / 200_000
    w = np.exp(occ.mu + occ.sigma * np.sqrt(2) * _erfinv(2 * u - 1))
    rw = rate * w
    x = np.mean((1 - np.exp(-rw) * (1 + rw)) / rw)
    p = np.mean(1 - np.exp(-rw))
    return float(x / (1 - p)), float(x / p)


def _erfinv(y: np.ndarray) -> np.ndarray:
    from scipy.special import erfinv

    return erfinv(y)


def test_replica_events_take_the_closed_form_share_of_the_fleet():
    inst, plan, metrics, setup = _spot(60)
    fp = setup.failures
    spot = fp.shapes.index("tp8-spot")
    n, rate = fp.replicas[spot], fp.rates[spot]
    runs = [replicate(setup, seed_for(5, r), record=False) for r in range(20)]
    spans = np.array([run.makespan for run in runs])
    events = np.array([run.failures["failures"]["tp8-spot"] for run in runs], dtype=float)
    expected = n * rate * spans.mean()
    assert abs(events.mean() - expected) <= Z * math.sqrt(expected / events.size)
    # Downtime: each event takes one replica out for replica_restart_time: rate·restart of the fleet's time.
    down = np.array([run.failures["time_lost_s"]["replica_restart:tp8-spot"] for run in runs]) / (n * spans)
    assert abs(down.mean() - rate * fp.replica_restart) <= Z * down.std(ddof=1) / math.sqrt(down.size)
    # Work lost: per ended attempt, the chain's expectation; per member about §13's rate·mean(W)/2.
    occ = setup.occupancy
    per_member, per_kill = _chain_loss(occ, rate)
    # (1 - e^{-x}(1 + x))/x <= x/2: §13's first-order figure bounds the chain's, within 10 % on the seed's tail.
    assert 0.9 * rate * occ.mean / 2 <= per_member <= rate * occ.mean / 2
    work = np.array([run.failures["time_lost_s"]["replica_rework:tp8-spot"] for run in runs]) * fp.per_replica[spot]
    kills = np.array([run.failures["relaunched_attempts"]["tp8-spot"] for run in runs], dtype=float)
    share = work / kills
    assert abs(share.mean() - per_kill) <= Z * share.std(ddof=1) / math.sqrt(share.size)
    # A replica that is not always busy loses less work than §13's busy replica: its availability is at least a_s.
    simulated = np.array([run.failures["availability"]["tp8-spot"] for run in runs])
    assert simulated.mean() >= metrics.availability["tp8-spot"]


def test_weight_sync_pauses_every_published_version():
    inst, plan, metrics = _seed_week(weight_sync_time="16s")
    setup = setup_of(inst, plan, metrics, iterations=40)
    run = replicate(setup, seed_for(2, 0), record=False)
    assert run.failures["time_lost_s"]["weight_sync"] == 16 * 40
    assert run.failures["launch_delay_mean_s"] > 0
    # The fleet keeps up on average (supply · (1 - 16/L) >= demand): the pauses delay launches by seconds, not
    # cadences.
    assert run.failures["launch_delay_mean_s"] < plan.cadence_s


def test_without_the_section_the_replay_is_unchanged():
    data = yaml.safe_load((INSTANCES / "seed-week-75.yaml").read_text())
    data["planning"] = {"basis": "steady_state"}
    inst = validate(data, "seed.yaml")
    plan = solve_instance(inst).plan
    metrics = checked_metrics(inst, plan, "seed.yaml")
    setup = setup_of(inst, plan, metrics, iterations=30)
    assert setup.failures is None
    run = replicate(setup, seed_for(1, 0))
    assert run.failures is None
    # The same makespan as the recursion of §10 over the run's own groups.
    assert run.makespan == pytest.approx(run.boundaries[-1] + metrics.update_time_s + inst.schedule.extra_time)
