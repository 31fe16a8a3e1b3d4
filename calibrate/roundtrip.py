"""The logged run of a framework step log as a plan, and the round trip on it.

A framework's step log holds no per-trajectory times, so a batch run's slowest attempt is taken as the
generation phase itself: the instance written for the logged run gets, as its lifetime law, a point mass at the
mean generation phase of the steps (``empirical``, two equal samples; a save or a validation is timed apart from
the generation, so every step's counts), its tokens per attempt are the logged mean response length and its batch
the logged responses per step. The replay's
generation phase is then ``D = max(M_N, N·tokens/S)`` (MODEL.md §14) with ``M_N`` that mean and ``N·tokens/S``
the batch's tokens at the fitted tokens/s per GPU, which the same steps measured.

The round trip (``calibrate --holdout`` with ``--into``, ``-o`` and ``--plan``): the step log is cut in two, the
first half alone is calibrated and written as the instance and the plan, the plan is replayed by ``simulate``'s
batch replay, and the replay's mean iteration is set beside the second half's logged mean step time (steps with
a save or a validation left out: their own terms) and beside the naive prediction, the first half's mean logged
step time. Nothing of the second half enters the instance, the plan or the replay.
"""

from __future__ import annotations

import copy
import math
from dataclasses import fields
from pathlib import Path

import numpy as np

from trainground.calibrate.figures import Figure, LoggedRun, percentile_interval, resample
from trainground.calibrate.logs import Steps
from trainground.calibrate.stepreader import FrameworkSteps
from trainground.models.instance import Instance
from trainground.models.result import CostTerms, Count, Placement, Plan, PoolUse, ShapeReplicas
from trainground.solver.verify import regimes as batch_rows
from trainground.solver.verify.plan import verify_plan

MAX_STEPS = 50  # grid steps above the model's cadence tried before the plan is given up
REPLICATIONS = 4  # replays of the logged plan behind the round trip's prediction
# the instance fields a logged plan's cadence is found from (a save or a validation is a term of its own)
PLAN_FIELDS = (
    "inference.shapes",
    "training.update_time",
    "environment.occupancy",
    "workload.",
    "regime.switch_time",
    "regime.weight_sync_time",
)


def first_half(steps: Steps, extra: FrameworkSteps) -> tuple[Steps, FrameworkSteps]:
    """The first ``rows // 2`` steps: every per-step array of both cut down, the rest shared."""
    keep = np.arange(steps.rows) < steps.rows // 2
    return _rows(steps, keep, steps.rows), _rows(extra, keep, steps.rows)


def _rows(obj, keep: np.ndarray, rows: int):
    out = copy.copy(obj)
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (rows,):
            setattr(out, f.name, value[keep])
        elif isinstance(value, dict) and value and all(isinstance(v, np.ndarray) for v in value.values()):
            setattr(out, f.name, {k: v[keep] if v.shape[:1] == (rows,) else v for k, v in value.items()})
        elif isinstance(value, list):
            setattr(out, f.name, list(value))
    return out


def logged_run(steps: Steps, extra: FrameworkSteps, rng, replicates: int) -> tuple[LoggedRun | None, str]:
    """The logged run's generation phase, tokens per attempt and batch, over the steps that logged them (the
    steps the tokens/s per GPU is measured over); None and why when the log times no generation phase."""
    gen = steps.generation_s
    name = Path(steps.file).name
    if gen is None or not extra.terms.generation:
        return None, "the log times no generation phase of its own (a batch's slowest attempt cannot be had)"
    ok = np.isfinite(gen)
    if not ok.any():
        return None, "no step has its generation phase"
    keys = " + ".join(extra.terms.generation)
    slowest = _mean_figure(
        "slowest_attempt_s",
        gen[ok],
        rng,
        replicates,
        "s",
        f"{name}: {keys}",
        f"a batch's slowest attempt taken as the generation phase itself (no per-trajectory times): mean {keys}",
    )
    run = LoggedRun(slowest)
    tokens, count = extra.response_tokens, extra.responses
    if tokens is not None and count is not None:
        good = ok & np.isfinite(tokens) & np.isfinite(count) & (count > 0)
        if good.any():
            run.tokens_per_attempt = Figure(
                "tokens_per_attempt",
                float(tokens[good].sum() / count[good].sum()),
                *_ratio_interval(tokens[good], count[good], rng, replicates),
                int(good.sum()),
                "tokens",
                f"{name}: {', '.join(extra.token_keys)}",
                "mean response length: response tokens over responses",
            )
            run.batch = Figure(
                "batch_trajectories",
                float(np.rint(np.median(count[good]))),
                None,
                None,
                int(good.sum()),
                "responses",
                f"{name}: {', '.join(extra.token_keys)}",
                "responses per step (the median): step tokens over a prompt + response",
            )
    return run, ""


