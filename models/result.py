"""The result of a solve (MODEL.md §6): what every command prints as JSON and `batch` writes per instance."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Status(StrEnum):
    """MODEL.md §6 statuses, in the order reports count them. A StrEnum: each compares equal to its
    string, so results read back from JSON and the enum agree."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time_limit"
    INVALID = "invalid"
    ERROR = "error"


STATUSES: tuple[str, ...] = tuple(s.value for s in Status)


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ShapeReplicas(Out):
    shape: str
    pool: str
    replicas: int
    gpus: int


class Count(Out):
    type: str
    count: int


class PoolUse(Out):
    pool: str
    gpus_used: int
    gpus: int
    billing: str = "used"
    gpus_billed: int | None = Field(None, description="GPUs paid for: those used, or all of a reserved pool")

    @classmethod
    def rows(cls, pools, used: dict[str, int]) -> list[PoolUse]:
        """One row per GPU pool of an instance (``pools``: its gpu_pools), ``used`` GPUs by pool name: every GPU of
        a reserved pool is billed (MODEL §4), else those used."""
        return [
            cls(
                pool=p.name,
                gpus_used=used[p.name],
                gpus=p.gpus,
                billing=p.billing,
                gpus_billed=p.gpus if p.billing == "reserved" else used[p.name],
            )
            for p in pools
        ]


class CostTerms(Out):
    gpu: float
    node: float
    vm: float


class Placement(Out):
    """Environments placed, {host type: {backend: environments}}: steady and peak on local nodes, peak on VMs."""

    steady: dict[str, dict[str, float]] = Field(default_factory=dict)
    peak: dict[str, dict[str, float]] = Field(default_factory=dict)
    cloud: dict[str, dict[str, float]] = Field(default_factory=dict)


class StagePlan(Out):
    """One stage of a staged plan (MODEL §12): its cadence and duration, demand against supply, and under
    ``replan`` its own capacity (null under ``fixed``, where the plan's counts serve every stage)."""

    name: str
    iterations: int
    cadence_s: float
    duration_s: float = Field(description="n_p·L_p, s")
    token_demand_per_s: float
    token_supply_per_s: float
    update_time_s: float
    inflight_mean: float
    mean_version_gap: float
    binding: list[str] = Field(default_factory=list)
    sizes_fleet: bool = Field(False, description="this stage's throughput binds (fixed: it sizes the fleet)")
    run_metrics: bool = Field(
        False,
        description="the plan's metrics are this stage's: the first that sizes the fleet, else the one with the "
        "least token supply over its demand",
    )
    inference: list[ShapeReplicas] | None = None
    training_groups: int | None = None
    local_nodes: list[Count] | None = None
    cloud_vms: list[Count] | None = None
    hourly_cost: float | None = None
    plan: Plan | None = Field(None, exclude=True, description="the stage as a one-stage plan of its own instance")


class Plan(Out):
    cadence_s: float
    makespan_s: float
    versions_kept: int
    inference: list[ShapeReplicas]
    inference_gpus: int
    training_groups: int
    training_gpus: int
    local_nodes: list[Count]
    cloud_vms: list[Count]
    hourly_cost: float
    total_cost: float
    cost_terms: CostTerms
    pools: list[PoolUse]
    placement: Placement
    startup_s: float | None = Field(
        None, description="MODEL §8 pipeline fill before the first batch (s), when the plan reports it"
    )
    stages: list[StagePlan] | None = Field(
        None,
        description="MODEL §12: each stage of a staged plan; cadence_s is then the run's mean seconds per iteration",
    )
    billed_gpus: int | None = Field(
        None, description="MODEL §14: the GPUs billed (a run with a regime section; colocated: each pool's larger use)"
    )
    age_limit: int | None = Field(
        None,
        description="MODEL §14: the K that bounds a consumed gap under staleness drop (versions_kept without in-flight "
        "updates, which keep one version resident); null where nothing is dropped for age (batch modes, admission)",
    )

    def capacity_changes(self) -> list[int]:
        """The stages p (0-based) after which a staged plan's capacity changes, from p to p + 1 (MODEL §12: each
        change costs the switch time under ``capacity: replan``); none for one stage or ``capacity: fixed``."""
        return capacity_changes([row.plan for row in self.stages or []])

    @property
    def node_count(self) -> int:
        """Local sandbox nodes of every type."""
        return sum(c.count for c in self.local_nodes)

    @property
    def vm_count(self) -> int:
        """Cloud VMs of every type."""
        return sum(c.count for c in self.cloud_vms)


def capacity_of(plan: Plan | None) -> tuple:
    """What a change of capacity compares (MODEL §12): replicas per shape, training groups, nodes and VMs per
    type; ``()`` for a stage row without a plan of its own (``capacity: fixed``, the run's counts in every stage)."""
    if plan is None:
        return ()
    return (
        tuple(r.replicas for r in plan.inference),
        plan.training_groups,
        tuple(c.count for c in plan.local_nodes),
        tuple(c.count for c in plan.cloud_vms),
    )


