"""Planning for a confidence α (MODEL.md §9): the scenario set, the cost bound, and what the result reports.

:func:`setup` draws the ``S`` scenarios of the instance's ``uncertainty`` section, reads what
each asks of a plan (:mod:`solver.confidence_table`) and makes the model extension
(:mod:`solver.confidence_model`). :func:`lower_bound` tightens the cost bound of each pair with
the levels every plan of the pair must reach. :func:`report` evaluates the plan found in the
scenarios it was solved for and in fresh ones (another seed), and :func:`what_drove` says what
it bought over the deterministic plan and which need binds in the worst scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import ConfidenceReport, Plan, Status
from trainground.solver import calculus as calc
from trainground.solver import scenarios as sc
from trainground.solver.bounds import inference_lower_bound, sandbox_lower_bound
from trainground.solver.coefficients import gpu_prices, reserved_cost
from trainground.solver.confidence_model import ConfidenceBlocks
from trainground.solver.confidence_table import Requirements, requirements
from trainground.solver.pairs import Pairs
from trainground.solver.scenario_deadline import at_deadline
from trainground.solver.scenario_hosts import room
from trainground.solver.tolerances import REL_TOL, TIE_TOL

CHECK_SAMPLES = 10_000  # fresh scenarios the out-of-sample share is estimated on
CHECK_SEED_OFFSET = 1  # their seed: the section's seed plus this


@dataclass
class Confidence:
    """A confidence solve's scenario set and model extension."""

    alpha: float
    scenarios: sc.Scenarios
    req: Requirements
    blocks: ConfidenceBlocks
    allowance: float = 0.0  # MODEL §11's Δ: scenario s is on time iff T_s + Δ <= deadline


def alpha_of(inst: Instance, override: float | None = None) -> float | None:
    """The confidence to plan for: ``override`` (solve --confidence), else the section's, else None."""
    if override is not None:
        return override
    return None if inst.uncertainty is None else inst.uncertainty.confidence


CONFIDENCE_WITHOUT_GOODPUT = (
    "confidence solves do not count failures, checkpoints, weight sync or preemptions (docs/model.md §13) yet: "
    "solve without --confidence and check the plan with `trainground risk`, which counts them in every scenario"
)


def setup(inst: Instance, pairs: Pairs, alpha: float, allowance: float = 0.0) -> Confidence:
    """The scenarios and model extension of a confidence-α solve whose scenarios carry the run-variance
    allowance ``allowance`` (MODEL §11; InstanceError with MODEL §13's terms)."""
    if inst.reliable:
        raise InstanceError(inst.name or "", [Problem("reliability", CONFIDENCE_WITHOUT_GOODPUT)])
    scen = sc.draw(inst)
    req = requirements(inst, scen, allowance)
    return Confidence(alpha, scen, req, ConfidenceBlocks(inst, pairs, req, alpha), allowance)


def lower_bound(inst: Instance, pairs: Pairs, conf: Confidence) -> np.ndarray:
    """(pairs,) a lower bound on the hourly cost of a confidence plan at each pair: every part of the
    nominal bound (:func:`solver.bounds.hourly_lower_bound`) evaluated at the larger of the pair's own
    need and the level η every plan of the pair reaches in the scenarios, and at the least of the
    class's corner points (:func:`corner_bound`; inf: no plan)."""
    eta = conf.blocks.lower_levels()
    ok = conf.blocks.possible() & np.isfinite(eta["supply"])
    levels = {name: np.where(ok, values, 0.0) for name, values in eta.items()}
    bound = np.maximum(_bound_at(inst, pairs, levels), corner_bound(inst, pairs, conf, ok, levels))
    return np.where(ok, bound, np.inf)


def _bound_at(inst: Instance, pairs: Pairs, levels: dict[str, np.ndarray]) -> np.ndarray:
    """(pairs,) the nominal bound's parts at each pair raised to ``levels`` (supply, groups, steady, peak)."""
    attempts = np.maximum(pairs.attempts, levels["supply"])
    groups = np.maximum(pairs.groups, levels["groups"]).astype(int)
    steady_scale = np.maximum(1.0, levels["steady"] / pairs.inflight.sum(axis=1))
    peak_scale = np.maximum(steady_scale, levels["peak"] / pairs.peak.sum(axis=1))
    loaded = replace(
        pairs,
        attempts=pairs.attempts * peak_scale,
        inflight=pairs.inflight * steady_scale[:, None],
        peak=pairs.peak * peak_scale[:, None],
    )
    raised = replace(pairs, groups=groups)
    train = gpu_prices(inst)[inst.training.pool] * inst.training.gpus_per_group * groups
    return (
        reserved_cost(inst) + train + inference_lower_bound(inst, raised, attempts) + sandbox_lower_bound(inst, loaded)
    )


