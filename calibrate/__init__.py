"""calibrate: run logs (trajectories, steps) -> instance fields with bootstrap intervals (a driver above solve)."""
