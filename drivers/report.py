"""What `report` puts on one page: the answer `solve` gives (:func:`drivers.answer.answer`), the frontier, and,
where the instance has an ``uncertainty:`` section, the plan's risk and the price of certainty.

Nothing here is computed anew: each part is the driver its own command calls (`solve`, `frontier`, `risk`,
`frontier --confidence-curve`), so the page's numbers are those commands' numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from trainground.drivers.answer import LEVERS_SECONDS, Answer, answer
from trainground.drivers.risk import SAMPLES, Risk
from trainground.drivers.tradeoffs.certainty import CertaintyCurve
from trainground.drivers.tradeoffs.frontier import Frontiers
from trainground.models.instance import Instance
from trainground.models.regime_rules import described, refuse_unplanned
from trainground.models.result import Status
from trainground.solver.stopwatch import Stopwatch

ALPHAS = (0.5, 0.8, 0.9, 0.95)  # the confidences of the price-of-certainty curve unless told
FRONTIER_BASIS: str | None = None
"""The basis the report walks the frontier on unless told: None, the instance's own, the plan's. The frontier's
cheapest point is then the plan the page opens with (walked on steady_state under a hold plan, it showed a
cheaper "cheapest plan" than the plan itself). Under hold only the cheapest point runs the allowance loop;
every faster point carries its allowance, so the walk costs about one more hold solve, not one per point."""


@dataclass
class Findings:
    """The parts of one report; ``notes`` say why a part is missing."""

    answer: Answer
    frontier: Frontiers | None = None
    risk: Risk | None = None
    certainty: CertaintyCurve | None = None
    frontier_basis: str | None = None
    notes: list[str] = field(default_factory=list)


def gather(
    inst: Instance,
    objective: str | None = None,
    *,
    clock: Stopwatch | None = None,
    replications: int | None = None,
    levers_time: float = LEVERS_SECONDS,
    alphas: Sequence[float] = ALPHAS,
    samples: int = SAMPLES,
    with_frontier: bool = True,
    frontier_basis: str | None = FRONTIER_BASIS,
    on_step: Callable[[str], None] | None = None,
) -> Findings:
    """Solve ``inst`` as `solve` does, then the frontier (``with_frontier``), the plan's risk over ``samples``
    scenarios and the best plan for each of ``alphas`` (with an uncertainty section). The frontier is walked on
    ``frontier_basis`` (None: the instance's own), as `frontier --basis` walks it. A run regime other than the
    seed's (MODEL §14) gets the solve, the frontier and its risk (risk's scenarios evaluate every regime,
    solver/uncertainty/drop.py, batch.py and admission.py), but no price of certainty (a confidence solve plans the
    seed's regime only), left out with a note saying why."""
    refuse_unplanned(inst)
    from trainground.drivers.replays import ReplayCache
    from trainground.drivers.risk import assess
    from trainground.drivers.tradeoffs.certainty import curve
    from trainground.drivers.tradeoffs.frontier import frontiers
    from trainground.solver.confidence.table import Unsupported

    step = on_step or (lambda _text: None)
    step("solving")
    replays = ReplayCache()  # the solve's replays, which the frontier's cheapest plan (the same plan) reuses
    found = Findings(
        answer(inst, objective, clock=clock, replications=replications, levers_time=levers_time, replays=replays)
    )
    result = found.answer.result
    if with_frontier:
        step("the frontier")
        basis = frontier_basis or inst.planning.basis
        walked = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": basis})})
        found.frontier = frontiers(walked, replays=replays)
        found.frontier_basis = basis
    if inst.uncertainty is None:
        found.notes.append(
            "no uncertainty section, so no risk and no price of certainty: add one (docs/model.md §9; "
            "instances/seed-week-75-uncertain.yaml has an example) to see how likely the plan is to finish on time"
        )
        return found
    regime = inst.regime
    if result.status == Status.OPTIMAL and result.plan is not None:
        step("the plan's risk")
        found.risk = assess(inst, result.plan, samples, allowance=result.allowance_s)  # MODEL §11, as risk does
    if regime is not None and not regime.is_default:
        found.notes.append(
            f"no price of certainty: solve --confidence plans the seed's regime only, not {described(regime)} (§14)"
        )
        return found
    if alphas:
        step("the price of certainty")
        try:
            found.certainty = curve(inst, list(alphas), objective, replays=replays)  # the solve's plan: replayed once
        except Unsupported as exc:
            found.notes.append(f"no price of certainty: {exc.path}: {exc.rule}")
    return found