def _mean_figure(key, values, rng, replicates, unit, source, note) -> Figure:
    lo, hi = (None, None)
    if values.size > 1:
        lo, hi = percentile_interval(resample(rng, values.size, replicates) @ values / values.size)
    return Figure(key, float(values.mean()), lo, hi, int(values.size), unit, source, note)


def _ratio_interval(num, den, rng, replicates) -> tuple[float | None, float | None]:
    if num.size < 2:
        return None, None
    w = resample(rng, num.size, replicates)
    return percentile_interval((w @ num) / (w @ den))


def batch_plan(inst: Instance, training_gpus: float, generating_gpus: float | None) -> tuple[Plan | None, list[str]]:
    """The logged configuration of a batch run (colocated or pipelined, MODEL §14) as a plan of ``inst``: its
    generating GPUs as replicas of the instance's one shape, its training GPUs as groups, one version kept, and
    the smallest grid cadence at or above the model's iteration (``D + U + t_s (+ switch_time)``, or
    ``max(D, U) + t_s`` one step off) at which the verifier finds nothing wrong; None and why otherwise."""
    r = inst.regime
    if r is None or not r.batched:
        return None, [f"the regime ({'async' if r is None else r.label}) is not a batch run's (colocated, pipelined)"]
    if len(inst.inference.shapes) != 1:
        return None, ["the instance has several inference shapes: the logged run's generating GPUs fit one"]
    inst = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": "steady_state"})})
    gpus = generating_gpus if generating_gpus is not None else (training_gpus if r.mode == "colocated" else None)
    if gpus is None:
        return None, ["the generating GPUs of a pipelined run are not in the log: give --inference-gpus"]
    shape, t = inst.inference.shapes[0], inst.training
    replicas = math.ceil(gpus / shape.gpus_per_replica - 1e-9)
    groups = max(t.min_groups, round(training_gpus / t.gpus_per_group))
    grid = inst.schedule.cadence
    first = _first_cadence(inst, _plan(inst, replicas, groups, 0.0))
    violations: list[str] = []
    for j in range(first, first + MAX_STEPS):
        cadence = round(grid.min + j * grid.step, 9)
        plan = _plan(inst, replicas, groups, cadence)
        violations = verify_plan(inst, plan).violations
        if not violations:
            return plan, []
    return None, [f"up to cadence {cadence:g} s: {v}" for v in violations]


def _first_cadence(inst: Instance, plan: Plan) -> int:
    """The index of the grid point at or below the model's iteration time (the verifier's reading of §14), from
    which the search goes up."""
    from trainground.solver.verify import laws

    b = batch_rows.read_batch(inst, laws.law_of(inst.environment.occupancy))
    supply = batch_rows.replica_supply(inst, plan)
    update = float(laws.update_time(inst.training.update_time, plan.training_gpus))
    phase = max(b.attempts * b.tokens / supply, b.slowest) if supply > 0 else math.inf
    need = (max(phase, update) if b.steps_ahead == 1 else phase + update) + b.sync + b.switch
    grid = inst.schedule.cadence
    if not math.isfinite(need):
        return 0
    return max(0, math.floor((need - grid.min) / grid.step))


def _plan(inst: Instance, replicas: int, groups: int, cadence: float) -> Plan:
    shape, t = inst.inference.shapes[0], inst.training
    inference = replicas * shape.gpus_per_replica
    training = groups * t.gpus_per_group
    used = {p.name: 0 for p in inst.gpu_pools}
    used[shape.pool] += inference
    if inst.regime is not None and inst.regime.mode == "colocated":
        used[t.pool] = max(used[t.pool], training)
    else:
        used[t.pool] += training
    billed = sum(p.gpus if p.billing == "reserved" else used[p.name] for p in inst.gpu_pools)
    gpu = math.fsum(p.gpu_hour_cost * (p.gpus if p.billing == "reserved" else used[p.name]) for p in inst.gpu_pools)
    node, count, peak = _launch_nodes(inst)
    steady = _steady(inst, cadence) if node else {}
    nodes = next((k.hour_cost for k in inst.environment.node_types if k.name == node), 0.0) * count
    span = inst.workload.iterations * cadence + inst.schedule.extra_time
    hourly = gpu + nodes
    return Plan(
        cadence_s=cadence,
        makespan_s=span,
        versions_kept=1,
        inference=[ShapeReplicas(shape=shape.name, pool=shape.pool, replicas=replicas, gpus=inference)],
        inference_gpus=inference,
        training_groups=groups,
        training_gpus=training,
        local_nodes=[Count(type=node, count=count)] if node else [],
        cloud_vms=[],
        hourly_cost=hourly,
        total_cost=hourly * span / 3600.0,
        cost_terms=CostTerms(gpu=gpu, node=nodes, vm=0.0),
        pools=PoolUse.rows(inst.gpu_pools, used),
        billed_gpus=billed,
        placement=Placement(steady={node: steady} if node else {}, peak={node: peak} if node else {}, cloud={}),
    )


