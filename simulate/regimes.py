"""The batch run regimes of MODEL.md §14 replayed: pipelined (``steps_ahead`` 0 or 1) and colocated.

A pure replay: it reads the instance and a plan's decisions (the token supply ``S``, the training groups
``m``; :func:`setup_of_plan` reads both from a plan) and nothing of the MIP. Each of the ``n`` batches
launches its ``N = g·ceil(B/(g·p_eff))`` attempts together on the newest version. An attempt's lifetime
is drawn from the occupancy law (one draw per group under ``comonotone``: its ``g`` members are equal)
and cut at the rollout timeout, ``W_τ = min(W, τ)``; its tokens scale with its time,
``tokens_per_attempt·W_τ/mean(W)`` (§14's token scale is their mean); it draws its backend by share and
is a sample with probability ``p`` (under ``truncated: filter`` a cut attempt is none: the batch trains
on what it has). A batch is complete when its last attempt ends and no earlier than its tokens take at
``S``: its generation phase is ``D_i = max(max W_τ, tokens_i/S)``.

Then the trainer's update ``U(m)`` (the instance's update-time law at ``m·gpus_per_group`` GPUs, as the
§10 replay's setup reads it), the weight sync ``t_s`` and, colocated, ``switch_time``, in that order:

- ``k = 0`` and colocated: launch ``i+1`` follows batch ``i``'s generation, update, sync (and switch):
  an iteration is ``D_i + U + t_s (+ switch_time)``; ``T`` is their sum plus ``extra_time`` on every basis.
- ``k = 1``: launch ``i`` starts batch ``i``'s generation and the update on batch ``i-1`` together; the
  sync (which waits for the batch in progress) follows both, and launch ``i+1`` follows the sync: an
  iteration is ``max(D_i, U) + t_s``. With the start-up counted (``schedule.count_startup`` or
  ``planning.basis: hold``) the first batch is generated alone (``D_0``, no update, no sync) and the last
  update follows the last iteration, ``T = D_0 + Σ_{i≥1} (max(D_i, U) + t_s) + U + extra_time``; without it
  the pipeline is full from the start (an update of a batch before the run beside batch 0) and
  ``T = Σ_i (max(D_i, U) + t_s) + extra_time``, the steady-state makespan of §2.

A batch is consumed by the update that publishes the next version; its gap is that update's index less
the version it was launched on (``+1`` under ``post_publish``). Only the sync and the batch's own phases
enter the time: §13's failures are not injected and sandboxes never make an attempt wait (the launch peak
per backend is what row 6 must hold). Replication ``r`` of seed ``S`` draws from
``numpy.random.default_rng([S, r])``, as ``simulate`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput
from trainground.solver.laws import regimes as rg

CHUNK_DRAWS = 1 << 20  # lifetimes drawn at once (8 MB): batches are drawn in chunks of this many draws
GAP_QUANTILE = 0.99


@dataclass(frozen=True)
class BatchSetup:
    """A batch-mode run as the replay plays it: times in seconds, rates per second, counts."""

    mode: str  # pipelined | colocated
    steps_ahead: int  # k: 0 or 1 (colocated: 0)
    attempts: int  # N, launched together per batch
    draws: int  # N': the batch's independent lifetimes (N, or N/g under comonotone)
    batch: int  # B
    iterations: int  # n
    supply: float  # S, tokens/s
    update_s: float  # U(m)
    sync_s: float  # t_s
    switch_s: float  # colocated's switch_time (0 pipelined)
    extra_time: float
    timeout: float | None  # τ (None: no timeout)
    filter_cut: bool  # truncated: filter (a cut attempt is not a sample)
    intake: float  # p, per attempt
    tokens_per_attempt: float  # an attempt's tokens at the law's mean lifetime, before any timeout
    occupancy: calc.Occupancy
    backends: tuple[str, ...]
    shares: tuple[float, ...]
    post_publish: bool
    counts_startup: bool


@dataclass(frozen=True)
class Batches:
    """What each batch's draws decide, in launch order."""

    slowest: np.ndarray  # max W_τ over its attempts, s
    tokens: np.ndarray  # its attempts' tokens
    effective: np.ndarray  # its samples (int)
    launched: np.ndarray  # (batches, backends): its attempts on each backend (int)


