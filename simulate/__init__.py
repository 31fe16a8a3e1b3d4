"""The trajectory-level replay of a plan (MODEL.md §10): setup (capacities), engine (one replication),
sandbox (the FIFO queue), summary (its figures), report (beside the model's), runner (replications), trace.

``trainground.simulate`` names this package and the API's :func:`trainground.api.simulate`: the API makes
the package callable when it is imported (docs/api.md), and a submodule loads on its first use here.
"""


def __getattr__(name: str):
    """A submodule, imported on first use: ``trainground.simulate.runner`` reads as written."""
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
