"""Many solves of one instance side by side: frontier, sweep, compare and the levers of a plan."""
