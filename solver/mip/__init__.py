"""The planning MIP: the pyomo model, its life in HiGHS across solves, the searches of MODEL.md §4 over it, tie-breaks, metrics and the verified result."""
