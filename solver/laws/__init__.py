"""The closed forms the model reads: MODEL.md §2 (calculus, normal), §8 (startup), §11 (holding), §13 (goodput). No pyomo."""
