"""The (cadence, K) pair table and the numbers its rows read: admissible pairs, dominance, group counts, coefficients, cost bounds. No pyomo."""
