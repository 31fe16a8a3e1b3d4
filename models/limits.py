"""The instance's limits, in one table: each one's field path, its words, how its values print, the step a lever
moves it by, where it binds and its plausibility cap. The diagnosis (its candidate changes), the levers (their
steps), the labels and the plausibility caps all read this table, so a new limit is one row here beside its
field, its model row and its checks.

``binds`` says what a limit cuts: ``pairs`` — (cadence, K) pairs, whose closed forms the diagnosis computes
(MODEL §3 rows 1–7, the deadline, the freshness limits) — or ``whole plan`` — node and VM caps and budgets,
which act on a plan's counts and costs, so only re-solves find their thresholds (MODEL §3.5–§3.7).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# An instance (models/instance.py) is read by attribute here: importing its class would tie the plausibility caps,
# which the instance's fields read, into a cycle.
Instance = Any

DAY_S = 86400.0
# One step of each kind of limit: versions kept +50 % (at least +1); pool sizes, node/VM caps, freshness limits
# and budgets +10 % (counts at least +1, shares at most 1); the deadline ±1 day; the restart and checkpoint
# times of a reliability section halved (MODEL §13: a restart or a checkpoint twice as fast).
VERSIONS_STEP = 0.5
LIMIT_STEP = 0.10
RELIABILITY_STEP = 0.5

WHOLE_PLAN = "whole plan"
PAIRS = "pairs"
MOST = 10**7  # the plausibility cap of a count of nodes or VMs (models/plausible.py's)


@dataclass(frozen=True)
class Limit:
    """One limit of the instance.

    ``path``: its field, ``[*]`` standing for each item of a list (``environment.node_types[*].max_nodes``).
    ``label``: its words (render/labels.py). ``kind``: how its values print (count, seconds, share, ratio,
    money). ``step``: how a lever relaxes it one step — ``more`` (+10 %, at least +1), ``versions`` (+50 %, at
    least +1), ``day`` (one day looser, and one tighter while the deadline stays above the extra time),
    ``relative`` (+10 %, a share at most 1), ``halved``. ``binds``: :data:`PAIRS` or :data:`WHOLE_PLAN`.
    ``cap``: (largest plausible value, its unit) for models/plausible.py. ``lever``, ``finding``: the names a
    lever and a diagnosis give it, ``{item}`` the list item's name. ``criterion``: the plan figure a budget
    caps; ``counts``: the plan's list of the hosts a cap counts (``local_nodes``, ``cloud_vms``)."""

    path: str
    label: str
    kind: str
    step: str
    binds: str
    cap: tuple[float, str] | None = None
    lever: str = "{key}"
    finding: str = "{key}"
    criterion: str | None = None
    counts: str | None = None

    @property
    def key(self) -> str:
        return self.path.rsplit(".", 1)[-1]


LIMITS: tuple[Limit, ...] = (  # in the order the levers list them
    Limit("freshness.max_versions_kept", "max versions kept", "count", "versions", PAIRS, (1e4, "versions")),
    Limit("gpu_pools[*].gpus", "GPUs", "count", "more", PAIRS, lever="GPUs in pool {item}", finding="gpus[{item}]"),
    Limit(
        "environment.node_types[*].max_nodes",
        "max nodes",
        "count",
        "more",
        WHOLE_PLAN,
        (MOST, "nodes"),
        lever="max_nodes of {item}",
        finding="max_nodes[{item}]",
        counts="local_nodes",
    ),
    Limit(
        "environment.cloud.vm_types[*].max_vms",
        "max VMs",
        "count",
        "more",
        WHOLE_PLAN,
        (MOST, "VMs"),
        lever="max_vms of {item}",
        finding="max_vms[{item}]",
        counts="cloud_vms",
    ),
    Limit("schedule.deadline", "deadline", "seconds", "day", PAIRS),
    Limit("freshness.max_mean_gap", "max mean version gap", "ratio", "relative", PAIRS, (1e7, "versions")),
    Limit("freshness.max_exceedance", "max exceedance", "share", "relative", PAIRS),
    Limit("freshness.max_group_drop", "max group drop", "share", "relative", PAIRS),
    Limit(
        "limits.max_hourly_cost",
        "hourly budget ($/h)",
        "money",
        "relative",
        WHOLE_PLAN,
        (1e12, "$ per hour"),
        criterion="hourly_cost",
    ),
    Limit(
        "limits.max_total_cost",
        "total budget ($)",
        "money",
        "relative",
        WHOLE_PLAN,
        (1e15, "$"),
        criterion="total_cost",
    ),
    Limit("reliability.restart_time", "restart time", "seconds", "halved", PAIRS, lever="restart time"),
    Limit("reliability.checkpoint_time", "checkpoint time", "seconds", "halved", PAIRS, lever="checkpoint time"),
)
BY_KEY = {limit.key: limit for limit in LIMITS}


@dataclass(frozen=True)
class SetLimit:
    """A limit as one instance sets it: the field's own path (``environment.node_types[0].max_nodes``), the list
    item's name (None for a field outside a list) and its value."""

    limit: Limit
    path: str
    item: str | None
    value: float

    @property
    def lever_name(self) -> str:
        return self.limit.lever.format(key=self.limit.key, item=self.item)

    @property
    def finding_name(self) -> str:
        return self.limit.finding.format(key=self.limit.key, item=self.item)

    def relaxed(self, inst: Instance) -> list[float]:
        """The values one lever step away (two for the deadline: a day looser and, while it stays above the
        extra time, a day tighter); none for a share already at 1."""
        v, step = self.value, self.limit.step
        if step == "more":
            return [v + max(1, math.ceil(v * LIMIT_STEP))]
        if step == "versions":
            return [v + max(1, math.ceil(v * VERSIONS_STEP))]
        if step == "day":
            return [v + DAY_S] + ([v - DAY_S] if v - DAY_S > inst.schedule.extra_time else [])
        if step == "halved":
            return [v * RELIABILITY_STEP]
        if self.limit.kind == "share":
            return [] if v >= 1 else [min(v * (1 + LIMIT_STEP), 1.0)]
        return [v * (1 + LIMIT_STEP)]


def set_limits(inst: Instance, binds: str | None = None) -> list[SetLimit]:
    """Every limit ``inst`` sets (a reliability time only when positive), in :data:`LIMITS`' order, each list's
    items in the instance's order; ``binds``: only those that bind there."""
    out = []
    for limit in LIMITS:
        if binds is not None and limit.binds != binds:
            continue
        for path, item, value in _values(inst, limit.path):
            if value is None or (limit.step == "halved" and not value > 0):
                continue
            out.append(SetLimit(limit, path, item, value))
    return out


def set_limit(inst: Instance, path: str) -> SetLimit | None:
    """The limit ``inst`` sets at the field ``path`` (e.g. ``environment.node_types[0].max_nodes``), if any."""
    return next((s for s in set_limits(inst) if s.path == path), None)


def _values(inst: Instance, pattern: str) -> Iterator[tuple[str, str | None, Any]]:
    """(path, item name, value) of each field ``pattern`` names in ``inst`` (nothing where a section is absent)."""
    head, star, leaf = pattern.partition("[*].")
    if not star:
        parent_path, _, key = pattern.rpartition(".")
        parent = _walk(inst, parent_path)
        if parent is not None:
            yield pattern, None, getattr(parent, key)
        return
    items = _walk(inst, head) or []
    for i, item in enumerate(items):
        yield f"{head}[{i}].{leaf}", getattr(item, "name", None), getattr(item, leaf)


def _walk(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part)
    return obj
