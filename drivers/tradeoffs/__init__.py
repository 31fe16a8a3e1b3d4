"""Many solves of one instance side by side: frontier, sweep, compare, the levers of a plan and the price of
certainty."""
