"""Every numerical tolerance of the solve layer, named once, each with why it has its value.

Quantities are in the model's units (seconds, attempts/s, environments, GPUs, $/h);
"relative" means relative to the larger of 1 and the quantity's magnitude.
"""

REL_TOL = 1e-9
"""MODEL.md §4: plans within this relative distance are equal, and a limit is met when a quantity
exceeds it by less. Applied when precomputed per-pair quantities meet their limits (deadline,
update time, freshness) so that a product of inputs landing a hair above a limit still passes."""

TIE_TOL = 1e-9
"""MODEL.md §4: plans within this relative distance of the optimum tie on the primary criterion,
and the tie-break decides between them."""

SPAN_TOL = 1e-12
"""Two makespans (or cadences) closer than this relative distance are the same grid point:
n·(min + j·step) is computed in floating point, so equal points can differ in the last bits."""

BOUND_SLACK = 1e-7
"""A cost bound rounds a fractional count (replicas, nodes) up to the next integer only when it is
past the integer by more than this relative distance: HiGHS meets rows to FEASIBILITY_TOL, so a
plan may sit that far inside a rounded-up count, and the bound must stay valid for it."""

FEASIBILITY_TOL = 1e-9
"""HiGHS primal and MIP feasibility tolerance. Rows are scaled to O(1..1e5) (attempts/s,
environments, GPUs); HiGHS's default 1e-6/1e-7 would let a plan miss its throughput by a few
1e-7 attempts/s, which the verifier (at 1e-8 relative) rejects."""

COST_CHECK_TOL = 1e-7
"""The objective HiGHS reports and the cost the plan reports (from the model's named cost terms,
at the rounded integer counts) must agree to this relative distance; counts are rounded from
values within FEASIBILITY_TOL of integers, so an honest plan agrees to ~1e-9."""

NO_LIMIT = 1e30
"""An absent limit in a reusable model's rows (HiGHS reads any bound beyond 1e20 as infinite)."""