def capacity_changes(parts: Sequence[Plan | None]) -> list[int]:
    """The stages p (0-based) whose plan ``parts[p]`` differs in capacity from the next one's."""
    return [p for p in range(len(parts) - 1) if capacity_of(parts[p]) != capacity_of(parts[p + 1])]


class Metrics(Out):
    effective_trajectories_per_s: float
    attempts_per_s: float
    token_demand_per_s: float
    token_supply_per_s: float
    update_time_s: float
    inflight_mean: float
    inflight_peak: float
    occupancy_mean_s: float
    mean_version_gap: float
    p99_version_gap: float
    exceedance: float
    group_drop_rate: float
    effective_intake: float
    time_margin: float
    throughput_margin: float = Field(description="token supply / demand - 1")
    update_margin: float = Field(description="1 - update time / cadence")
    inflight_sized: float | None = Field(
        None, description="under planning.basis hold: Σ_b E^hold_b, the in-flight count the sandboxes hold (§11)"
    )
    training_goodput: float | None = Field(
        None, description="MODEL §13: γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train at the plan's G_t"
    )
    checkpoint_interval_s: float | None = Field(None, description="MODEL §13: τ, given or Young's (auto)")
    mtbf_training_s: float | None = Field(None, description="MODEL §13: M_train = gpu_mtbf / training GPUs")
    failures_expected: dict[str, float] | None = Field(
        None, description="MODEL §13: expected events over T: training T/M_train, and per shape over its replicas"
    )
    availability: dict[str, float] | None = Field(None, description="MODEL §13: a_s per shape")
    weight_sync_share: float | None = Field(None, description="MODEL §13: weight_sync_time / L")
    generation_phase_s: float | None = Field(
        None, description="MODEL §14, batch modes: D = max(N·tokens/S, M_N), a batch's generation phase"
    )
    slowest_attempt_s: float | None = Field(None, description="MODEL §14: M_N, the slowest attempt of a batch")
    generation_busy_share: float | None = Field(
        None, description="MODEL §14, batch modes: N·tokens/(S·D), the share of D the supply is busy"
    )
    launch_peak: float | None = Field(None, description="MODEL §14: row 6's launch figure, Σ_b N·s_b in batch modes")
    consumed_mean_gap: float | None = Field(None, description="MODEL §14: the consumed trajectories' mean gap")
    consumed_p99_gap: float | None = Field(None, description="MODEL §14: the consumed trajectories' p99 gap")
    recompute_share: float | None = Field(
        None, description="MODEL §14, recompute: prefix: the re-prefill demand over the whole token demand"
    )


class Timings(Out):
    load: float = 0.0
    build: float = 0.0
    solve: float = 0.0
    extract: float = 0.0
    verify: float = 0.0
    highs: float = 0.0


class ConfidenceReport(Out):
    """MODEL §9: a plan solved for an on-time probability, checked in and out of its sample."""

    target: float = Field(description="the confidence α planned for")
    scenarios: int = Field(description="S, the scenarios of the sample average approximation")
    needed: int = Field(description="ceil(α·S): scenarios the plan must be on time in")
    groups: int = Field(description="distinct scenarios after merging those that ask the same of every plan")
    in_sample: float = Field(description="share of the S scenarios the plan is on time in")
    out_of_sample: float = Field(description="share of check_samples fresh scenarios (seed check_seed) on time")
    out_of_sample_interval: list[float] = Field(description="Wilson 95 % interval of out_of_sample")
    check_samples: int
    seed: int | None = None
    check_seed: int | None = None
    allowance_s: float = Field(
        0.0, description="Δ, s: scenario s counts as on time iff T_s + Δ <= deadline (MODEL §11)"
    )
    replays: int | None = Field(None, description="replays of the plan, a scenario each (hold basis; null: none)")
    expected_total_cost: float | None = Field(
        None, description="mean realised cost over those replays (hourly cost at the scenario's prices · makespan), $"
    )
    p90_total_cost: float | None = Field(None, description="p90 of the replays' realised cost, $")


