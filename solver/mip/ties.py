"""The last tie-breaks of an optimum: after MODEL.md §4's order, the fewest GPUs, then the fewest nodes.

Plans the §4 order cannot tell apart cost the same (within TIE_TOL) and take as long (the same
makespan). They are looked for in three places: the other pairs of the candidate set with the chosen
plan's makespan, one HiGHS run each cut off at the tied cost; inside each pair holding a tied plan,
plans on fewer inference cards (a cap on cards, bisected; a pair's training GPUs are fixed); and inside
each pair holding a tied plan on the fewest GPUs, plans on as many cards and fewer sandbox nodes (a cap
on nodes, bisected), where node types can trade at one price (two types, or a free one).
Every plan compared ties on cost by construction, so no optimum's cost changes: only which of the
equals is returned, and the count of equals found is reported with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.solver.mip.live import LiveModel
from trainground.solver.tolerances import SPAN_TOL


@dataclass(frozen=True)
class Tied:
    """One tied plan: its HiGHS values, its value of the tied criterion, and what the tie-break compares."""

    values: object
    value: float
    gpus: int
    nodes: int
    cards: int  # inference GPUs (what the cards cap bounds)
    pool_gpus: dict[str, int]  # GPUs used in each pool, training included


@dataclass(frozen=True)
class Ties:
    """The plans known to tie with the optimum (it included) and which rule chose among them."""

    plans: int  # a lower bound: the plans found, and those a reserved pool's free GPUs make at no cost
    decided_by: str | None  # "fewest GPUs" | "fewest nodes" | None: every plan found has as many of both

    def to_json(self) -> dict:
        return {"plans": self.plans, "decided_by": self.decided_by, "sentence": self.sentence()}

    def sentence(self) -> str:
        chosen = f"this one has the {self.decided_by}" if self.decided_by else "they have as many GPUs and nodes"
        kept = "" if self.decided_by else "; the first found is kept"
        return f"at least {self.plans} plans cost the same and take as long (MODEL.md §4's order ties them); {chosen}{kept}"


def tied_plan(live: LiveModel, values, value: float) -> Tied:
    """The counts the tie-break compares, read off HiGHS's values (rounded as the extracted plan's are)."""
    inst = live.inst
    blk = live.selected(values)
    row = live.block_rows[blk.key]

    def count(var) -> int:
        return int(round(float(values.get(var, 0.0) or 0.0)))

    used = {p.name: 0 for p in inst.gpu_pools}
    for s in inst.inference.shapes:
        used[s.pool] += count(blk.x[s.name]) * s.gpus_per_replica
    cards = sum(used.values())
    groups = int(live.pairs.groups[row]) + (count(blk.extra_groups) if hasattr(blk, "extra_groups") else 0)
    used[inst.training.pool] += groups * inst.training.gpus_per_group
    nodes = sum(count(blk.N[k]) for k in live.model.ix.nodes)
    return Tied(values, value, sum(used.values()), nodes, cards, used)


def free_replicas(inst: Instance, plan: Tied) -> int:
    """Plans that add replicas to ``plan`` at no cost: in a pool billed ``reserved`` (or at $0 a GPU), every
    replica that fits its free GPUs adds supply only, so each count of them added is another plan."""
    out = 0
    for s in inst.inference.shapes:
        pool = inst.pool(s.pool)
        if pool.billing == "reserved" or pool.gpu_hour_cost == 0:
            out += max(0, pool.gpus - plan.pool_gpus[pool.name]) // s.gpus_per_replica
    return out


def cards_can_tie(inst: Instance) -> bool:
    """Whether two plans of one pair can cost the same on different inference cards. Not when every pool
    that hosts a shape is billed by use at one positive price: a pair's training, nodes and VMs do not
    depend on the replicas, so there the cost grows with every card."""
    pools = {s.pool for s in inst.inference.shapes}
    billed = [inst.pool(p) for p in pools]
    prices = {p.gpu_hour_cost for p in billed}
    return any(p.billing == "reserved" for p in billed) or len(prices) > 1 or prices == {0.0}


def nodes_can_tie(inst: Instance) -> bool:
    """Whether two plans of one pair on the same cards can cost the same on different node counts: when there
    are two node types (a type twice as dense at twice the price, say) or a node costs nothing. (A node
    traded for cloud VMs of exactly its price is not looked for.)"""
    types = inst.environment.node_types
    return len(types) > 1 or any(k.hour_cost == 0 for k in types)


def break_ties(
    live: LiveModel, criterion: str, bound: float, rows: list[int], best: Tied, clock
) -> tuple[Tied, Ties, int]:
    """Among the plans tied with ``best`` (under ``criterion`` at most ``bound``, the same makespan, in the
    pairs of ``rows``), the one with the fewest GPUs, then the fewest nodes; with the HiGHS runs spent."""
    span = live.pairs.makespan
    chosen = live.block_rows[live.selected(best.values).key]
    same = [r for r in rows if r != chosen and abs(span[r] - span[chosen]) <= SPAN_TOL * span[chosen]]
    found, runs = [best], 0
    for row in same:
        if clock.expired():
            break
        outcome = live.run(criterion, [row], bound)
        runs += outcome.runs
        if outcome.values is not None and outcome.objective_value is not None and outcome.objective_value <= bound:
            found.append(tied_plan(live, outcome.values, outcome.objective_value))
    if cards_can_tie(live.inst):
        for plan in list(found):
            fewer, spent = _fewest_cards(live, criterion, bound, plan, clock)
            runs += spent
            found += fewer
    if nodes_can_tie(live.inst):
        least = min(t.gpus for t in found)
        for plan in [t for t in found if t.gpus == least and t.nodes > 0]:
            fewer, spent = _fewest_nodes(live, criterion, bound, plan, clock)
            runs += spent
            found += fewer
    winner = min(found, key=lambda t: (t.gpus, t.nodes))  # stable: the first found among equals
    rest = [t for t in found if t is not winner]
    more = free_replicas(live.inst, winner)
    if not rest and not more:
        return winner, Ties(1, None), runs
    if more or any(t.gpus > winner.gpus for t in rest):
        rule: str | None = "fewest GPUs"
        if any(t.gpus == winner.gpus and t.nodes > winner.nodes for t in rest):
            rule = "fewest GPUs, then the fewest nodes"
    elif any(t.nodes > winner.nodes for t in rest):
        rule = "fewest nodes"
    else:
        rule = None
    return winner, Ties(len(found) + more, rule), runs


def _fewest_cards(live: LiveModel, criterion: str, bound: float, plan: Tied, clock) -> tuple[list[Tied], int]:
    """Plans of ``plan``'s pair tied with it on fewer inference cards, down to the fewest (a bisection over
    a cap on cards: each run keeps the tied bound), in the order found; with the runs spent."""
    row = live.block_rows[live.selected(plan.values).key]
    found: list[Tied] = []
    runs, low, high = 0, -1, plan.cards  # no tied plan of this pair has <= low cards; one has ``high``
    while high - low > 1 and not clock.expired():
        limit = high - 1 if not found else (low + high) // 2
        with live.extra_cap("cards", limit):
            outcome = live.run(criterion, [row], bound)
        runs += outcome.runs
        if outcome.values is not None and outcome.objective_value is not None and outcome.objective_value <= bound:
            tied = tied_plan(live, outcome.values, outcome.objective_value)
            found.append(tied)
            high = tied.cards
        elif not found:
            break  # not even one card fewer: ``plan`` has this pair's fewest
        else:
            low = limit
    return found, runs


def _fewest_nodes(live: LiveModel, criterion: str, bound: float, plan: Tied, clock) -> tuple[list[Tied], int]:
    """Plans of ``plan``'s pair tied with it on at most its cards and fewer sandbox nodes, down to the fewest
    (a bisection over a cap on nodes beside a cap on cards at ``plan``'s), in the order found; with the runs."""
    row = live.block_rows[live.selected(plan.values).key]
    found: list[Tied] = []
    runs, low, high = 0, -1, plan.nodes  # no tied plan of this pair has <= low nodes; one has ``high``
    with live.extra_cap("cards", plan.cards):
        while high - low > 1 and not clock.expired():
            limit = high - 1 if not found else (low + high) // 2
            with live.extra_cap("nodes", limit):
                outcome = live.run(criterion, [row], bound)
            runs += outcome.runs
            value = outcome.objective_value
            if outcome.values is not None and value is not None and value <= bound:
                tied = tied_plan(live, outcome.values, value)
                found.append(tied)
                high = tied.nodes
            elif not found:
                break  # not even one node fewer: ``plan`` has this pair's fewest on its cards
            else:
                low = limit
    return found, runs
