"""The confidence solve of MODEL.md §9: per-scenario levels, hull cuts, each pair's model and the search over them, and what the result reports."""
