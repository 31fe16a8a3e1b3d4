"""``compare`` on a staged instance (MODEL.md §12): one fixed fleet for every stage, or re-planning per stage?

The planner's question once responses lengthen: one capacity sized for every stage idles cards in the
short-response stages; re-planning per stage fits each stage but pays ``switch_time`` (time, billed at
the hourly cost of the stage after it) at each change. :func:`capacity_choice` solves the instance under
the other capacity (the instance's own is the comparison's fewer-cards plan) and says what re-planning
saves after its switch costs.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainground.drivers.hold import planner_for
from trainground.models.instance import Instance
from trainground.models.result import Plan, Result


@dataclass
class CapacityChoice:
    """The cheapest plan under each capacity, at the switch time re-planning is charged."""

    fixed: Result
    replan: Result
    switch_time_s: float

    @property
    def ok(self) -> bool:
        return self.fixed.plan is not None and self.replan.plan is not None

    def switches(self) -> tuple[int, float]:
        """The re-planned plan's changes of capacity and what they cost ($: each switch at the hourly cost of
        the stage after it)."""
        plan = self.replan.plan
        if plan is None or not plan.stages:
            return 0, 0.0
        rows = plan.stages
        changes = [b for a, b in zip(rows, rows[1:]) if _capacity(a) != _capacity(b)]
        return len(changes), sum((b.hourly_cost or 0.0) * self.switch_time_s / 3600.0 for b in changes)

    def saving(self) -> float | None:
        """Fixed total cost less re-planned total cost ($; None unless both have a plan)."""
        if not self.ok:
            return None
        assert self.fixed.plan is not None and self.replan.plan is not None
        return self.fixed.plan.total_cost - self.replan.plan.total_cost

    def sentence(self) -> str:
        """What re-planning saves after its switch costs, in one line."""
        if not self.ok:
            missing = [name for name, r in (("fixed", self.fixed), ("replan", self.replan)) if r.plan is None]
            return f"capacity: {' and '.join(missing)} has no plan ({', '.join(str(r.status) for r in (self.fixed, self.replan))})"
        assert self.fixed.plan is not None
        saved = self.saving() or 0.0
        count, paid = self.switches()
        share = saved / self.fixed.plan.total_cost if self.fixed.plan.total_cost else 0.0
        verb = "saves" if saved >= 0 else "costs"
        return (
            f"re-planning per stage {verb} ${abs(saved):,.0f} ({abs(share):.1%}) against one fixed fleet, after its "
            f"{count} switch{'es' if count != 1 else ''} of {self.switch_time_s / 60:g} min (${paid:,.0f})"
        )

    def to_json(self) -> dict:
        count, paid = self.switches()
        return {
            "switch_time_s": self.switch_time_s,
            "fixed_total_cost": _total(self.fixed.plan),
            "replan_total_cost": _total(self.replan.plan),
            "fixed_status": str(self.fixed.status),
            "replan_status": str(self.replan.status),
            "switches": count,
            "switch_cost": paid,
            "replan_saving": self.saving(),
            "sentence": self.sentence(),
        }


def _total(plan: Plan | None) -> float | None:
    return None if plan is None else plan.total_cost


def _capacity(stage) -> tuple:
    return (
        tuple((r.shape, r.replicas) for r in stage.inference or []),
        stage.training_groups,
        tuple((c.type, c.count) for c in stage.local_nodes or []),
        tuple((c.type, c.count) for c in stage.cloud_vms or []),
    )


def flipped(inst: Instance, switch_time: float | None) -> Instance:
    """``inst`` under the other capacity: ``replan`` at ``switch_time`` (default the instance's), or ``fixed``."""
    assert inst.stages is not None
    if inst.stages.capacity == "fixed":
        update = {"capacity": "replan", "switch_time": inst.stages.switch_time if switch_time is None else switch_time}
    else:
        update = {"capacity": "fixed", "switch_time": 0.0}
    return inst.model_copy(update={"stages": inst.stages.model_copy(update=update)})


def capacity_choice(inst: Instance, own: Result, switch_time: float | None = None) -> CapacityChoice:
    """The instance's own cheapest plan ``own`` beside the cheapest under the other capacity. ``switch_time``:
    re-planning's, s (default the instance's; it replaces a replan instance's own, whose plan is then
    solved again)."""
    assert inst.stages is not None
    if inst.stages.capacity == "replan" and switch_time is not None and switch_time != inst.stages.switch_time:
        at = inst.model_copy(update={"stages": inst.stages.model_copy(update={"switch_time": switch_time})})
        own, inst = planner_for(at).solve("total_cost"), at
    other = flipped(inst, switch_time)
    result = planner_for(other).solve("total_cost")
    if inst.stages.capacity == "fixed":
        assert other.stages is not None
        return CapacityChoice(own, result, other.stages.switch_time)
    return CapacityChoice(result, own, inst.stages.switch_time)
