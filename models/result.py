"""The result of a solve (MODEL.md §6): what every command prints as JSON and `batch` writes per instance."""

from __future__ import annotations

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


class CostTerms(Out):
    gpu: float
    node: float
    vm: float


class Placement(Out):
    """Environments placed, {host type: {backend: environments}}: steady and peak on local nodes, peak on VMs."""

    steady: dict[str, dict[str, float]] = Field(default_factory=dict)
    peak: dict[str, dict[str, float]] = Field(default_factory=dict)
    cloud: dict[str, dict[str, float]] = Field(default_factory=dict)


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

    @property
    def node_count(self) -> int:
        """Local sandbox nodes of every type."""
        return sum(c.count for c in self.local_nodes)

    @property
    def vm_count(self) -> int:
        """Cloud VMs of every type."""
        return sum(c.count for c in self.cloud_vms)


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

    def to_json(self) -> dict:
        out = self.model_dump(mode="json")
        if out["confidence"] is None:  # an optional key (MODEL §9): only a confidence solve has it
            del out["confidence"]
        if out["ties"] is None:  # an optional key: only an optimum with equals has it
            del out["ties"]
        return out


def key_columns(plan: Plan, metrics: Metrics) -> dict:
    """A plan's key decisions and metrics, one column each: what a sweep row and a frontier CSV line show."""
    return {
        "cadence_s": plan.cadence_s,
        "versions_kept": plan.versions_kept,
        "inference_gpus": plan.inference_gpus,
        "training_gpus": plan.training_gpus,
        "nodes": plan.node_count,
        "vms": plan.vm_count,
        "hourly_cost": plan.hourly_cost,
        "total_cost": plan.total_cost,
        "makespan_s": plan.makespan_s,
        "time_margin": metrics.time_margin,
        "exceedance": metrics.exceedance,
        "group_drop_rate": metrics.group_drop_rate,
    }