class HoldReport(Out):
    """MODEL §11: how the plan holds when it is replayed, and what holding costs."""

    allowance_s: float = Field(description="Δ, s: the deadline row is T + Δ <= deadline")
    rounds: int = Field(description="solve-and-replay rounds the allowance took")
    replays: int = Field(description="replays of the final plan (simulate replications, seeds seed + i)")
    seed: int = Field(description="replay i drew from seed + i")
    order: int = Field(description="k = ceil(on_time·(replays + 1)): the replay lateness that sets Δ")
    on_time_target: float
    lateness_s: float | None = Field(description="D_(k): the k-th smallest replay makespan - T, s")
    allowance_converged: bool = Field(description="the final plan passed its own replays: T + D_(k) <= deadline")
    on_time_share: float = Field(description="share of the final replays that ended by the deadline")
    on_time_interval: list[float] = Field(description="Wilson 95 % interval of on_time_share")
    makespan_s: dict[str, float | None] = Field(description="p50, p90 and max of the replays' makespans, s")
    sandbox_wait_share: float | None = Field(
        description="mean share of attempts that waited for a sandbox, over the replays (null: none ran)"
    )
    sandbox_wait_bound: float | None = Field(
        None,
        description="the k-th smallest of the replays' wait shares: the plan passes only if it is within "
        "planning.sandbox_wait (null: no replay queued a sandbox)",
    )
    sandbox_wait_sized: float | None = Field(
        None,
        description="the share of attempts waiting that the sandbox rows were sized for (MODEL §11 item 2's β): "
        "planning.sandbox_wait, or less where a plan's replays waited beyond it",
    )
    sandbox_wait_model: float | None = Field(
        None, description="the model's mean share of attempts that wait at the plan's sandboxes (Halfin–Whitt)"
    )
    expected_total_cost: float | None = Field(description="mean of hourly_cost · replay makespan / 3600, $")
    p90_total_cost: float | None = Field(description="p90 of the replays' realised total cost, $")
    steady_state_total_cost: float | None = Field(
        description="total_cost of the steady_state optimum of the same instance (null: it has none)"
    )
    steady_state_makespan_s: float | None = Field(None, description="makespan_s of that steady_state optimum")
    steady_state_status: str | None = None
    replay_seconds: float = Field(0.0, description="wall time of the replays this solve ran (reused ones cost none)")
    predicted_makespan_s: float | None = Field(
        None, description="the model's prediction of the replays' median makespan, T + the drift it expects, s"
    )
    allowance_start: str | None = Field(None, description="where Δ_0 came from: zero, estimate or neighbour")


class Result(Out):
    instance: str
    status: Status
    objective: str
    objective_value: float | None = None
    plan: Plan | None = None
    metrics: Metrics | None = None
    binding: list[str] = Field(default_factory=list)
    diagnosis: dict | None = None
    mip_gap: float | None = None
    message: str | None = None
    timings: Timings = Field(default_factory=Timings)
    model_size: dict[str, int] | None = None
    confidence: ConfidenceReport | None = None
    ties: dict | None = None  # {"plans", "decided_by", "sentence"}: plans tied after MODEL §4's order
    basis: str | None = Field(None, description="planning.basis the plan was sized on (MODEL §11)")
    hold: HoldReport | None = None
    regime: dict | None = Field(
        None, description='MODEL §14: {"mode", "staleness", "steps_ahead", "in_flight_updates"} of a run with regime:'
    )

    @property
    def allowance_s(self) -> float:
        """MODEL §11's Δ the plan was sized with: its hold report's, 0 without one (steady_state)."""
        return self.hold.allowance_s if self.hold is not None else 0.0

    def to_json(self) -> dict:
        out = self.model_dump(mode="json")
        for key in (
            "confidence",
            "hold",
            "ties",
            "regime",
        ):  # optional keys (MODEL §9, §11, ties, §14): only such solves have them
            if out[key] is None:
                del out[key]
        return out


def key_columns(plan: Plan, metrics: Metrics | None) -> dict:
    """A plan's key decisions and metrics, one column each: what a sweep row and a frontier CSV line show."""
    return plan_columns(plan.model_dump(mode="json"), None if metrics is None else metrics.model_dump(mode="json"))


def plan_columns(plan: dict, metrics: dict | None) -> dict:
    """:func:`key_columns` of a result's JSON form (``to_json()``'s "plan" and "metrics", as a batch's result files
    hold them): the one flattening of a plan into a row that frontier, sweep, batch, the certainty curve and the
    API take their columns from (a metric absent from ``metrics`` is None)."""
    metrics = metrics or {}
    return {
        "cadence_s": plan["cadence_s"],
        "versions_kept": plan["versions_kept"],
        "inference_gpus": plan["inference_gpus"],
        "training_gpus": plan["training_gpus"],
        "nodes": sum(n["count"] for n in plan["local_nodes"]),
        "vms": sum(v["count"] for v in plan["cloud_vms"]),
        "hourly_cost": plan["hourly_cost"],
        "total_cost": plan["total_cost"],
        "makespan_s": plan["makespan_s"],
        "time_margin": metrics.get("time_margin"),
        "exceedance": metrics.get("exceedance"),
        "group_drop_rate": metrics.get("group_drop_rate"),
    }


StagePlan.model_rebuild()
