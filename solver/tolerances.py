"""Every numerical tolerance of the solve layer, named once, each with why it has its value.

The independent verifier (solver/verify*.py) names its own at the top of its modules: it shares no code
and no reading with the model it checks, tolerances included.

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
n·(min + j·step) is computed in floating point, so equal points can differ in the last bits.
(The verifier's MAKESPAN_TOL, 1e-9 in solver/verify/plan.py, is another quantity: how far a reported
makespan may sit from the verifier's recomputation of n·L + extra_time.)"""

ZERO_SHARE_TOL = 1e-15
"""An exceedance or group-drop limit admits a share this far above it (absolute): REL_TOL scales
with the limit and vanishes at a limit of 0, where a share that is 0 (an integral of a survival
function past its support) can come out a few ulps above."""

INTEGER_TOL = 1e-12
"""A product of inputs meant to be a whole number (α·S scenarios, the grid's points, the GPUs a shape
mix fills) is read as that number when floating point lands it this far past it (relative): a
ceiling or floor never adds or drops one for rounding noise."""

GRID_TOP_TOL = 1e-9
"""A cadence past the grid's top by less than this many steps is still a grid point: (top - min)/step
can fall a hair short of a whole number when top is itself a grid point. (The verifier's GRID_TOL,
1e-6 in solver/verify/plan.py, is its own test that a reported cadence lies on the grid.)"""

NEWTON_STEP_TOL = 1e-12
"""The start-up fill's Newton iteration (MODEL.md §8) stops when every step is below this share of
its iterate: the fill is then exact to about 12 digits, far inside what the verifier checks (1e-6)."""

QUANTILE_TOL = 1e-12
"""A consumed gap's conditional CDF (MODEL.md §11 item 3) reaches 0.99 when it is this close below it
(relative): the CDF is a sum of integrals, so a gap whose share is exactly 0.99 can land a few ulps short."""

PRINT_TOL = 1e-9
"""A threshold rounded for print in the direction that keeps it feasible moves one printed unit only
when it is past a printed digit by more than this (in printed units): 4.0000000001 prints as 4."""

BOUND_SLACK = 1e-7
"""A cost bound rounds a fractional count (replicas, nodes) up to the next integer only when it is
past the integer by more than this relative distance: HiGHS meets rows to FEASIBILITY_TOL, so a
plan may sit that far inside a rounded-up count, and the bound must stay valid for it."""

FEASIBILITY_TOL = 1e-9
"""HiGHS primal and MIP feasibility tolerance. Rows are scaled to O(1..1e5) (attempts/s,
environments, GPUs); HiGHS's default 1e-6/1e-7 would let a plan miss its throughput by a few
1e-7 attempts/s, which the verifier (at 1e-8 relative) rejects."""

REGIME_FEASIBILITY_TOL = 1e-7
"""HiGHS's feasibility tolerance on the model of a run regime (MODEL.md §14): their blocks (a batch's launch peak
of thousands of environments beside a supply row of a few attempts a second, a pool nearly all one row's
training) are ones HiGHS at FEASIBILITY_TOL calls infeasible as a whole, or optimal at a dearer plan, where each
alone solves (seen on the seed week pipelined at k = 0); at this tolerance every such run is consistent and the
brute force agrees. The verifier still checks every row at its own ROW_TOL."""

COST_CHECK_TOL = 1e-7
"""The objective HiGHS reports and the cost the plan reports (from the model's named cost terms,
at the rounded integer counts) must agree to this relative distance; counts are rounded from
values within FEASIBILITY_TOL of integers, so an honest plan agrees to ~1e-9."""

SOLUTION_COST_TOL = 1e-7
"""The objective HiGHS reports and the cost of the solution it returns (column costs times values, plus
the offset) must agree to this relative distance; a solution that does not is another run's
(:func:`solver.highs.outcome_of`); an honest one differs by floating-point summation only."""

NO_LIMIT = 1e30
"""An absent limit in a reusable model's rows (HiGHS reads any bound beyond 1e20 as infinite)."""

CONVEX_TOL = 1e-12
"""A sequence of update times is convex when no step is smaller than the one before by more than this
distance relative to the update times themselves: an inverse or Amdahl law evaluated in floating point is
convex to a few ulps, and a line through two neighbours then passes above the others by rounding noise
only (far below a second)."""

ROOT_WIDTH_TOL = 1e-13
"""A deadline pace's root (MODEL.md §9, solver/uncertainty/deadline.py) is found once its bracket is narrower
than this share of the pace (at least of 1 s), and a scenario's smallest cadence (solver/uncertainty/scenarios.py)
once its bracket is narrower than this share of its top: the last few bits of a double, so either is exact to
print."""

ROOT_VALUE_TOL = 1e-12
"""The same root is also found once the run's lateness at the bracket's lower end is within this share of the
run's length of 0: the lateness is a sum over n iterations, whose rounding is about this large."""

SLOPE_FLOOR = 1e-300
"""A Newton step divides by a slope at least this (a completed-group curve can be flat to double precision far
below its median): the step is then huge and the iteration's own bracket takes over; not a tolerance."""

WEIGHT_TOL = 1e-9
"""Scenario weights (MODEL.md §9) are shares of the scenario set summed in floating point: a set of groups
reaches the weight a confidence needs, or stays within the weight it may lose, when it is this close (absolute,
on shares of 1)."""

RATIO_TOL = 1e-12
"""Two ratios of the same instance's quantities (a peak over its steady load, one shape's throughput multiplier
against another's) are one ratio within this relative distance: they differ by rounding only."""

HULL_TOL = 1e-12
"""A confidence hull's corners (solver/confidence/cuts.py) span a range or an edge only when it is longer than
this (relative, on coordinates scaled to [0, 1]): shorter ones are rounding, not a facet."""

BILL_SLACK = 1e-6
"""A replan model's bill per stage pair (solver/stages/replan.py) is held at least at the pair's cost bound less this
share: a plan whose hourly cost equals its bound (the bound's counts whole, as often) stays within it after the
float error of the bound's sums; the bill itself is exact, the bound only steers the LP relaxation."""

DOUBT_SLACK = 1e-6
"""A training-group row whose cost bound is within this relative distance of a budget (or of the cover's most
cost) is kept: far above the float error of the bound's products, and a row kept in doubt costs only its row."""