@dataclass(frozen=True)
class BatchRun:
    """One replication: its draws and its timeline (per batch, in launch order; times in seconds)."""

    setup: BatchSetup
    batches: Batches
    phase: np.ndarray  # D_i
    launch: np.ndarray  # when batch i's attempts start
    trained: np.ndarray  # when the update on batch i ends
    iteration: np.ndarray  # the steady iterations' durations (k = 1 with start-up counted: batches 1..n-1)
    gap: np.ndarray  # the consumed gap of batch i's samples (post_publish included)
    makespan: float


def batch_setup(
    inst: Instance, supply: float, groups: int, iterations: int | None = None, label: str | None = None
) -> BatchSetup:
    """The replay of ``inst``'s batch regime with a token supply of ``supply`` tokens/s and ``groups`` training
    groups; ``iterations`` replaces n. InstanceError (naming ``label``, default the instance's name, and the
    field) for an instance that is not a batch regime, a staged one, or decisions the replay cannot play."""
    file = label or inst.name or "instance"
    r = inst.regime
    if r is None or not r.batched:
        mode = "async (no regime section)" if r is None else r.label
        raise InstanceError(
            file, [Problem("regime.mode", f"the batch replay plays pipelined and colocated, not {mode}")]
        )
    if inst.stages is not None:
        raise InstanceError(file, [Problem("stages", "the batch replay plays one stage; remove stages")])
    if not (math.isfinite(supply) and supply > 0):
        raise InstanceError(file, [Problem("plan.inference", f"the token supply must be > 0 tokens/s, got {supply!r}")])
    t, w = inst.training, inst.workload
    if groups < 1:
        raise InstanceError(file, [Problem("plan.training_groups", f"must be >= 1, got {groups}")])
    if iterations is not None and iterations < 1:
        raise InstanceError(file, [Problem("iterations", f"must be >= 1, got {iterations}")])
    update = float(calc.update_time(t.update_time, groups * t.gpus_per_group))
    if math.isnan(update):
        gpus = groups * t.gpus_per_group
        raise InstanceError(
            file, [Problem("training.update_time", f"{gpus} training GPUs ({groups} groups) are outside its table")]
        )
    occ = calc.occupancy_of(inst.environment.occupancy)
    tau = r.rollout_timeout
    attempts = rg.attempts_per_batch(w.batch_trajectories, w.group_size, rg.intake(inst, occ))
    return BatchSetup(
        mode=r.mode,
        steps_ahead=int(r.steps_ahead or 0),
        attempts=attempts,
        draws=rg.batch_draws(inst, attempts),
        batch=w.batch_trajectories,
        iterations=iterations or w.iterations,
        supply=float(supply),
        update_s=update,
        sync_s=rg.sync_time(inst),
        switch_s=r.switch_time if r.mode == "colocated" else 0.0,
        extra_time=inst.schedule.extra_time,
        timeout=tau,
        filter_cut=tau is not None and r.truncated == "filter",
        intake=w.intake_rate,
        tokens_per_attempt=w.tokens_per_attempt,
        occupancy=occ,
        backends=tuple(b.name for b in inst.environment.backends),
        shares=tuple(b.share for b in inst.environment.backends),
        post_publish=inst.freshness.gap_convention == "post_publish",
        counts_startup=inst.counts_startup,
    )


def plan_supply(inst: Instance, plan: Plan, label: str | None = None) -> float:
    """S of ``plan``'s replicas: Σ_s a_s·x_s·g_s·r_s, one version resident (no slowdown). Colocated takes the
    inference availability ``a`` (a failure stops the whole job, §14); pipelined §13's ``a_s`` at the cut mean
    lifetime (``a`` without §13). InstanceError (naming ``label``) for a shape the instance does not have."""
    shapes = {s.name: i for i, s in enumerate(inst.inference.shapes)}
    r = inst.regime
    if r is not None and r.mode == "colocated":
        available = np.full(len(shapes), inst.inference.availability)
    else:
        occ = calc.occupancy_of(inst.environment.occupancy)
        available = goodput.availabilities(inst, rg.timeout_mean(occ, r.rollout_timeout if r else None))
    total = 0.0
    for j, row in enumerate(plan.inference):
        if row.shape not in shapes:
            have = ", ".join(shapes)
            where = f"plan.inference[{j}].shape"
            raise InstanceError(
                label or inst.name or "plan", [Problem(where, f"{row.shape!r} is not a shape (have: {have})")]
            )
        i = shapes[row.shape]
        shape = inst.inference.shapes[i]
        total += float(available[i]) * row.replicas * shape.gpus_per_replica * shape.tokens_per_gpu_s
    return total


