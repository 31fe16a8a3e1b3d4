"""Two changes at once: for a diagnosis in which no single change restores a plan, or in which a
family's own limit lets its pairs through but restores no plan alone.

The first change is the own limit of one of the top families that cut (a freshness limit, a pool's
size, a tokens/s figure, a node cap); with it at its loosest, the inputs acting on what still cuts
are searched as in a single diagnosis (closed forms first); the first change is then tightened back
to its own threshold with the second in place. The cheapest pair is the one that moves its two
inputs least (the sum of their relative changes).
"""

from __future__ import annotations

from trainground.drivers.diagnosis import screen as sc
from trainground.drivers.diagnosis.candidates import edit_of
from trainground.drivers.diagnosis.feasibility import Feasibility
from trainground.drivers.diagnosis.findings import findings_of, text
from trainground.drivers.diagnosis.thresholds import settle
from trainground.models.edits import edited
from trainground.models.instance import Instance
from trainground.solver.table.pairs import TableCache

FIRSTS = 2  # first changes tried, best ranked first
SECONDS = 4  # second changes tried with each first


def cheapest_pairs(inst: Instance, findings: list, checker: Feasibility, keep: int = 3) -> list[dict]:
    """Up to ``keep`` pairs of changes that restore a plan together, cheapest first:
    [{"inputs": [a, b], "values": [x, y], "change": "a ≥ x and b ≥ y", "relative_change"}]. ``checker``: the
    diagnosis's re-solves of edited copies, whose budget the pairs' searches spend."""
    firsts = [f for f in sorted(findings, key=lambda f: f.rank) if f.rank[0] < 0 and f.direct][:FIRSTS]
    out = []
    for first in firsts:
        loosest = first.cand.far
        inst_a = edited(inst, edit_of(inst, first.cand, loosest))
        seconds = _ranked_findings(inst_a, checker.cache, exclude=first.input, keep=SECONDS)
        for candidate in seconds:
            if checker.spent():
                return _best(out, keep)
            second = _child(checker, inst_a, lambda c, f=candidate: settle(c, f))
            if second.value is None:
                continue
            inst_b = edited(inst, edit_of(inst, second.cand, second.value))
            again = _ranked_findings(inst_b, checker.cache, only=first.input)
            tightened = _child(checker, inst_b, lambda c, f=again[0]: settle(c, f)) if again else None
            value = tightened.value if tightened is not None and tightened.value is not None else loosest
            ref = tightened if tightened is not None and tightened.value is not None else first
            out.append(
                {
                    "inputs": [first.input, second.input],
                    "values": [value, second.value],
                    "change": f"{_text(ref, value)} and {_text(second)}",
                    "relative_change": _finite(first.relative(value) + second.relative()),
                }
            )
    return _best(out, keep)


def _ranked_findings(
    inst: Instance, cache: TableCache, exclude: str | None = None, keep: int | None = None, only: str | None = None
) -> list:
    """The usable findings of ``inst`` best ranked first (their candidates computed only up to ``keep``);
    ``cache``: the diagnosis's, whose tables the edited copies share."""
    base = sc.screen(inst, cache)
    found = findings_of(inst, cache, base, base.cut_alone())
    ranked = sorted(
        (
            f
            for f in found
            if f.input != exclude and (only is None or f.input == only) and (f.rank[0] < 0 or only is not None)
        ),
        key=lambda f: f.rank,
    )
    out = []
    for f in ranked:
        if f.cand.values.size or f.cand.top is not None:
            out.append(f)
        if keep is not None and len(out) >= keep:
            break
    return out


def _child(checker: Feasibility, inst: Instance, run):
    """Run ``run`` over a checker of ``inst`` that spends the parent's remaining solves."""
    left = None if checker.max_solves is None else checker.max_solves - checker.solves
    child = Feasibility(inst, checker.cache, checker.clock, max_solves=left)
    try:
        return run(child)
    finally:
        checker.solves += child.solves


def _text(f, value: float | None = None) -> str:
    if (f.value if value is None else value) is None:
        return f"{f.input} lifted"
    return text(f, value)


def _finite(value: float) -> float | None:
    return value if value < float("inf") else None


def _best(found: list[dict], keep: int) -> list[dict]:
    """The ``keep`` cheapest pairs, one per set of two inputs (a lifted limit, of no finite cost, last)."""

    def cost(p: dict) -> float:
        return float("inf") if p["relative_change"] is None else p["relative_change"]

    unique = {frozenset(p["inputs"]): p for p in sorted(found, key=lambda p: -cost(p))}
    return sorted(unique.values(), key=cost)[:keep]
