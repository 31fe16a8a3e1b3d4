"""The floors of the replan searches (:mod:`solver.stages.replan_search`): per stage pair, a valid lower bound on the
total cost of any plan of the replan model (:mod:`solver.stages.replan`) that selects it.

A plan selects one pair per stage, all of one K. Stage p is billed its part times its hourly cost, at least the
pair's cost bound lo; the extra time and the final update (at least the shortest) are billed at the last stage's
rate; and between consecutive stages either the counts change (a switch: switch_time added to T and billed at the
rate of the stage after) or they do not (no switch: the two stages have the same counts, so the same hourly cost).
So every plan has a switch pattern, and under a pattern the stages form blocks of consecutive stages without a
switch between them, each block at one rate. The bound lo is a sum of terms, each a valid bound on what the counts
it reads cost (:func:`solver.table.bounds.hourly_bound_terms`: training groups, inference replicas, hosts), and a
block's stages share those counts, so a block's rate is at least the fixed term plus each term's largest over its
pairs (and at least each pair's lo):

    total >= Σ_blocks (Σ_{p in block} part_p + x_block)·rate_block / 3600,
    T >= Σ_p part_p + switch_time·(switches) + extra_time + the shortest final update,

with ``x_block`` the seconds a block pays timess its parts (switch_time when a switch starts it, the extra time and
the shortest final update when it ends the run). A pair's floor under a pattern is the least of that bound over the
plans of its K that select it and fit in the room; its floor is the least over the patterns (at most
PATTERN_STAGES stages: 2^(P-1) patterns).

A block's choices are listed while they are at most COMBINATIONS; past that, the choices of all but its last stage
are cut to their (part, rate) Pareto front and their terms forgotten (the rate kept as a floor on the block's): a
valid bound, only looser. An instance with more stages than PATTERN_STAGES is bounded as one pattern without switches
and every stage on its own rate, also valid and looser.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

PATTERN_STAGES = 7  # stages up to which every switch pattern is bounded on its own (64 patterns)
COMBINATIONS = 1 << 20  # a block's choices listed with their terms, at most

Points = tuple[np.ndarray, np.ndarray]  # (parts, values) of a Pareto front, by part, values strictly falling


@dataclass(frozen=True)
class Choices:
    """Choices of one pair per stage of a set of stages: their parts summed (s), each term's largest (n, terms) and a
    floor on their rate (n,) ($/h); the rate is the larger of that floor and the fixed term plus the terms."""

    parts: np.ndarray
    terms: np.ndarray
    rate_floor: np.ndarray

    def rates(self, fixed: float) -> np.ndarray:
        return np.maximum(self.rate_floor, fixed + self.terms.sum(axis=1))

    def __len__(self) -> int:
        return int(self.parts.size)


def front(parts: np.ndarray, values: np.ndarray) -> Points:
    """The (part, value) points no other beats on both, by part: values strictly falling (of points of equal part, the
    last kept has the least value)."""
    order = np.argsort(parts)
    parts, values = parts[order], values[order]
    best = np.minimum.accumulate(values)
    keep = np.concatenate(([True], best[1:] < best[:-1])) if values.size else np.zeros(0, dtype=bool)
    return parts[keep], best[keep]


def convolve(a: Points, b: Points) -> Points:
    """The front of every sum of a point of ``a`` and a point of ``b``."""
    return front((a[0][:, None] + b[0][None, :]).ravel(), (a[1][:, None] + b[1][None, :]).ravel())


def least_within(points: Points, room: np.ndarray) -> np.ndarray:
    """Per room, the least value of a front point whose part fits in it (inf: none)."""
    parts, values = points
    at = np.searchsorted(parts, room, side="right") - 1
    return np.where(at >= 0, values[np.maximum(at, 0)] if values.size else np.inf, np.inf)


def pair_floors(members: list[Choices], fixed: float, room: float, switch: float, tail: float) -> list[np.ndarray]:
    """Per stage, the floor ($) of each of its pairs of one K (:class:`PairFloors`) in ``room`` (the most T may be,
    s)."""
    return PairFloors(members, fixed, switch, tail).at(room)


class PairFloors:
    """The floors of the pairs of one K in any room: ``members[p]``, stage p's pairs of that K (each its part, its
    bound's terms and its bound lo as the floor of its rate); ``fixed``: the bound's fixed term, $/h; ``switch``:
    switch_time, s; ``tail``: the extra time and the shortest final update, s, billed at the last stage's rate. What
    does not depend on the room (the choices listed, each block's front and the fronts times it) is found once."""

    def __init__(self, members: list[Choices], fixed: float, switch: float, tail: float):
        self.members, self.fixed = members, fixed
        self.patterns: list[tuple[float, list[tuple[int, float, Choices, Points]]]] = []
        stages = len(members)
        if any(len(m) == 0 for m in members):
            return
        if stages > PATTERN_STAGES:
            patterns: list[tuple[bool, ...]] = [(False,) * (stages - 1)]
            blocks_of = lambda _: [[p] for p in range(stages)]  # noqa: E731  every stage its own rate, no switch
        else:
            patterns = list(itertools.product((False, True), repeat=stages - 1))
            blocks_of = _blocks
        listed = _Listed([undominated_choices(m) for m in members], fixed)
        for pattern in patterns:
            blocks = blocks_of(pattern)
            extra = [
                (switch if b[0] > 0 and pattern[b[0] - 1] else 0.0) + (tail if b[-1] == stages - 1 else 0.0)
                for b in blocks
            ]
            whole = [_bills(listed(block), fixed, x) for block, x in zip(blocks, extra)]
            each = []
            for b, (block, x) in enumerate(zip(blocks, extra)):
                others: Points = (np.zeros(1), np.zeros(1))
                for c, points in enumerate(whole):
                    if c != b:
                        others = convolve(others, points)
                each += [(p, x, listed([q for q in block if q != p], len(members[p])), others) for p in block]
            self.patterns.append((switch * sum(pattern), each))

    def at(self, room: float) -> list[np.ndarray]:
        """Per stage, each pair's floor ($) when T may be at most ``room`` (s)."""
        out = [np.full(len(m), np.inf) for m in self.members]
        for switches, each in self.patterns:
            for p, extra, mates, others in each:
                floors = _member_floors(self.members[p], mates, self.fixed, extra, others, room - switches)
                out[p] = np.minimum(out[p], floors)
        return out


def undominated_choices(choices: Choices, chunk: int = 256) -> Choices:
    """``choices`` less those another beats or equals on every figure (part, each term, the rate's floor) and beats on
    one: a bound over combinations is never lower for them (it grows with each figure), and fewer choices keep more
    combinations listed with their terms."""
    figures = np.column_stack((choices.parts, choices.terms, choices.rate_floor))
    beaten = np.zeros(len(choices), dtype=bool)
    for start in range(0, len(choices), chunk):
        rows = figures[start : start + chunk, None, :]
        no_worse = np.all(figures[None, :, :] <= rows, axis=2) & np.any(figures[None, :, :] < rows, axis=2)
        beaten[start : start + chunk] = np.any(no_worse, axis=1)
    keep = ~beaten
    return Choices(choices.parts[keep], choices.terms[keep], choices.rate_floor[keep])


def _blocks(pattern: tuple[bool, ...]) -> list[list[int]]:
    """The stages in blocks: a switch after stage p (``pattern[p]``) starts a new block."""
    blocks = [[0]]
    for p, switched in enumerate(pattern):
        if switched:
            blocks.append([p + 1])
        else:
            blocks[-1].append(p + 1)
    return blocks


def _bills(choices: Choices, fixed: float, extra: float) -> Points:
    """The (part, bill $) front of a block's choices, each billed its parts and ``extra`` seconds at its rate."""
    return front(choices.parts, (choices.parts + extra) * choices.rates(fixed) / 3600.0)


def _member_floors(own: Choices, mates: Choices, fixed: float, extra: float, others: Points, room: float) -> np.ndarray:
    """The floors of one stage's pairs ``own`` under one pattern: each with every choice of its block's other stages
    ``mates``, at the block's rate, and the other blocks' front ``others`` in ``room``."""
    parts = np.add.outer(own.parts, mates.parts)
    rates = np.full(parts.shape, fixed)
    for k in range(own.terms.shape[1]):  # the fixed term plus each term's largest
        rates += np.maximum.outer(own.terms[:, k], mates.terms[:, k])
    np.maximum(rates, np.maximum.outer(own.rate_floor, mates.rate_floor), out=rates)
    bills = parts + extra
    bills *= rates
    bills /= 3600.0
    np.subtract(room, parts, out=parts)
    bills += least_within(others, parts)
    return bills.min(axis=1)


class _Listed:
    """The choices of a set of stages, each set's listed once. Every combination is listed while the set less its
    last stage's choices times the last stage's are at most COMBINATIONS, else the set less its last stage is first
    cut to its (part, rate) front, its terms forgotten; and the set's own choices are cut the same way when they,
    times ``times`` (the choices each will be paired with: a stage's pairs beside their block's other stages), are
    more than COMBINATIONS."""

    def __init__(self, members: list[Choices], fixed: float):
        self.members, self.fixed = members, fixed
        self.known: dict[tuple[tuple[int, ...], int], Choices] = {}

    def __call__(self, stages: list[int], times: int = 1) -> Choices:
        key = (tuple(stages), times)
        if key not in self.known:
            self.known[key] = self._listed(stages, times)
        return self.known[key]

    def _listed(self, stages: list[int], times: int) -> Choices:
        if not stages:
            return Choices(np.zeros(1), np.zeros((1, self.terms)), np.zeros(1))
        head, last = self(stages[:-1]), self.members[stages[-1]]
        if len(head) * len(last) > COMBINATIONS:
            head = self._cut(head)
        both = _product(head, last)
        return self._cut(both) if len(both) * times > COMBINATIONS else both

    @property
    def terms(self) -> int:
        return int(self.members[0].terms.shape[1])

    def _cut(self, choices: Choices) -> Choices:
        parts, rates = front(choices.parts, choices.rates(self.fixed))
        return Choices(parts, np.zeros((parts.size, self.terms)), rates)


def _product(a: Choices, b: Choices) -> Choices:
    """Every choice of ``a`` with every choice of ``b``."""
    parts = (a.parts[:, None] + b.parts[None, :]).ravel()
    terms = np.maximum(a.terms[:, None, :], b.terms[None, :, :]).reshape(-1, a.terms.shape[1])
    floor = np.maximum(a.rate_floor[:, None], b.rate_floor[None, :]).ravel()
    return Choices(parts, terms, floor)