def _launch_nodes(inst: Instance) -> tuple[str, int, dict[str, float]]:
    """Sandbox nodes for a batch's launch peak (all N attempts at once, §14's row 6): the first node type that
    runs every backend; none for a run without sandboxes."""
    env = inst.environment
    if not env.backends:
        return "", 0, {}
    from trainground.calibrate.replay import nodes_for
    from trainground.solver.verify import laws

    b = batch_rows.read_batch(inst, laws.law_of(env.occupancy))
    peak = batch_rows.launches(inst, b)
    node, count = nodes_for(inst, peak)
    return node, count, peak


def _steady(inst: Instance, cadence: float) -> dict[str, float]:
    """Per backend the environments in flight on average, (N/L)·s_b·W_use (the verifier's reading, §14)."""
    from trainground.solver.verify import laws

    b = batch_rows.read_batch(inst, laws.law_of(inst.environment.occupancy))
    if cadence <= 0:
        return {x.name: 0.0 for x in inst.environment.backends}
    return {x.name: b.attempts / cadence * x.share * b.w_use for x in inst.environment.backends}


def replayed_iteration(inst: Instance, plan: Plan, replications: int = REPLICATIONS, seed: int = 0) -> dict:
    """The replay's figures (simulate's batch replay, MODEL §14) averaged over ``replications``, seeded as
    ``simulate --seed`` seeds them."""
    from trainground.simulation import regimes as replay

    setup = replay.setup_of_plan(inst, plan)
    return replay.mean_figures(replay.replications(setup, replications, seed))


def write_logged_run(doc: dict, cal, fields) -> None:
    """The logged run's lifetime law (the generation phase as a point mass), tokens per attempt and batch into
    the instance document, each with its comment and each from enough rows (calibrate.yamlfields.enough);
    ``cal``: the calibration holding ``logged_run``, ``fields``: the writer's placeholders."""
    from trainground.calibrate.yamlfields import comment, enough, number

    run, notes = cal.logged_run, cal.notes
    d, written = run.slowest, []
    if d is not None and not enough(cal, d, "environment.occupancy (the generation phase as every attempt's life)"):
        d = None
    if d is not None:
        samples = f"[{number(d.value)}, {number(d.value)}]"
        occupancy = {"distribution": "empirical", "samples": fields.put(samples, comment(d, d.note))}
        doc.setdefault("environment", {})["occupancy"] = occupancy
        written.append("environment.occupancy (every attempt lives the generation phase)")
    work = doc.setdefault("workload", {})
    if run.tokens_per_attempt is not None and enough(cal, run.tokens_per_attempt, "workload.tokens_per_attempt"):
        f = run.tokens_per_attempt
        work["tokens_per_attempt"] = fields.put(number(f.value), comment(f, f.note))
        written.append("workload.tokens_per_attempt")
    if run.batch is not None and enough(cal, run.batch, "workload.batch_trajectories"):
        f = run.batch
        before = work.get("batch_trajectories")
        work["batch_trajectories"] = fields.put(str(int(f.value)), comment(f, f.note))
        written.append("workload.batch_trajectories")
        if before is not None and int(before) != int(f.value):
            notes.append(
                f"workload.batch_trajectories: the --into instance's {before} replaced by the logged {f.value:g}"
            )
    if not written:
        return
    notes.append(
        "logged run: "
        + ", ".join(written)
        + " from the step log; "
        + (
            f"a batch's slowest attempt is the generation phase itself ({d.value:,.4g} s, no per-trajectory times)"
            if d is not None
            else "the lifetime law is the agent loop's (per-step min/mean/max of per-trajectory times)"
            if run.slowest is None
            else "the lifetime law is kept from --into"
        )
    )


