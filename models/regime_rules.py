"""The rules of MODEL.md §14 that tie the ``regime`` fields to one another and to the rest of the instance,
and the refusal of a regime the planner does not plan yet.

A field that applies to one mode only, set to anything but its default in another mode, is an error (not a
warning): a regime block that says two things at once would otherwise be planned as one of them silently.
"""

from __future__ import annotations

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.regime import Regime

SECTION = "docs/model.md §14"


def regime_errors(inst: Instance) -> list[Problem]:
    """Every broken rule of the instance's regime (none without one), each naming its field."""
    r = inst.regime
    if r is None:
        return []
    problems = _steps_ahead(r) + _async_only(r) + _options(r)
    if r.mode == "colocated":
        problems += _colocated_pools(inst)
    return problems


def _steps_ahead(r: Regime) -> list[Problem]:
    where, k = "regime.steps_ahead", r.steps_ahead
    if r.mode == "pipelined":
        if k is None:
            return [Problem(where, "is required with mode: pipelined: 0 (generate, then train) or 1 (one step off)")]
        if k not in (0, 1):
            return [Problem(where, f"must be 0 or 1 with mode: pipelined, got {k:g}")]
        return []
    if r.mode == "async" and r.staleness == "admission":
        if k is None:
            return [
                Problem(
                    where,
                    "is required with staleness: admission: at most (k+1) batches' worth of groups are started but "
                    "not yet trained; give a real k >= 1",
                )
            ]
        if k < 1:
            return [Problem(where, f"must be >= 1 with staleness: admission, got {k:g}")]
        return []
    if k is not None:
        other = (
            "under staleness: drop the versions kept are freshness.max_versions_kept"
            if r.mode == "async"
            else ("colocated generates and trains in turn")
        )
        return [Problem(where, f"applies to mode: pipelined and staleness: admission only ({other}); remove it")]
    return []


def _async_only(r: Regime) -> list[Problem]:
    """staleness and in-flight updates belong to mode async; admission needs in-flight updates."""
    problems = []
    if r.mode != "async":
        if r.staleness != "drop":
            problems.append(Problem("regime.staleness", f"applies to mode: async only (mode is {r.mode}); remove it"))
        if r.in_flight_updates:
            problems.append(
                Problem(
                    "regime.in_flight_updates",
                    f"applies to mode: async only (mode is {r.mode}: a batch is generated on one version); remove it",
                )
            )
    elif r.staleness == "admission" and not r.in_flight_updates:
        problems.append(
            Problem(
                "regime.in_flight_updates",
                "must be true with staleness: admission: without in-flight updates an admission run keeps "
                f"unboundedly many versions resident ({SECTION})",
            )
        )
    return problems


def _options(r: Regime) -> list[Problem]:
    """Fields that refine another field's choice, set where that choice is not made."""
    default = Regime()
    problems = []
    if r.recompute == "prefix" and not r.in_flight_updates:
        problems.append(
            Problem("regime.recompute", "prefix applies with in_flight_updates: true only; set it or remove recompute")
        )
    if r.recompute == "none":
        for name in ("prefill_cost", "context_tokens"):
            if getattr(r, name) != getattr(default, name):
                problems.append(Problem(f"regime.{name}", "applies to recompute: prefix only; remove it"))
    if r.truncated != "keep" and r.rollout_timeout is None:
        problems.append(
            Problem("regime.truncated", "applies with a rollout_timeout only; set regime.rollout_timeout or remove it")
        )
    if r.mode != "colocated" and r.switch_time > 0:
        problems.append(
            Problem("regime.switch_time", f"applies to mode: colocated only (mode is {r.mode}); remove it or set 0s")
        )
    return problems


def _colocated_pools(inst: Instance) -> list[Problem]:
    """Colocated inference runs on the training pool's GPUs, which may not be preemptible."""
    train = inst.training.pool
    problems = []
    for i, shape in enumerate(inst.inference.shapes):
        where = f"inference.shapes[{i}].pool"
        if shape.pool != train:
            problems.append(
                Problem(
                    where,
                    f"'{shape.pool}' is not the training pool '{train}': under regime.mode colocated inference and "
                    "training share the training pool's GPUs",
                )
            )
        elif inst.pool(shape.pool).preemptions_per_hour is not None:
            problems.append(
                Problem(
                    where,
                    f"'{shape.pool}' has preemptions_per_hour: under regime.mode colocated a preemption stops the "
                    "whole job; use a pool without preemptions_per_hour",
                )
            )
    return problems


