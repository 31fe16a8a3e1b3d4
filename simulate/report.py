"""The model's predictions beside the simulated figures (MODEL.md §10 output), and their mean over replications."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trainground.models.result import Metrics, Plan
from trainground.simulation.setup import Setup
from trainground.simulation.stage_report import realised_cost, staged_prediction
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding, startup
from trainground.solver.laws import regimes as rg

SPREAD = (
    "makespan_s",
    "startup_s",
    "iteration_mean_s",
    "iteration_p99_s",
    "inflight_mean",
    "inflight_max",
    "group_drop_rate",
    "sandbox_wait_share",
    "realised_cost",
)

RELATIVE_FLOOR = 1e-9  # a predicted figure this small is 0 to a replication's resolution (shares of attempts)


@dataclass
class Report:
    instance: str
    plan: dict
    seed: int
    replications: int
    iterations: int
    deadline_s: float
    count_startup: bool
    launch: str
    simulated: dict
    predicted: dict
    spread: dict = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    series: dict = field(default_factory=dict)
    parts: dict = field(default_factory=dict)
    sandbox_wait: float | None = None  # planning.sandbox_wait of a plan that holds (MODEL §11); None: steady_state

    def to_json(self) -> dict:
        return {
            "instance": self.instance,
            "plan": self.plan,
            "seed": self.seed,
            "replications": self.replications,
            "iterations": self.iterations,
            "deadline_s": self.deadline_s,
            "count_startup": self.count_startup,
            "launch": self.launch,
            "sandbox_wait": self.sandbox_wait,
            "simulated": self.simulated,
            "predicted": self.predicted,
            "spread": self.spread,
            "makespan_parts": self.parts,
            "runs": self.runs,
        }


def predict(
    setup: Setup,
    plan: Plan,
    metrics: Metrics,
    count_startup: bool,
    stages: list[Metrics] | None = None,
    holds: bool = False,
) -> dict:
    """The model's value of each figure (None where it has none): §2 steady state, §8 start-up, the trainer-paced
    part divided by §13's training goodput when the replay injects failures; a staged replay's from its stages'
    ``stages`` metrics (:func:`simulate.stage_report.staged_prediction`). The sandbox wait share is §11's
    Halfin–Whitt share at the plan's sandboxes (:func:`model_wait_share`) for a plan that ``holds``; a plan sized
    on steady_state is sized for the mean load, and the model has no wait figure for it."""
    waits = model_wait_share(setup, plan) if holds else None
    if setup.stages and stages is not None:
        return staged_prediction(setup, plan, stages, count_startup) | {"sandbox_wait_share": waits}
    L, n = plan.cadence_s, setup.iterations
    fill = _fill(setup, metrics.attempts_per_s)
    pace = 1.0 / metrics.training_goodput if setup.failures is not None and metrics.training_goodput else 1.0
    steady = n * L * pace + setup.extra_time
    with_startup = fill + ((n - 1) * L + metrics.update_time_s) * pace + setup.extra_time
    makespan = with_startup if count_startup else steady
    lower, upper = calc.group_drop_bounds(metrics.exceedance, setup.group_size)
    return {
        "makespan_s": makespan,
        "startup_s": fill,
        "iteration_mean_s": L,
        "iteration_p50_s": L,
        "iteration_p99_s": L,
        "iteration_max_s": L,
        "inflight_mean": metrics.inflight_mean,
        "inflight_p99": None,
        "inflight_max": metrics.inflight_peak,
        "mean_version_gap": metrics.mean_version_gap,
        "p99_version_gap": metrics.p99_version_gap,
        "exceedance": metrics.exceedance,
        "group_drop_rate": metrics.group_drop_rate,
        "group_drop_bounds": [float(lower), float(upper)] if setup.policy == "drop" else [0.0, 0.0],
        "effective_intake": metrics.effective_intake,
        "sandbox_wait_share": waits,
        "on_time": bool(makespan <= setup.deadline),
        "lateness_s": makespan - setup.deadline,
        "makespan_steady_s": steady,
        "makespan_with_startup_s": with_startup,
        "update_time_s": metrics.update_time_s,
        "gpu_hours": (plan.inference_gpus + plan.training_gpus) * makespan / 3600,
        "realised_cost": plan.hourly_cost * makespan / 3600,
    } | _reliability(setup, metrics, makespan)


def model_wait_share(setup: Setup, plan: Plan) -> float:
    """The model's share of attempts that wait for a sandbox at the replay's sandboxes (MODEL §11 item 2's
    Halfin–Whitt rule at each backend's capacity, :func:`solver.laws.holding.wait_share`); a staged replay's is
    each stage's at its own sandboxes, weighed by the stage's attempts (its rate times ``n_p·L_p``)."""
    if not setup.stages:
        cut = None  # MODEL §14: the moments of W_τ under a rollout timeout
        if setup.timeout is not None:
            cut = (rg.timeout_mean(setup.occupancy, setup.timeout), rg.pair_min_mean(setup.occupancy, setup.timeout))
        return holding.wait_share(
            setup.occupancy,
            setup.attempts_per_s,
            setup.shares,
            setup.capacity,
            setup.group_size,
            setup.correlation,
            cut,
        )
    assert plan.stages
    firsts = [s.first for s in setup.stages] + [setup.iterations]
    shares, weights = [], []
    for stage, row, lo, hi in zip(setup.stages, plan.stages, firsts, firsts[1:]):
        capacity = tuple(a + b for a, b in zip(stage.local, stage.cloud))
        shares.append(
            holding.wait_share(
                stage.occupancy, stage.attempts_per_s, setup.shares, capacity, setup.group_size, setup.correlation
            )
        )
        weights.append(stage.attempts_per_s * (hi - lo) * row.cadence_s)
    return float(np.dot(shares, weights) / sum(weights)) if sum(weights) > 0 else 0.0


def _fill(setup: Setup, attempts_per_s: float) -> float:
    """MODEL §8's start-up fill at the replay's attempt rate; under a rollout timeout over W_τ (§14), with the
    intake p·F(τ) when cut-short attempts are filtered."""
    if setup.timeout is None:
        occ, g, corr = setup.occupancy, setup.group_size, setup.correlation
        return float(startup.fill(occ, attempts_per_s, setup.batch, g, setup.intake, corr))
    intake = setup.intake * (rg.timeout_cdf(setup.occupancy, setup.timeout) if setup.filter_cut else 1.0)
    batch_time = setup.batch / (intake * attempts_per_s)
    return float(rg.cut_fill(setup.occupancy, batch_time, setup.group_size, setup.correlation, setup.timeout))


def _reliability(setup: Setup, metrics: Metrics, makespan: float) -> dict:
    """MODEL §13's closed forms over the predicted run (none without its terms): failures expected (T/M_train,
    and T·N_s·rate_s per shape), the training goodput and time lost, availability per shape."""
    fp = setup.failures
    if fp is None:
        return {}
    failures = {"training": makespan / fp.training_mtbf if fp.trains else 0.0}
    failures |= {s: makespan * n * r for s, n, r in zip(fp.shapes, fp.replicas, fp.rates)}
    gamma = metrics.training_goodput if fp.trains else None
    return {
        "failures": failures,
        "training_goodput": gamma,
        "training_lost_s": None if gamma is None else makespan * (1 - gamma),
        "availability": dict(metrics.availability or {}),
    }


def makespan_parts(simulated: dict, predicted: dict, cadence: float, iterations: int, count_startup: bool) -> dict:
    """Where the simulated makespan leaves the predicted one, in seconds: the first batch against the
    model's (one cadence, or §8's fill), the n-1 iterations against the cadence, and the last update
    (which the steady model does not count)."""
    first, mean, span = simulated.get("startup_s"), simulated.get("iteration_mean_s"), simulated.get("makespan_s")
    if first is None or span is None:
        return {}
    steps = (iterations - 1) * (mean - cadence) if mean is not None else 0.0
    model_first = predicted["startup_s"] if count_startup else cadence
    rest = span - predicted["makespan_s"] - (first - model_first) - steps
    return {
        "total_s": span - predicted["makespan_s"],
        "startup_s": first - model_first,
        "iterations_s": steps,
        "last_update_s": rest,
    }


def costed(summary: dict, plan: Plan) -> dict:
    """Add GPU-hours and the realised cost (the plan's hourly cost over the simulated makespan)."""
    span = summary["makespan_s"]
    summary["gpu_hours"] = None if span is None else (plan.inference_gpus + plan.training_gpus) * span / 3600
    if span is None:
        summary["realised_cost"] = None
    else:
        summary["realised_cost"] = realised_cost(plan, span) if plan.stages else plan.hourly_cost * span / 3600
    return summary


def combine(runs: list[dict], deadline: float) -> tuple[dict, dict]:
    """The mean over replications of every figure (None if any replication has none), the share on
    time, and the spread (min, max, standard deviation) of the main figures."""
    simulated = _mean(runs)
    simulated["finished"] = all(r["finished"] for r in runs)
    span = simulated.get("makespan_s")
    simulated["on_time"] = bool(span is not None and span <= deadline)
    simulated["lateness_s"] = None if span is None else span - deadline
    simulated["on_time_share"] = float(np.mean([bool(r["on_time"]) for r in runs]))
    simulated["steady_window_s"] = runs[0]["steady_window_s"]
    spread = {}
    for key in SPREAD:
        values = [r.get(key) for r in runs]
        if any(v is None for v in values):
            spread[key] = None
            continue
        x = np.asarray(values, dtype=float)
        spread[key] = {"min": float(x.min()), "max": float(x.max()), "std": float(x.std(ddof=1)) if x.size > 1 else 0.0}
    return simulated, spread


def _mean(items: list[dict]) -> dict:
    out: dict = {}
    keys = list(dict.fromkeys(k for item in items for k in item))
    for key in keys:
        values = [item.get(key) for item in items]
        if all(isinstance(v, dict) for v in values):
            out[key] = _mean_histogram(values) if key == "version_gap_histogram" else _mean(values)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = float(np.mean(values))
        elif any(v is None for v in values) and all(v is None or isinstance(v, (int, float)) for v in values):
            out[key] = None
    return out


def _mean_histogram(hists: list[dict]) -> dict:
    gaps = sorted({k for h in hists for k in h})
    return {k: float(np.mean([h.get(k, 0.0) for h in hists])) for k in gaps}


def model_gap_histogram(setup: Setup, cadence: float, top: int, plan: Plan | None = None) -> dict[int, float]:
    """P(gap = k) per trajectory in the model (each its own lifetime, no drops): P(gap > k-1) - P(gap > k); a
    staged ``plan``'s (MODEL §12) the stages' laws at their cadences, weighed by their iterations."""
    k = np.arange(top + 1)
    if setup.stages and plan is not None and plan.stages:
        weights = np.array([row.iterations for row in plan.stages], dtype=float)
        laws = [calc.exceedance(s.occupancy, row.cadence_s, k) for s, row in zip(setup.stages, plan.stages)]
        above = np.dot(weights, np.array(laws)) / weights.sum()
    elif setup.timeout is not None:  # MODEL §14: over W_τ
        above = np.asarray(rg.timeout_exceedance(setup.occupancy, setup.timeout, cadence, k), dtype=float)
    else:
        above = calc.exceedance(setup.occupancy, cadence, k)
    shares = np.concatenate(([1.0], above[:-1])) - above
    shift = 1 if setup.convention == "post_publish" else 0
    return {int(g + shift): float(s) for g, s in zip(k, shares) if s > 0}


def relative(simulated, predicted) -> float | None:
    """(simulated - predicted) / |predicted|, None where either is missing or the prediction is 0 (or below
    RELATIVE_FLOOR in size, which no replication resolves: a wait share of 1e-11 against 0 is no -100 %)."""
    if simulated is None or predicted is None or isinstance(simulated, bool) or isinstance(predicted, bool):
        return None
    if abs(predicted) < RELATIVE_FLOOR or not math.isfinite(predicted):
        return None
    return (simulated - predicted) / abs(predicted)