def logged_calibration(steps: Steps, extra: FrameworkSteps, into: Instance, inference_gpus, regime, half: bool):
    """The calibration an instance of the logged run is written from: of the first half of the steps when
    ``half`` (the round trip), else of every step; with the logged run's own figures when its regime is a batch
    run's (a note says why when they cannot be had)."""
    from trainground.calibrate.fit import REPLICATES, SEED, calibrate_steps

    if half:
        steps, extra = first_half(steps, extra)
    cal = calibrate_steps(steps, extra, into, inference_gpus, regime=regime)
    found = cal.regime.regime if cal.regime is not None else None
    if found is None or not found.batched:
        return cal
    run, why = logged_run(steps, extra, np.random.default_rng(SEED), REPLICATES)
    if run is None:
        cal.notes.append(f"logged run: the lifetime law is kept from --into: {why}")
    elif "agent_loop_median_s" in cal.step_figures:
        run.slowest = None  # the agent loop's per-trajectory law gives M_N itself (calibrate.writer)
    cal.logged_run = run
    return cal


def round_trip(inst: Instance, plan: Plan, fitted, check: dict, replications: int = REPLICATIONS) -> tuple[dict, str]:
    """The replay of the first half's plan against the second half's logged mean step time (``check``: the
    hold-out's figures, calibrate.holdout) and the naive prediction: a JSON-ready dict and its sentence.
    ``fitted``: the first half's calibration."""
    sim = replayed_iteration(inst, plan, replications)
    predicted, logged, naive = sim["iteration_mean_s"], check["logged_s"], check["naive_s"]
    r = inst.regime
    out = {
        "fitted_steps": check["first_steps"],
        "checked_steps": check["second_steps"],
        "replications": replications,
        "predicted_s": predicted,
        "logged_s": logged,
        "naive_s": naive,
        "predicted_error": predicted / logged - 1,
        "naive_error": naive / logged - 1,
        "generation_phase_s": sim.get("generation_phase_s"),
        "slowest_attempt_s": sim.get("slowest_attempt_s"),
        "cadence_s": plan.cadence_s,
    }
    a, b = check["first_steps"], check["second_steps"]
    run = fitted.logged_run
    slowest = (
        f"{run.slowest.value:,.4g} s, the generation phase itself"
        if run is not None and run.slowest is not None
        else "from the instance's lifetime law"
    )
    sentence = (
        f"round trip: calibrated on steps {a[0]:g}-{a[1]:g} alone, the logged run replayed as a "
        f"{r.label if r is not None else 'async'} plan ({replications} replications of simulate's batch replay): "
        f"mean iteration {predicted:,.4g} s ({predicted / logged - 1:+.1%}) against the second half's logged "
        f"{logged:,.4g} s (steps {b[0]:g}-{b[1]:g}, saves and validations left out); its generation phase "
        f"{sim['generation_phase_s']:,.4g} s (slowest attempt {slowest}); naive, the "
        f"first half's mean: {naive:,.4g} s ({naive / logged - 1:+.1%})"
    )
    return out, sentence


def write_logged_plan(cal, inst: Instance, output: str, plan_file: str, inference_gpus=None) -> str:
    """Write the logged configuration as a `solve --json`-shaped file (its ``plan``, and the ``regime`` it was
    planned under, MODEL §14), or say why there is none: a batch run (colocated, pipelined) from its GPU counts,
    else from the logged launch rate. Returns the note the command prints."""
    import json

    from trainground.calibrate.replay import logged_plan
    from trainground.simulation.output import write_atomic
    from trainground.solver.mip.assemble import regime_json

    cal.plan = None
    short = [f for f in cal.unwritten if f.startswith(PLAN_FIELDS)]
    if short:
        cal.notes.append(
            "no logged plan written: its cadence would rest on figures from too few rows, left as --into has them ("
            + ", ".join(short)
            + ")"
        )
        return "logged plan: not written (the notes say why)"
    if inst.regime is not None and inst.regime.batched:
        total = sum(inference_gpus.values()) if isinstance(inference_gpus, dict) else inference_gpus
        if cal.update is None:
            plan, why = None, ["the step log gives no training GPU count (--training-gpus)"]
        else:
            plan, why = batch_plan(inst, cal.update.reference_gpus, total)
    else:
        plan, why = logged_plan(inst, cal)
    cal.plan = plan
    if plan is None:
        cal.notes += [f"no logged plan written: {w}" for w in why]
        return f"logged plan: not written ({len(why)} reason(s) in the notes)"
    document = {
        "instance": inst.name,
        "source": "calibrate: the logged run's configuration",
        "basis": "steady_state",
        "plan": plan.model_dump(),
    }
    if regime_json(inst) is not None:
        document["regime"] = regime_json(inst)
    write_atomic(plan_file, json.dumps(document, indent=1) + "\n")
    return (
        f"logged plan: {plan_file} ({plan.inference_gpus:,} inference GPUs, {plan.training_gpus:,} training GPUs, "
        f"cadence {plan.cadence_s:g} s); replay it: trainground simulate {output} --plan {plan_file}"
    )