def setup_of_plan(inst: Instance, plan: Plan, iterations: int | None = None, label: str | None = None) -> BatchSetup:
    """:func:`batch_setup` with ``plan``'s supply (:func:`plan_supply`) and training groups."""
    return batch_setup(inst, plan_supply(inst, plan, label), plan.training_groups, iterations, label)


def draw_batches(setup: BatchSetup, rng: np.random.Generator) -> Batches:
    """Every batch's draws, ``CHUNK_DRAWS`` lifetimes at a time: per chunk the lifetimes, then each batch's
    backends (a multinomial of its N attempts by share), then its samples (each candidate a sample with
    probability p). The draws do not depend on the mode, k, S or U: two setups that differ only there replay
    the same batches from the same seed."""
    n, per = setup.iterations, setup.attempts // setup.draws  # per: attempts sharing one draw (g or 1)
    rows_per_chunk = max(1, CHUNK_DRAWS // setup.draws)
    parts: list[tuple[np.ndarray, ...]] = []
    for first in range(0, n, rows_per_chunk):
        rows = min(rows_per_chunk, n - first)
        life = _lifetimes(setup.occupancy, rng, (rows, setup.draws))
        candidates = np.full(rows, setup.attempts, dtype=np.int64)
        if setup.timeout is not None:
            if setup.filter_cut:
                candidates = per * np.count_nonzero(life <= setup.timeout, axis=1)
            np.minimum(life, setup.timeout, out=life)
        slowest = life.max(axis=1)
        tokens = setup.tokens_per_attempt * per * life.sum(axis=1) / setup.occupancy.mean
        if setup.backends:
            launched = rng.multinomial(setup.attempts, np.asarray(setup.shares), size=rows)
        else:
            launched = np.zeros((rows, 0), dtype=np.int64)
        effective = rng.binomial(candidates, setup.intake) if setup.intake < 1 else candidates
        parts.append((slowest, tokens, effective, launched))
    slowest, tokens, effective, launched = (np.concatenate(column) for column in zip(*parts))
    return Batches(slowest=slowest, tokens=tokens, effective=effective, launched=launched)


def _lifetimes(occ: calc.Occupancy, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Occupancy draws: resampled from an empirical law's samples, or exp(mu + sigma·Z)."""
    if occ.samples is not None:
        return occ.samples[rng.integers(0, occ.samples.size, shape)]
    mu, sigma = occ.log_params()
    return np.exp(mu + sigma * rng.standard_normal(shape))


def timeline(setup: BatchSetup, batches: Batches) -> BatchRun:
    """The run that ``batches`` make under ``setup``'s mode: launches, updates, publishes, makespan, gaps."""
    phase = np.maximum(batches.slowest, batches.tokens / setup.supply)
    U, ts = setup.update_s, setup.sync_s
    n = phase.size
    if setup.steps_ahead == 0:  # k = 0 and colocated: generate, update, sync (, switch), in turn
        steps = phase + U + ts + setup.switch_s
        ends = np.cumsum(steps)  # ends[i]: launch i + 1
        launch = np.concatenate(([0.0], ends[:-1]))
        publish = ends - setup.switch_s  # boundary j publishes version j + 1, never after launch j + 1
        trained = publish - ts
        first_version = 0
        iteration, makespan = steps, float(ends[-1])
    else:  # k = 1: launch i starts batch i's generation and the update on batch i - 1; the sync follows both
        steps = np.maximum(phase, U) + ts
        if setup.counts_startup:
            steps[0] = phase[0]  # the first batch is generated alone: nothing to train, nothing to sync
        ends = np.cumsum(steps)  # ends[i]: launch i + 1
        launch = np.concatenate(([0.0], ends[:-1]))
        trained = ends + U
        # boundary j is published at launch j + 2 (the sync after it); the last one after its own update
        publish = np.concatenate((ends[1:], trained[-1:]))
        first_version = 0
        if setup.counts_startup:
            iteration, makespan = steps[1:], float(ends[-1] + U)
        else:  # full from the start: an update on a batch before the run (boundary -1) published at launch 1
            publish = np.concatenate((ends[:1], publish))
            first_version = -1
            iteration, makespan = steps, float(ends[-1])
    version = first_version + np.searchsorted(publish, launch, side="right")
    gap = np.arange(n) - version + (1 if setup.post_publish else 0)
    return BatchRun(
        setup=setup,
        batches=batches,
        phase=phase,
        launch=launch,
        trained=trained,
        iteration=iteration,
        gap=gap,
        makespan=makespan + setup.extra_time,
    )


def replicate(setup: BatchSetup, seed) -> BatchRun:
    """One replication with ``numpy.random.default_rng(seed)``."""
    return timeline(setup, draw_batches(setup, np.random.default_rng(seed)))


def figures(run: BatchRun) -> dict:
    """The figures of one replication, JSON-ready (the keys of MODEL §10's ``simulated`` and §14's metrics where
    they mean the same): ``makespan_s``; ``startup_s`` (the first batch's generation phase, when it is
    complete); ``iteration_mean_s`` and ``iteration_p99_s`` over the steady iterations (None if there are none);
    ``generation_phase_s`` (mean D); ``slowest_attempt_s`` (mean M_N); ``generation_busy_share`` (the batches'
    tokens over S times their phases); ``launch_peak`` and ``launch_peak_max`` ({backend: mean, largest}
    attempts launched per batch); ``effective_mean`` and ``short_batch_share`` (batches with fewer than B
    samples); ``generation_bound_share`` and ``update_bound_share`` (k = 1: the steady iterations whose
    generation phase, or update, was the longer; None otherwise); ``consumed_mean_gap`` and
    ``consumed_p99_gap`` over every sample."""
    s, b, steps = run.setup, run.batches, run.iteration
    bound: float | None = None
    if s.steps_ahead == 1 and steps.size:
        bound = float(np.mean(run.phase[-steps.size :] >= s.update_s))
    out: dict = {
        "makespan_s": run.makespan,
        "startup_s": float(run.phase[0]),
        "iteration_mean_s": float(steps.mean()) if steps.size else None,
        "iteration_p99_s": float(np.quantile(steps, 0.99)) if steps.size else None,
        "generation_phase_s": float(run.phase.mean()),
        "slowest_attempt_s": float(b.slowest.mean()),
        "generation_busy_share": float(b.tokens.sum() / (s.supply * run.phase.sum())),
        "launch_peak": {name: float(v) for name, v in zip(s.backends, b.launched.mean(axis=0))},
        "launch_peak_max": {name: int(v) for name, v in zip(s.backends, b.launched.max(axis=0))},
        "effective_mean": float(b.effective.mean()),
        "short_batch_share": float(np.mean(b.effective < s.batch)),
        "generation_bound_share": bound,
        "update_bound_share": None if bound is None else 1.0 - bound,
    }
    out.update(consumed_gaps(run.gap, b.effective))
    return out


def consumed_gaps(gap: np.ndarray, weight: np.ndarray) -> dict:
    """Mean and p99 of the consumed gap over every sample (a batch's samples share its gap)."""
    total = int(weight.sum())
    if total == 0:
        return {"consumed_mean_gap": None, "consumed_p99_gap": None}
    order = np.argsort(gap, kind="stable")
    reached = np.cumsum(weight[order]) >= GAP_QUANTILE * total
    return {
        "consumed_mean_gap": float(np.dot(gap, weight) / total),
        "consumed_p99_gap": int(gap[order][int(np.argmax(reached))]),
    }


def replications(setup: BatchSetup, count: int = 1, seed: int = 0) -> list[dict]:
    """The figures of ``count`` replications, replication ``r`` seeded ``[seed, r]``."""
    return [figures(replicate(setup, [seed, r])) for r in range(count)]


def mean_figures(each: list[dict]) -> dict:
    """The mean over replications of every figure (per backend for the launch peaks); None where any is None."""
    out: dict = {}
    for key, first in each[0].items():
        values = [f[key] for f in each]
        if any(v is None for v in values):
            out[key] = None
        elif isinstance(first, dict):
            out[key] = {name: float(np.mean([v[name] for v in values])) for name in first}
        else:
            out[key] = float(np.mean(values))
    return out