def planned(inst: Instance) -> bool:
    """The planner plans this instance's regime: the seed's (none, or async/drop with the rest at defaults), a
    batch run, an admission run or an async drop run with regime fields set (:func:`unplanned_reason` says which
    combinations it plans)."""
    return unplanned_reason(inst) is None


def described(r: Regime) -> str:
    """The regime's label, with the fields its label does not show that are off their default ('async drop (with
    rollout_timeout, max_concurrent_attempts)'): an async drop run with a timeout is not the seed's."""
    shown = ("mode", "staleness", "steps_ahead", "in_flight_updates")  # the label's
    default = Regime()
    extra = [name for name in Regime.model_fields if name not in shown and getattr(r, name) != getattr(default, name)]
    return r.label + (f" (with {', '.join(extra)})" if extra else "")


def unplanned_reason(inst: Instance) -> str | None:
    """Why the planner does not plan this instance's regime yet (None when it does): the seed's regime is planned
    with everything; a batch run (MODEL §14: pipelined or colocated) without stages, a confidence solve, a
    reliability section or a preemptible pool (and, for steps_ahead 1, without count_startup or the hold basis);
    an admission run likewise, on either basis; an async drop run with regime fields set (in-flight updates, a
    rollout timeout, a concurrency cap, a weight-sync time) likewise, on either basis and with or without
    count_startup, a capped one on steady_state only (its replay does not hold launches back at the cap)."""
    r = inst.regime
    if r is None or r.is_default:
        return None
    dropping = r.mode == "async" and r.staleness == "drop"
    others = [
        (
            dropping and inst.planning.basis == "hold" and r.max_concurrent_attempts is not None,
            "planning.basis hold with max_concurrent_attempts (its replay does not hold launches back at the cap "
            "yet): set planning.basis: steady_state",
        ),
        (
            inst.planning.basis == "hold" and r.steps_ahead == 1 and r.batched,
            "planning.basis hold with steps_ahead 1 (its start-up depends on the first batch's supply): set "
            "planning.basis: steady_state",
        ),
        (inst.stages is not None, "stages"),
        (inst.uncertainty is not None and inst.uncertainty.confidence is not None, "uncertainty.confidence"),
        (inst.reliable, "a reliability section or a preemptible pool"),
        (r.batched and r.steps_ahead == 1 and inst.schedule.count_startup, "schedule.count_startup with steps_ahead 1"),
    ]
    found = [what for hit, what in others if hit]
    if not found:
        return None
    name = described(r) if dropping else r.label
    return f"{name} is planned, but not yet with {found[0]} ({SECTION})"


def refuse_unplanned(inst: Instance, label: str | None = None) -> None:
    """InstanceError naming regime.mode for a regime the planner does not plan yet (:func:`unplanned_reason`), with
    the setting it is not planned with. ``label``: the file to name (default the instance's name)."""
    reason = unplanned_reason(inst)
    if reason is None:
        return
    raise InstanceError(label or inst.name or "instance", [Problem("regime.mode", reason)])


def refuse_unreplayed(inst: Instance, label: str | None = None) -> None:
    """InstanceError naming regime.mode for a regime the §10 engine does not replay: a batch or admission run
    (``simulate`` replays them by their own module, with fewer options) and an async drop run with a concurrency
    cap (the engine launches at the plan's rate, ungated). ``label``: the file to name."""
    refuse_unplanned(inst, label)
    r = inst.regime
    if r is None or r.is_default:
        return
    if r.own_replay:
        why = (
            f"{r.label} is planned and replayed by solve and simulate, but not replayed yet here: simulate's "
            f"scenario, trace and worker options read the seed's regime only ({SECTION})"
        )
    elif r.max_concurrent_attempts is not None:
        why = (
            f"{described(r)} is planned by solve on steady_state, but not replayed yet: the replay launches at the "
            f"plan's rate and does not hold launches back at regime.max_concurrent_attempts ({SECTION})"
        )
    else:
        return
    raise InstanceError(label or inst.name or "instance", [Problem("regime.mode", why)])


def refuse_regime_replays(inst: Instance, label: str | None = None) -> None:
    """InstanceError naming regime.mode for any regime but the seed's where scenarios are replayed trajectory by
    trajectory (simulate --scenarios, risk's replays): a scenario's replay reads the seed's regime only. ``label``:
    the file to name."""
    refuse_unplanned(inst, label)
    r = inst.regime
    if r is None or r.is_default:
        return
    name = described(r) if r.mode == "async" and r.staleness == "drop" else r.label
    why = (
        f"{name} is planned, but its scenarios are not replayed yet: simulate --scenarios and risk's replays read "
        f"the seed's regime only ({SECTION})"
    )
    raise InstanceError(label or inst.name or "instance", [Problem("regime.mode", why)])
