"""`risk` (MODEL.md §9): a fixed plan run through N scenarios of the instance's uncertainty factors.

The plan's capacity is fixed; :func:`solver.uncertainty.scenarios.evaluate` gives its realised cadence,
makespan, cost and on-time verdict in every scenario at once (a staged plan's, MODEL §12, stage by
stage: :func:`solver.uncertainty.stages.evaluate_staged`). This module turns those arrays
into the report: the on-time probability with its Wilson 95 % interval, percentiles of the
makespan and the realised cost, the expected lateness, a one-at-a-time sensitivity per factor,
and (on request) a replay of the first scenarios by the trajectory-level simulator of §10.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from trainground.models.instance import Instance
from trainground.models.load import InstanceError, Problem
from trainground.models.regime_rules import refuse_regime_replays, refuse_unplanned
from trainground.models.result import Metrics, Plan
from trainground.solver.laws.calculus import wilson
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.stages import evaluate_any

SENSITIVITY = (0.1, 0.9)  # MODEL §9: each factor at its 10th and 90th percentile, the others at their median
PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
SAMPLES = 10_000
"""Scenarios a risk report draws unless told (``uncertainty.samples`` is the S of a confidence solve): the
Wilson interval is then at most ±1 point wide, and evaluating them takes well under a second."""


def spread(values: np.ndarray) -> dict[str, float]:
    """Mean and p50/p90/p99 (empirical quantiles: observed values, exact with infinite ones)."""
    out = {"mean": float(np.mean(values))}
    for key, p in PERCENTILES.items():
        out[key] = float(np.quantile(values, p, method="inverted_cdf"))
    return out


@dataclass(frozen=True)
class FactorEffect:
    """One factor at its 10th and 90th percentile, every other factor at its median (MODEL §9)."""

    name: str
    low: float  # multiplier at the 10th percentile
    high: float  # multiplier at the 90th percentile
    makespan_s_low: float
    makespan_s_high: float
    on_time_low: bool
    on_time_high: bool

    @property
    def swing_s(self) -> float:
        """|T_s(high) - T_s(low)|: how much this factor alone moves the makespan."""
        return abs(self.makespan_s_high - self.makespan_s_low)


@dataclass
class Risk:
    instance: str
    plan: Plan
    samples: int
    seed: int
    deadline_s: float
    outcome: sc.Outcome
    factors: list[FactorEffect]
    median_makespan_s: float  # every factor at its median
    replays: list[dict] = field(default_factory=list)

    @property
    def on_time_count(self) -> int:
        return int(np.count_nonzero(self.outcome.on_time))

    @property
    def on_time_probability(self) -> float:
        return self.on_time_count / self.samples

    @property
    def on_time_interval(self) -> tuple[float, float]:
        return wilson(self.on_time_count, self.samples)

    def to_json(self) -> dict:
        """MODEL §9's `risk --json` keys (infinite makespans, where no cadence works, as null)."""
        out = {
            "instance": self.instance,
            "plan": self.plan.model_dump(mode="json"),
            "samples": self.samples,
            "seed": self.seed,
            "deadline_s": self.deadline_s,
            "allowance_s": self.outcome.allowance,
            "on_time_probability": self.on_time_probability,
            "on_time_interval": list(self.on_time_interval),
            "makespan_s": spread(self.outcome.makespan),
            "total_cost": spread(self.outcome.total_cost),
            "expected_lateness_s": float(np.mean(self.outcome.lateness)),
            "median_makespan_s": self.median_makespan_s,
            "factors": [{k: v for k, v in dataclasses.asdict(f).items()} for f in self.factors],
        }
        if self.replays:
            out["simulation"] = {"replays": self.replays, **replay_summary(self.replays)}
        return _finite(out)


