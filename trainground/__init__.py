"""trainground: size the training ground of an agentic-RL run as one mixed-integer program.

The Python API (docs/api.md): :func:`load`, :func:`solve`, :func:`simulate`, :func:`risk`,
:func:`frontier`, :func:`sweep`, each over the same drivers the commands call.
"""

from models.errors import InstanceError
from trainground.api import (
    Frontier,
    RiskReport,
    Simulation,
    Solution,
    Sweep,
    frontier,
    load,
    plan_row,
    report,
    risk,
    simulate,
    solve,
    sweep,
)

__all__ = [
    "Frontier",
    "InstanceError",
    "RiskReport",
    "Simulation",
    "Solution",
    "Sweep",
    "frontier",
    "load",
    "plan_row",
    "report",
    "risk",
    "simulate",
    "solve",
    "sweep",
]
