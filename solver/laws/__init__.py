"""Closed forms: MODEL.md §2 (calculus, normal), §8 (startup), §11 (holding; replay_drift, the lateness a
plan's replays will show), §13 (goodput), §14 (regimes). No pyomo."""
