"""Why no plan exists and the smallest change that restores one, in the instance's own field names: the per-pair
screen, candidate changes, feasibility probes, findings and thresholds, two changes at once, and the goodput and
staged cases."""
