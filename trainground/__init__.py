"""trainground: size the training ground of an agentic-RL run as one mixed-integer program.

The Python API (docs/api.md): :func:`load`, :func:`solve`, :func:`simulate`, :func:`risk`,
:func:`frontier`, :func:`sweep` and :func:`report`, each over the same drivers the commands call.

The repository keeps its packages at its top (``solver/``, ``models/``, ``cli.py``, ...); an installed
trainground holds them inside this package (pyproject.toml maps them). In a checkout, this package's
``__path__`` also names the repository's root, so that ``trainground.solver`` is ``solver/`` there too.

The names above are loaded on first use (PEP 562), so importing the package loads nothing else and no
module of the package imports it back; a type checker reads them, with their hints, from
:mod:`trainground.api`.
"""

from pathlib import Path as _Path

_CHECKOUT = _Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "cli.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 (a package's __path__ is defined by the import system)

_API = {"Frontier", "RiskReport", "Simulation", "Solution", "Sweep", "frontier", "load", "plan_row", "report", "risk"}
_API |= {"solve", "sweep"}


def __getattr__(name: str):
    """The API's names from :mod:`trainground.api`; ``simulate`` is the subpackage simulate/, which the API
    makes callable (calling it calls :func:`trainground.api.simulate`)."""
    import importlib

    if name in _API:
        return getattr(importlib.import_module("trainground.api"), name)
    if name == "InstanceError":
        return importlib.import_module("trainground.models.errors").InstanceError
    if name == "simulate":
        importlib.import_module("trainground.api")
        return importlib.import_module("trainground.simulate")
    raise AttributeError(f"module 'trainground' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
