"""The trajectory-level replay of a plan (MODEL.md §10): setup (capacities), engine (one replication),
sandbox (the FIFO queue), summary (its figures), report (beside the model's), runner (replications), trace.

Installed as ``trainground.simulation`` (``trainground.simulate`` is the API's function, docs/api.md); a
submodule loads on its first use here.
"""


def __getattr__(name: str):
    """A submodule, imported on first use: ``trainground.simulation.runner`` reads as written."""
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
