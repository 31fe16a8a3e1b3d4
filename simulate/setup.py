"""What one replication needs, derived once from an instance and a verified plan (MODEL.md §10).

Sandbox capacity per backend: the plan names node and VM counts and one placement of the
planned peak on them (``placement.peak`` on local nodes under the cap ``u``,
``placement.cloud`` on VMs). The simulator keeps each host type's backend mix as placed and
scales it until the host type's fullest row (density, cores or memory) is full: local nodes
at ``u·N_k``, VMs at ``V_v``. A host type the placement leaves empty is shared by the
backends it runs in proportion to their shares (eligible shares for VMs). A backend's cloud
sandboxes are at most ``eligible_share_b · E^pk_b`` (MODEL.md §3.6), and sandboxes are whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.simulation.failures import FailurePlan, failure_plan
from trainground.simulation.stages import StageSetup, staged_setup
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding

HORIZON_FACTOR = 20.0  # a replication gives up after this many predicted makespans (no batch can form)


@dataclass(frozen=True)
class Setup:
    """The run as the simulator replays it: rates per second, times in seconds, counts."""

    attempts_per_s: float
    group_size: int
    batch: int
    iterations: int
    versions_kept: int
    update_s: float
    intake: float
    policy: str
    correlation: str
    convention: str
    extra_time: float
    deadline: float
    tokens_per_attempt: float
    occupancy: calc.Occupancy
    backends: tuple[str, ...]
    shares: tuple[float, ...]
    local: tuple[float, ...]
    cloud: tuple[float, ...]
    launch: str
    horizon: float
    inference_gpus: int
    training_gpus: int
    failures: FailurePlan | None = None  # MODEL §13's injection (simulate.failures), None without its terms
    stages: tuple[StageSetup, ...] = ()  # MODEL §12: the stages played in order (simulate.stages); () one stage
    timeout: float | None = None  # MODEL §14's rollout_timeout τ: every lifetime is min(W, τ)
    filter_cut: bool = False  # truncated: filter: an attempt cut short at τ is not a sample

    @property
    def draws_samples(self) -> bool:
        """Whether an attempt may fail to be a sample (intake below 1, or a cut-short attempt filtered)."""
        return self.intake < 1 or self.filter_cut

    @property
    def capacity(self) -> tuple[float, ...]:
        """Sandboxes per backend: local then cloud (inf when the plan sets no limit)."""
        return tuple(a + b for a, b in zip(self.local, self.cloud))


def setup_of(
    inst: Instance,
    plan: Plan,
    metrics: Metrics,
    launch: str = "even",
    capacity: dict[str, float] | None = None,
    iterations: int | None = None,
) -> Setup:
    """The replay of ``plan`` (verified against ``inst``; ``metrics`` its verifier's metrics).

    ``capacity`` replaces the derived sandboxes of the backends it names (local, no cloud):
    what a what-if on sandbox capacity changes. ``iterations`` replaces n; the deadline is
    then pro rata, ``extra_time + (deadline - extra_time)·N/n``, so that the steady model's
    verdict is the full run's. A staged plan (MODEL §12) is replayed stage by stage
    (:func:`simulate.stages.staged_setup`; each stage's own plan, from its solve).
    """
    if inst.stages is not None:
        if capacity:
            raise InstanceError(
                inst.name or "instance",
                [Problem("stages", "a sandbox capacity what-if is not available with stages; remove one")],
            )
        try:
            return staged_setup(setup_of, inst, plan, launch, iterations)
        except ValueError as exc:
            raise InstanceError(inst.name or "instance", [Problem("plan.stages", str(exc))]) from None
    env, w, fr = inst.environment, inst.workload, inst.freshness
    local, cloud = sandbox_capacity(inst, plan, metrics)
    for name, value in (capacity or {}).items():
        local[name], cloud[name] = float(math.floor(value)), 0.0
    names = tuple(b.name for b in env.backends)
    n = iterations or w.iterations
    extra = inst.schedule.extra_time
    deadline = extra + (inst.schedule.deadline - extra) * n / w.iterations
    predicted = n * plan.cadence_s + metrics.update_time_s + inst.schedule.extra_time
    r = inst.regime  # MODEL §14: an async drop run with regime fields set is the seed's replay over W_τ
    timeout = None if r is None else r.rollout_timeout
    horizon = HORIZON_FACTOR * (predicted + calc.occupancy_of(env.occupancy).p99)
    return Setup(
        attempts_per_s=metrics.attempts_per_s,
        group_size=w.group_size,
        batch=w.batch_trajectories,
        iterations=n,
        versions_kept=plan.age_limit or plan.versions_kept,  # in-flight updates: K is the age limit only
        update_s=metrics.update_time_s,
        intake=w.intake_rate,
        policy=fr.overrun_policy,
        correlation=fr.group_correlation,
        convention=fr.gap_convention,
        extra_time=extra,
        deadline=deadline,
        tokens_per_attempt=w.tokens_per_attempt,
        occupancy=calc.occupancy_of(env.occupancy),
        backends=names,
        shares=tuple(b.share for b in env.backends),
        local=tuple(local[b] for b in names),
        cloud=tuple(cloud[b] for b in names),
        launch=launch,
        horizon=horizon,
        inference_gpus=plan.inference_gpus,
        training_gpus=plan.training_gpus,
        failures=failure_plan(inst, plan),
        timeout=timeout,
        filter_cut=timeout is not None and r is not None and r.truncated == "filter",
    )


def sandbox_capacity(inst: Instance, plan: Plan, metrics: Metrics) -> tuple[dict[str, float], dict[str, float]]:
    """Whole sandboxes per backend on the plan's local nodes (under the cap u) and on its cloud VMs."""
    env = inst.environment
    backends = {b.name: b for b in env.backends}
    local = {name: 0.0 for name in backends}
    cloud = {name: 0.0 for name in backends}
    nodes = {c.type: c.count for c in plan.local_nodes}
    vms = {c.type: c.count for c in plan.cloud_vms}
    shares = {b.name: b.share for b in env.backends}
    eligible = {name: shares[name] * env.cloud.eligible_share.get(name, 0.0) for name in backends}
    for host in env.node_types:
        _fill(
            host,
            nodes.get(host.name, 0) * env.utilisation_cap,
            plan.placement.peak.get(host.name, {}),
            shares,
            backends,
            local,
        )
    for host in env.cloud.vm_types:
        _fill(host, vms.get(host.name, 0), plan.placement.cloud.get(host.name, {}), eligible, backends, cloud)
    peak = peak_loads(inst, metrics)
    for name in backends:
        cloud[name] = min(cloud[name], env.cloud.eligible_share.get(name, 0.0) * peak[name])
    return {name: _whole(v) for name, v in local.items()}, {name: _whole(v) for name, v in cloud.items()}


def peak_loads(inst: Instance, metrics: Metrics) -> dict[str, float]:
    """E^pk_b per backend, the load rows 6 size the sandboxes for: peak_to_mean·E_b, E_b the backend's share
    of the Little's-law mean (MODEL §2), or under hold peak_to_mean·E^hold_b (§11 item 2, not proportional
    to the share)."""
    env = inst.environment
    if not inst.holds:
        return {b.name: metrics.inflight_peak * b.share for b in env.backends}
    loads = holding.hold_inflight(inst, calc.occupancy_of(env.occupancy), np.array([metrics.attempts_per_s]))[0]
    return {b.name: float(load) * env.peak_to_mean for b, load in zip(env.backends, loads)}


def _whole(sandboxes: float) -> float:
    """Whole sandboxes: rounded down, but one where a fraction of one is placed."""
    return float(max(math.floor(sandboxes + 1e-9), 1)) if sandboxes > 0 else 0.0


def _fill(host, hosts: float, placed: dict[str, float], weights: dict[str, float], backends, out: dict) -> None:
    """Add to ``out`` the environments ``hosts`` hosts of one type hold with the placed backend mix
    (or ``weights`` where nothing is placed), scaled until the fullest resource row is full."""
    if hosts <= 0:
        return
    mix = {b: e for b, e in placed.items() if e > 0 and b in host.density}
    if not mix:
        mix = {b: wgt for b, wgt in weights.items() if wgt > 0 and b in host.density}
    if not mix:
        return
    rows = [sum(e / host.density[b] for b, e in mix.items())]
    if host.cores:
        rows.append(sum(e * (backends[b].cores or 0.0) for b, e in mix.items()) / host.cores)
    if host.memory_gb:
        rows.append(sum(e * (backends[b].memory_gb or 0.0) for b, e in mix.items()) / host.memory_gb)
    scale = hosts / max(rows)
    for b, e in mix.items():
        out[b] += e * scale
