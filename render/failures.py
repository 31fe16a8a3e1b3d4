"""The lines `simulate` prints about MODEL.md §13's injection: failures per run and time lost per cause, beside
the closed forms. No computation beyond unit changes."""

from __future__ import annotations

TRAINER = (("training_restart", "restarts"), ("training_rework", "rework"), ("checkpoints", "checkpoints"))


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h"


def failure_lines(simulated: dict, predicted: dict) -> list[str]:
    """Empty without §13's terms; else the failures, the trainer's time lost and the fleet's."""
    failures = simulated.get("failures")
    if not failures:
        return []
    expected = predicted.get("failures") or {}
    counts = ", ".join(
        f"{name} {count:,.1f}" + (f" (model {expected[name]:,.1f})" if name in expected else "")
        for name, count in failures.items()
    )
    lines = [f"failures per run (docs/model.md §13, mean over replications): {counts}"]
    lost = simulated.get("time_lost_s") or {}
    gamma, model_gamma = simulated.get("training_goodput"), predicted.get("training_goodput")
    if gamma is not None:
        parts = ", ".join(f"{label} {_hours(lost.get(key, 0.0))}" for key, label in TRAINER)
        line = f"trainer time lost: {parts}; training goodput {gamma:.4f}"
        lines.append(line + (f" (model {model_gamma:.4f})" if model_gamma is not None else ""))
    availability = simulated.get("availability") or {}
    model_availability = predicted.get("availability") or {}
    fleet = []
    for name, value in availability.items():
        down, redo = lost.get(f"replica_restart:{name}", 0.0), lost.get(f"replica_rework:{name}", 0.0)
        if value is None or down + redo == 0:
            continue
        text = f"{name} down {_hours(down)}, work redone {_hours(redo)} (replica-hours), availability {value:.4f}"
        model = model_availability.get(name)
        fleet.append(text + (f" (model {model:.4f}, a busy replica's)" if model is not None else ""))
    if fleet:
        lines.append("replicas: " + "; ".join(fleet))
    if lost.get("weight_sync") or "launch_delay_mean_s" in simulated:
        sync = lost.get("weight_sync", 0.0)
        delay = simulated.get("launch_delay_mean_s") or 0.0
        lines.append(
            f"weight sync paused the fleet {_hours(sync)}; launches {delay:,.1f} s after their planned time on average"
        )
    return lines
