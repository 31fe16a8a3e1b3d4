"""trainground: size the training ground of an agentic-RL run as one mixed-integer program.

The Python API (docs/api.md): :func:`load`, :func:`solve`, :func:`simulate`, :func:`risk`,
:func:`frontier`, :func:`sweep` and :func:`report`, each over the same drivers the commands call.

The repository keeps its packages at its top (``solver/``, ``models/``, ``cli.py``, ...); an installed
trainground holds them inside this package (pyproject.toml maps them). In a checkout, this package's
``__path__`` also names the repository's root, so that ``trainground.solver`` is ``solver/`` there too.
"""

from pathlib import Path as _Path

_CHECKOUT = _Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "cli.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 (a package's __path__ is defined by the import system)

from trainground.api import (  # noqa: E402 (the path first: the API imports the packages through it)
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
from trainground.models.errors import InstanceError  # noqa: E402


def _callable_package(name: str, function) -> None:
    """``trainground.simulate`` names both the subpackage simulate/ and the API function: once the subpackage
    is imported, the attribute is the package (as the import system sets it), so calling it calls the function.
    Both readings then hold: ``trainground.simulate(...)`` and ``trainground.simulate.runner``."""
    import importlib
    import inspect
    import types

    package = importlib.import_module(name)
    package.__class__ = type("CallablePackage", (types.ModuleType,), {"__call__": staticmethod(function)})
    package.__signature__ = inspect.signature(function)


_callable_package("trainground.simulate", simulate)

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
