"""trainground: size the training ground of an agentic-RL run as one mixed-integer program.

The Python API (docs/api.md): :func:`load`, :func:`solve`, :func:`simulate`, :func:`risk`,
:func:`frontier`, :func:`sweep`, :func:`regimes` and :func:`report`, each over the same drivers the commands call.

The repository keeps its packages at its top (``solver/``, ``models/``, ``cli.py``, ...); an installation
holds them inside this package (pyproject.toml maps each folder: ``solver/`` is ``trainground.solver``,
``simulate/`` is ``trainground.simulation``, so that ``trainground.simulate`` stays the API's function).
An editable install maps the folders itself; the one file it cannot map, ``cli.py``, is found by
:class:`_CheckoutCli` when this package is the checkout's (a wheel holds ``trainground/cli.py``).

The names above are loaded on first use (PEP 562), so importing the package loads nothing else and no
module of the package imports it back; a type checker reads them, with their hints, from
:mod:`trainground.api`.
"""

import sys as _sys
from importlib.machinery import ModuleSpec as _ModuleSpec
from importlib.util import spec_from_file_location as _spec_from_file_location
from pathlib import Path as _Path

_HERE = _Path(__file__).resolve().parent
_CHECKOUT_CLI = _HERE.parent / "cli.py"


class _CheckoutCli:
    """Finds ``trainground.cli`` in the checkout's ``cli.py`` when this package is the checkout's own (an
    editable install maps the folders, not a file at the repository's top). Nothing else is mapped, so the
    checkout's other files (``tests/``, ``trainground/`` itself) are not importable under ``trainground``."""

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None) -> _ModuleSpec | None:
        if fullname != "trainground.cli":
            return None
        return _spec_from_file_location(fullname, _CHECKOUT_CLI)


if not (_HERE / "cli.py").is_file() and _CHECKOUT_CLI.is_file():
    _sys.meta_path.append(_CheckoutCli)

_API = {"Frontier", "RiskReport", "Simulation", "Solution", "Sweep", "frontier", "load", "plan_row", "report", "risk"}
_API |= {"regimes", "simulate", "solve", "sweep"}
_PACKAGES = {"calibrate", "commands", "drivers", "models", "render", "simulation", "solver"}  # loaded on first use


def __getattr__(name: str):
    """The API's names from :mod:`trainground.api` (``simulate`` is its function; the replay's package is
    :mod:`trainground.simulation`), and the subpackages, each imported on its first use."""
    import importlib

    if name in _API:
        return getattr(importlib.import_module("trainground.api"), name)
    if name == "InstanceError":
        return importlib.import_module("trainground.models.errors").InstanceError
    if name in _PACKAGES:
        return importlib.import_module(f"trainground.{name}")
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
    "regimes",
    "report",
    "risk",
    "simulate",
    "solve",
    "sweep",
]