def _finite(node):
    if isinstance(node, float):
        return node if math.isfinite(node) else None
    if isinstance(node, dict):
        return {k: _finite(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_finite(v) for v in node]
    return node


def assess(inst: Instance, plan: Plan, samples: int = SAMPLES, seed: int | None = None, allowance: float = 0.0) -> Risk:
    """``plan`` (verified against ``inst``) over ``samples`` scenarios drawn with ``seed`` (default the
    uncertainty section's); a scenario is on time iff ``T_s + allowance <= deadline`` (``allowance``: the
    plan's Δ when it was sized under hold, MODEL §11, so the run's variance is counted beside the inputs')."""
    refuse_unplanned(inst)
    scen = sc.draw(inst, samples, seed)
    outcome = evaluate_any(inst, plan, scen, allowance)
    effects, median = sensitivity(inst, plan, allowance)
    return Risk(
        instance=inst.name or "",
        plan=plan,
        samples=scen.size,
        seed=int(scen.seed),
        deadline_s=inst.schedule.deadline,
        outcome=outcome,
        factors=effects,
        median_makespan_s=median,
    )


def sensitivity(inst: Instance, plan: Plan, allowance: float = 0.0) -> tuple[list[FactorEffect], float]:
    """Per factor its one-at-a-time effect, and the makespan with every factor at its median."""
    factors = inst.uncertainty.factors
    median = np.array([f.quantile(0.5) for f in factors])
    rows = [median]
    for j, f in enumerate(factors):
        for p in SENSITIVITY:
            row = median.copy()
            row[j] = f.quantile(p)
            rows.append(row)
    out = evaluate_any(inst, plan, sc.from_draws(inst, np.array(rows)), allowance)
    effects = []
    for j, f in enumerate(factors):
        lo, hi = 1 + 2 * j, 2 + 2 * j
        effects.append(
            FactorEffect(
                name=f.name,
                low=float(rows[lo][j]),
                high=float(rows[hi][j]),
                makespan_s_low=float(out.makespan[lo]),
                makespan_s_high=float(out.makespan[hi]),
                on_time_low=bool(out.on_time[lo]),
                on_time_high=bool(out.on_time[hi]),
            )
        )
    return effects, float(out.makespan[0])


# ---------------------------------------------------------------- the simulator beside the analysis (MODEL §10)

STAGED_SCENARIOS = Problem(
    "stages",
    "replays in scenarios (risk --simulate, simulate --scenarios) are not available with stages yet; "
    "`simulate` replays the staged plan at its nominal values",
)  # the analytic risk of a staged plan is solver.uncertainty.stages's
REPLAY_ITERATIONS = 100
"""Iterations a replay simulates by default (the deadline pro rata, as `simulate --iterations` does): a
scenario whose sandboxes cannot hold the plan's launches queues without bound, and a full run of such a
scenario takes minutes and gigabytes; 100 iterations show the same verdict."""


def replay(
    inst: Instance,
    plan: Plan,
    metrics: Metrics,
    risk: Risk,
    count: int,
    iterations: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[dict]:
    """Replay the first ``count`` scenarios of ``risk`` trajectory by trajectory, each once, over
    ``iterations`` (default :data:`REPLAY_ITERATIONS`, at most n; the deadline pro rata): the
    scenario's fields, group launches at the plan's attempt rate at its realised cadence in the scenario
    (:func:`simulation.scenarios.setup_in`, MODEL §10), the scenario's update time. One row per scenario:
    analytic makespan of the same iterations (n'·L_s + extra, or §8's) and simulated makespan, with
    their verdicts (a scenario whose scaled fields do not form a valid instance is reported with its
    reason and not replayed)."""
    from trainground.simulation.engine import replicate
    from trainground.simulation.scenarios import setup_in
    from trainground.simulation.summary import summarize

    if inst.stages is not None:
        raise InstanceError(inst.name or "instance", [STAGED_SCENARIOS])
    refuse_regime_replays(inst)  # a scenario's replay reads the seed's regime only
    scen = sc.draw(inst, risk.samples, risk.seed)
    rows = []
    count = min(count, scen.size)
    n = inst.workload.iterations
    short = min(iterations or REPLAY_ITERATIONS, n)
    out = risk.outcome
    for s in range(count):
        span = float(out.makespan[s] - (n - short) * out.cadence[s])
        row = {
            "scenario": s,
            "draws": dict(zip(scen.factors, scen.draws[s].tolist())),
            "iterations": short,
            "analytic_makespan_s": span,
            "analytic_on_time": bool(out.on_time[s]),
        }
        try:
            setup = setup_in(inst, plan, metrics, scen, s, out, iterations=short)
        except InstanceError as exc:
            rows.append(row | {"simulated_makespan_s": None, "simulated_on_time": None, "skipped": exc.message})
            continue
        summary = summarize(setup, replicate(setup, [risk.seed, s]))
        rows.append(
            row
            | {
                "simulated_makespan_s": summary["makespan_s"],
                "simulated_on_time": summary["on_time"],
                "deadline_s": setup.deadline,
                "sandbox_wait_share": summary.get("sandbox_wait_share"),
                "group_drop_rate": summary.get("group_drop_rate"),
            }
        )
        if on_progress is not None:
            on_progress(s + 1, count)
    return rows


def replay_summary(rows: list[dict]) -> dict:
    """On-time shares of the replayed scenarios, analytic and simulated, and where they disagree."""
    done = [r for r in rows if r.get("simulated_on_time") is not None]
    return {
        "replayed": len(done),
        "analytic_on_time_share": float(np.mean([r["analytic_on_time"] for r in done])) if done else None,
        "simulated_on_time_share": float(np.mean([r["simulated_on_time"] for r in done])) if done else None,
        "disagree": sum(r["analytic_on_time"] != r["simulated_on_time"] for r in done),
    }
