"""An async run with admission control replayed (MODEL.md §14: ``staleness: admission``, ``steps_ahead`` k,
in-flight updates).

A pure replay: it reads the instance and a plan's decisions (its cadence ``L``, token supply ``S`` and training
groups ``m``: :func:`setup_of_plan`) and nothing of the MIP. Group ``i`` is due at ``i·g/R_raw``, the plan's
attempt rate ``R_raw = B/(L·p_eff)`` (as §10's even launches), and launches then, or later: groups launch in
order, each only while one of the ``C = ceil((k+1)·B/g)`` slots is free and, with
``regime.max_concurrent_attempts``, while the running attempts leave room for its ``g`` members. Each member's
lifetime is drawn from the occupancy law (one draw per group under ``comonotone``) and cut at the rollout timeout,
``W_τ = min(W, τ)``; its tokens scale with its time, ``tokens_per_attempt·W_τ/mean(W)``; it draws its backend by
share. A group is a sample or not as a whole (probability ``p``: frameworks filter whole groups); under
``truncated: filter`` its cut members are not samples. A group completes when its last member ends.

Completed groups with samples wait in completion order; batch ``j`` takes the fewest of them whose samples reach
``B``, at ``b_j = max(b_{j-1} + U, the completion that fills it)`` (``U = U(m)``, the trainer's update); the
update ends at ``b_j + U`` and the weight sync at ``p_j = b_j + U + t_s``, when version ``j + 1`` is published:
every running attempt moves to it (in-flight updates: one version resident) and the slots of batch ``j``'s groups
are freed (a group without samples frees its slot when it completes). A trajectory's gap counts from the version
published before its launch: ``j`` less the publishes up to its launch (``+1`` under ``post_publish``). The run
ends with the last update, ``T = b_{n-1} + U + extra_time``. The run starts empty, so its start-up (§8) is in
``T``.

Sandboxes never make an attempt wait here and the token supply is not a limit on time: the replay counts what
the run asks of them (the attempts in flight, the tokens generated and, under ``recompute: prefix``, re-prefilled
at each publish) for :mod:`simulation.admission_figures` to set beside the plan. §13's failures are not injected.

This module holds the setup, the draws and the run; :mod:`simulation.admission_replay` lays the run out
(:func:`~simulation.admission_replay.replicate`). Replication ``r`` of seed ``S`` draws from
``numpy.random.default_rng([S, r])``, as ``simulate`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.simulation.regimes import plan_supply
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as rg

CHUNK_GROUPS = 1 << 15  # groups drawn at once, at most (256 k lifetimes of 8 members: 2 MB a column)
CHUNK_FLOOR = 256  # ... and at least


@dataclass(frozen=True)
class AdmissionSetup:
    """An admission run as the replay plays it: times in seconds, rates per second, counts."""

    steps_ahead: float  # k
    slots: int  # C = ceil((k+1)·B/g)
    spacing: float  # g/R_raw: the time between two groups' due launches
    cadence: float  # the plan's L (its figures are read per cadence)
    group_size: int
    batch: int  # B
    iterations: int  # n
    update_s: float  # U(m)
    sync_s: float  # t_s
    extra_time: float
    timeout: float | None  # τ (None: no timeout)
    filter_cut: bool  # truncated: filter (a cut member is not a sample)
    intake: float  # p, per group
    tokens_per_attempt: float  # an attempt's tokens at the law's mean lifetime, before any timeout
    occupancy: calc.Occupancy
    comonotone: bool
    backends: tuple[str, ...]
    shares: tuple[float, ...]
    supply: float  # S, tokens/s, before the sync
    cap: int | None  # max_concurrent_attempts
    prefill_cost: float  # recompute: prefix (0: no re-prefill)
    context_tokens: float
    post_publish: bool
    chunk: int = CHUNK_GROUPS  # groups drawn at once: what the run launches, about, within the bounds above

    @property
    def every_group_samples(self) -> bool:
        """Every group is a sample of g members: slots are freed at publishes alone."""
        return self.intake >= 1.0 and not self.filter_cut and self.cap is None


def admission_setup(
    inst: Instance,
    cadence: float,
    supply: float,
    groups: int,
    iterations: int | None = None,
    label: str | None = None,
) -> AdmissionSetup:
    """The replay of ``inst``'s admission run at cadence ``cadence`` (s) with a token supply of ``supply`` tokens/s
    and ``groups`` training groups; ``iterations`` replaces n. InstanceError (naming ``label``, default the
    instance's name, and the field) for another regime, a staged instance, or decisions the replay cannot play."""
    file = label or inst.name or "instance"
    r = inst.regime
    if r is None or r.mode != "async" or r.staleness != "admission":
        shown = "async drop (no regime section)" if r is None else r.label
        raise InstanceError(file, [Problem("regime.staleness", f"the admission replay plays admission, not {shown}")])
    if inst.stages is not None:
        raise InstanceError(file, [Problem("stages", "the admission replay plays one stage; remove stages")])
    if not (math.isfinite(cadence) and cadence > 0):
        raise InstanceError(file, [Problem("plan.cadence_s", f"must be > 0 s, got {cadence!r}")])
    if not (math.isfinite(supply) and supply > 0):
        raise InstanceError(file, [Problem("plan.inference", f"the token supply must be > 0 tokens/s, got {supply!r}")])
    if groups < 1:
        raise InstanceError(file, [Problem("plan.training_groups", f"must be >= 1, got {groups}")])
    if iterations is not None and iterations < 1:
        raise InstanceError(file, [Problem("iterations", f"must be >= 1, got {iterations}")])
    t, w = inst.training, inst.workload
    update = float(calc.update_time(t.update_time, groups * t.gpus_per_group))
    if math.isnan(update):
        gpus = groups * t.gpus_per_group
        raise InstanceError(
            file, [Problem("training.update_time", f"{gpus} training GPUs ({groups} groups) are outside its table")]
        )
    occ = calc.occupancy_of(inst.environment.occupancy)
    k = float(r.steps_ahead or 1.0)
    attempts_per_s = w.batch_trajectories / (cadence * rg.intake(inst, occ))
    prefix = r.recompute == "prefix"
    n = iterations or w.iterations
    slots = int(calc.ceil_tol((k + 1.0) * w.batch_trajectories / w.group_size))
    launched = math.ceil(n * w.batch_trajectories / (w.group_size * rg.intake(inst, occ))) + slots
    return AdmissionSetup(
        steps_ahead=k,
        slots=slots,
        spacing=w.group_size / attempts_per_s,
        cadence=float(cadence),
        group_size=w.group_size,
        batch=w.batch_trajectories,
        iterations=n,
        update_s=update,
        sync_s=rg.sync_time(inst),
        extra_time=inst.schedule.extra_time,
        timeout=r.rollout_timeout,
        filter_cut=r.rollout_timeout is not None and r.truncated == "filter",
        intake=w.intake_rate,
        tokens_per_attempt=w.tokens_per_attempt,
        occupancy=occ,
        comonotone=inst.freshness.group_correlation == "comonotone",
        backends=tuple(b.name for b in inst.environment.backends),
        shares=tuple(b.share for b in inst.environment.backends),
        supply=float(supply),
        cap=r.max_concurrent_attempts,
        prefill_cost=r.prefill_cost if prefix else 0.0,
        context_tokens=r.context_tokens if prefix else 0.0,
        post_publish=inst.freshness.gap_convention == "post_publish",
        chunk=min(CHUNK_GROUPS, max(CHUNK_FLOOR, launched)),
    )


def setup_of_plan(
    inst: Instance, plan: Plan, iterations: int | None = None, label: str | None = None
) -> AdmissionSetup:
    """:func:`admission_setup` with ``plan``'s cadence, supply (:func:`simulation.regimes.plan_supply`) and groups."""
    supply = plan_supply(inst, plan, label)
    return admission_setup(inst, plan.cadence_s, supply, plan.training_groups, iterations, label)


@dataclass
class Draws:
    """Every group's draws in launch order, drawn ``setup.chunk`` groups at a time as the replay asks for them:
    per chunk the members' lifetimes, then their backends (with more than one), then each group's intake. The
    draws do not depend on the plan's decisions: two setups of one run replay the same groups from one seed.
    The columns below hold the ``size`` groups drawn (their storage grows by doubling)."""

    setup: AdmissionSetup
    rng: np.random.Generator
    size: int = 0
    _life: np.ndarray = field(init=False, repr=False)
    _backend: np.ndarray = field(init=False, repr=False)
    _samples: np.ndarray = field(init=False, repr=False)
    _finish: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        g, rows = self.setup.group_size, self.setup.chunk
        self._life = np.empty((rows, g))
        self._backend = np.empty((rows, g), dtype=np.int16)
        self._samples = np.empty(rows, dtype=np.int64)
        self._finish = np.empty(rows)

    @property
    def life(self) -> np.ndarray:
        """(groups, g) W_τ per member, s."""
        return self._life[: self.size]

    @property
    def backend(self) -> np.ndarray:
        """(groups, g) each member's index into setup.backends."""
        return self._backend[: self.size]

    @property
    def samples(self) -> np.ndarray:
        """(groups,) each group's samples (0: not a sample)."""
        return self._samples[: self.size]

    @property
    def finish(self) -> np.ndarray:
        """(groups,) each group's completion after its launch: its largest W_τ, s."""
        return self._finish[: self.size]

    def ensure(self, groups: int) -> None:
        """Draw chunks until at least ``groups`` groups are drawn."""
        while self.size < groups:
            self._chunk()

    def _chunk(self) -> None:
        s, rng, g, rows = self.setup, self.rng, self.setup.group_size, self.setup.chunk
        life = _lifetimes(s.occupancy, rng, (rows, 1) if s.comonotone else (rows, g))
        if s.comonotone:
            life = np.repeat(life, g, axis=1)
        if len(s.backends) > 1:
            cut_points = np.cumsum(s.shares)[:-1]
            backend = np.searchsorted(cut_points, rng.random((rows, g)), side="right").astype(np.int16)
        else:
            backend = np.zeros((rows, g), dtype=np.int16)
        sampled = rng.random(rows) < s.intake if s.intake < 1 else np.ones(rows, dtype=bool)
        kept = np.full(rows, g, dtype=np.int64)
        if s.timeout is not None:
            if s.filter_cut:
                kept = np.count_nonzero(life <= s.timeout, axis=1)
            np.minimum(life, s.timeout, out=life)
        if self.size + rows > self._finish.size:
            grow = max(2 * self._finish.size, self.size + rows)
            self._life = _grown(self._life, grow)
            self._backend = _grown(self._backend, grow)
            self._samples = _grown(self._samples, grow)
            self._finish = _grown(self._finish, grow)
        at = slice(self.size, self.size + rows)
        self._life[at], self._backend[at] = life, backend
        self._samples[at], self._finish[at] = np.where(sampled, kept, 0), life.max(axis=1)
        self.size += rows


def _grown(column: np.ndarray, rows: int) -> np.ndarray:
    out = np.empty((rows,) + column.shape[1:], dtype=column.dtype)
    out[: column.shape[0]] = column
    return out


def _lifetimes(occ: calc.Occupancy, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Occupancy draws: resampled from an empirical law's samples, or exp(mu + sigma·Z)."""
    if occ.samples is not None:
        return occ.samples[rng.integers(0, occ.samples.size, shape)]
    mu, sigma = occ.log_params()
    life = rng.standard_normal(shape)
    life *= sigma
    life += mu
    return np.exp(life, out=life)


@dataclass(frozen=True)
class AdmissionRun:
    """One replication: its draws and timeline (times in seconds). Groups are in launch order; only the
    ``launched`` first groups of the draws were launched."""

    setup: AdmissionSetup
    draws: Draws
    launch: np.ndarray  # (launched,) each group's launch
    consumed: np.ndarray  # (launched,) the batch that took it, -1 if none did
    boundaries: np.ndarray  # b_j
    publishes: np.ndarray  # p_j = b_j + U + t_s: version j + 1
    finished: bool  # all n batches formed (False: the slots were held by groups that cannot fill a batch)
    makespan: float  # b_{n-1} + U + extra_time (inf if not finished)

    @property
    def launched(self) -> int:
        return int(self.launch.size)