CORNER_ROWS = 200_000  # (pair, corner) evaluations per batch of :func:`corner_bound`


def corner_bound(inst: Instance, pairs: Pairs, conf: Confidence, ok: np.ndarray, eta: dict) -> np.ndarray:
    """(pairs,) the least of the nominal bound over the corner points of each pair's K class
    (:meth:`ConfidenceBlocks.corners`): a plan's levels lie above one of them, and each part of the
    bound only grows with the levels (0 where not ``ok``, inf where the class has no corner)."""
    out = np.zeros(pairs.size)
    for kept in np.unique(pairs.kept[ok]).tolist():
        rows = np.flatnonzero(ok & (pairs.kept == kept))
        corners = conf.blocks.corners(int(kept))
        if corners.shape[0] == 0:
            out[rows] = np.inf
            continue
        step = max(1, CORNER_ROWS // corners.shape[0])
        for chunk in np.array_split(rows, -(-rows.size // step)):
            at = np.repeat(chunk, corners.shape[0])
            sub = _take(pairs, at)
            levels = {
                "supply": np.maximum(np.tile(corners[:, 0], chunk.size), eta["supply"][at]),
                "groups": np.maximum(np.tile(corners[:, 1], chunk.size), eta["groups"][at]),
                "steady": eta["steady"][at],
                "peak": np.maximum(np.tile(corners[:, 2], chunk.size), eta["peak"][at]),
            }
            out[chunk] = _bound_at(inst, sub, levels).reshape(chunk.size, -1).min(axis=1)
    return out


def _take(pairs: Pairs, rows: np.ndarray) -> Pairs:
    """The pair table's rows ``rows`` (repeats allowed)."""
    arrays = {
        f.name: getattr(pairs, f.name)[rows] for f in fields(pairs) if isinstance(getattr(pairs, f.name), np.ndarray)
    }
    return replace(pairs, **arrays)


def class_bounds(live, conf: Confidence) -> np.ndarray:
    """(pairs,) a lower bound on the hourly cost of any plan of each pair, from one LP relaxation per K
    (with the class's hull rows, :mod:`solver.confidence_cuts`, within a fraction of a percent of the
    MIP's optimum on the bundled instances, at a small part of its time).

    Scenario needs depend on K alone, and a pair's own rows only get looser as its cadence grows
    (attempts, in-flight load and fewest groups never rise; unmeetable scenarios only add up), so
    the slowest pair of each K relaxes every pair of that K with its needs at least as high and its
    unmeetable scenarios a superset: the least hourly cost of its relaxation bounds theirs (0 elsewhere)."""
    pairs, blocks = live.pairs, conf.blocks
    possible = blocks.possible()
    out = np.zeros(pairs.size)
    for kept in np.unique(pairs.kept[possible]):
        rows = np.flatnonzero(possible & (pairs.kept == kept))
        top = int(rows[np.argmax(pairs.cadence[rows])])
        unmet = blocks.unmet(top)
        looser = [
            r
            for r in rows.tolist()
            if pairs.attempts[r] >= pairs.attempts[top]
            and pairs.groups[r] >= pairs.groups[top]
            and np.all(pairs.peak[r] >= pairs.peak[top])
            and np.all(pairs.inflight[r] >= pairs.inflight[top])
            and np.all(blocks.unmet(r) >= unmet)
        ]
        outcome = live.run("hourly_cost", [top], relaxation=True)
        if outcome.status == Status.OPTIMAL:
            value = outcome.objective_value
        elif outcome.status == Status.INFEASIBLE:
            value = np.inf
        else:
            value = outcome.bound if outcome.bound is not None else 0.0
        out[looser] = value * (1 - TIE_TOL) if np.isfinite(value) else value
    return out


def report(inst: Instance, plan: Plan, conf: Confidence, check_samples: int = CHECK_SAMPLES) -> ConfidenceReport:
    """The plan's on-time share in its own scenarios and in ``check_samples`` fresh ones (MODEL §9 keys)."""
    inside = sc.evaluate(inst, plan, conf.scenarios, conf.allowance).on_time
    seed = (conf.scenarios.seed or 0) + CHECK_SEED_OFFSET
    fresh = sc.evaluate(inst, plan, sc.draw(inst, check_samples, seed), conf.allowance).on_time
    lo, hi = calc.wilson(int(fresh.sum()), fresh.size)
    return ConfidenceReport(
        target=conf.alpha,
        scenarios=conf.scenarios.size,
        needed=conf.blocks.needed,
        groups=int(conf.req.weight.size),
        in_sample=float(inside.mean()),
        out_of_sample=float(fresh.mean()),
        out_of_sample_interval=[lo, hi],
        check_samples=check_samples,
        seed=conf.scenarios.seed,
        check_seed=seed,
    )


def what_drove(
    inst: Instance,
    plan: Plan,
    deterministic: Plan | None,
    scen: sc.Scenarios,
    worst: float = 0.1,
    allowance: float = 0.0,
) -> dict:
    """What the confidence plan holds beyond the deterministic optimum (decision deltas), and, over the
    ``worst`` share of the scenarios ``scen`` (the smallest margin over the three needs), how often each
    need is the tightest, with the factors that reach it; ``late``: scenarios with a margin below 1."""
    margins = need_margins(inst, plan, scen, allowance)
    tight = np.nanmin(np.stack(list(margins.values())), axis=0)
    count = max(1, int(round(worst * tight.size)))
    worst_rows = np.argsort(tight, kind="stable")[:count]
    names = list(margins)
    binding = np.argmin(np.stack([margins[n][worst_rows] for n in names]), axis=0)
    return {
        "deltas": plan_deltas(plan, deterministic) if deterministic is not None else {},
        "worst": count,
        "binding": {n: int((binding == i).sum()) for i, n in enumerate(names)},
        "factors": factors_by_need(inst),
        "late": int((tight < 1.0 - REL_TOL).sum()),
        "scenarios": int(tight.size),
    }


def need_margins(inst: Instance, plan: Plan, scen: sc.Scenarios, allowance: float = 0.0) -> dict[str, np.ndarray]:
    """(S,) per need, what the plan holds over what the scenario asks at its deadline pace (1 = exactly)."""
    at = at_deadline(inst, scen, [plan.versions_kept], allowance)
    replicas = np.array([next(r.replicas for r in plan.inference if r.shape == s.name) for s in inst.inference.shapes])
    supply = at.supply_per_replica[:, 0, :] @ replicas
    update = np.nan_to_num(sc.update_time(inst, scen, plan.training_gpus), nan=np.inf)
    hosts = room(inst, plan, scen, sc.values_of(inst, scen).peak_to_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "token supply": supply / at.token_demand[:, 0],
            "update time": at.pace[:, 0] / update,
            "sandbox hosts": hosts / at.level[:, 0],
        }


def factors_by_need(inst: Instance) -> dict[str, list[str]]:
    """The factors whose paths enter each need (token supply: demand, throughput, lifetimes via drops;
    update time: the update law; sandbox hosts: lifetimes and demand)."""
    reach = {
        "token supply": ("inference.", "workload.", "environment.occupancy", "freshness.", "schedule."),
        "update time": ("training.", "schedule."),
        "sandbox hosts": ("environment.occupancy", "workload.", "environment.peak_to_mean", "schedule."),
    }
    factors = inst.uncertainty.factors if inst.uncertainty is not None else []
    return {
        need: [f.name for f in factors if any(p.startswith(prefixes) for p in f.paths)]
        for need, prefixes in reach.items()
    }


def plan_deltas(plan: Plan, base: Plan) -> dict[str, int | float]:
    """Decisions of ``plan`` minus those of ``base``, in the instance's names (zero deltas left out)."""
    out: dict[str, int | float] = {}
    for r in plan.inference:
        out[f"replicas {r.shape}"] = r.replicas - next((b.replicas for b in base.inference if b.shape == r.shape), 0)
    out["training groups"] = plan.training_groups - base.training_groups
    for kind, mine, theirs in (("nodes", plan.local_nodes, base.local_nodes), ("VMs", plan.cloud_vms, base.cloud_vms)):
        for c in mine:
            out[f"{kind} {c.type}"] = c.count - next((b.count for b in theirs if b.type == c.type), 0)
    out["cadence_s"] = plan.cadence_s - base.cadence_s
    out["versions kept"] = plan.versions_kept - base.versions_kept
    out["total_cost"] = plan.total_cost - base.total_cost
    return {k: v for k, v in out.items() if v}
