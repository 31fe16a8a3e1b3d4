"""Staged runs (MODEL.md §12): the stages' pair tables, the staged and compact models, the hull search and the staged plan."""
