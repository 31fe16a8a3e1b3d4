"""Why no plan exists and the smallest change that restores one: screening, candidate changes, feasibility probes, findings and thresholds, in the instance's own field names."""
