"""The compact staged search's HiGHS runs (solver/stages/hull.py): an edge run cut off at its edge's value answers
as the same run without the cut-off; HiGHS restarts after the root exactly when the start-up is counted or the
stage rows pass RESTART_PAIRS; and where a cut-off run's "no plan" is not trusted (HiGHS before 1.16, issue
#3273), the search repeats the run without the cut-off and still finds the least product."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import yaml

from tests.test_stages_compact import ROOT
from trainground.models.load import validate
from trainground.solver.highs import NO_BOUND, RESTART_PAIRS, STAGED_OPTIONS
from trainground.solver.stages import hull as stage_hull
from trainground.solver.stages.hull import CompactSearch, Point, search_options
from trainground.solver.stages.solve import StagedPlanner
from trainground.solver.stopwatch import Stopwatch

REL = 1e-9


def _line(a: float, b: float, point: Point) -> float:
    return a * point.hourly + b * point.makespan


@pytest.mark.parametrize("count_startup", [False, True], ids=["steady", "startup"])
def test_a_cut_off_edge_run_answers_as_the_run_without_it(monkeypatch, count_startup):
    """Every edge run of a least-product search is run again without its cut-off, on the same rows. The edge's
    line is the least a·hourly + b·T of the plans found so far (its ends lie on it, the other vertices above),
    and the cut-off lies on it within the tie. Where the run without the cut-off finds a plan below the cut-off,
    the cut-off run finds the same point; where it does not (that plan is then on the edge), the cut-off run
    finds none below the cut-off either (None, or a point on or above it)."""
    data = yaml.safe_load((ROOT / "instances" / "seed-week-stages.yaml").read_text())
    data["schedule"].update(cadence={"min": "400s", "max": "900s", "step": "10s"}, count_startup=count_startup)
    planner = StagedPlanner(validate(data, "small.yaml"))  # 3 stages; with the start-up, a final update apart
    minimise = CompactSearch.minimise
    found: list[Point] = []
    seen = {"below": 0, "facet": 0}

    def both(self, a, b, below=NO_BOUND, start=None):
        cut = minimise(self, a, b, below, start)
        if below == NO_BOUND:
            found.extend([cut] if cut is not None else [])
            return cut
        edge = min(_line(a, b, p) for p in found)
        free = minimise(self, a, b)
        assert free is not None  # the edge's ends are plans of these rows
        if _line(a, b, free) < below:
            seen["below"] += 1
            assert cut is not None, (a, b, below, free)
            assert (cut.hourly, cut.makespan) == pytest.approx((free.hourly, free.makespan), rel=REL)
            found.append(cut)
        else:
            seen["facet"] += 1
            assert _line(a, b, free) >= edge * (1 - 1e-6), (a, b, edge, below, free)  # on the edge, within the tie
            assert cut is None or _line(a, b, cut) >= below, (a, b, below, cut)
        return cut

    monkeypatch.setattr(CompactSearch, "minimise", both)
    result = planner.solve("total_cost")
    assert result.status == "optimal"
    assert seen["below"] >= 1 and seen["facet"] >= 1, seen  # both answers of an edge run were compared


@pytest.mark.parametrize("pairs", [RESTART_PAIRS - 1, RESTART_PAIRS, RESTART_PAIRS + 1])
@pytest.mark.parametrize("counts_startup", [False, True])
def test_restart_is_switched_on_by_the_startup_or_many_pairs(counts_startup, pairs):
    options = search_options(counts_startup, pairs)
    assert options["mip_allow_restart"] is (counts_startup or pairs > RESTART_PAIRS)
    assert {k: v for k, v in options.items() if k != "mip_allow_restart"} == {
        k: v for k, v in STAGED_OPTIONS.items() if k != "mip_allow_restart"
    }


@pytest.mark.parametrize("counts_startup", [False, True])
def test_the_search_counts_the_pairs_of_every_stage(counts_startup):
    """A search reads the start-up from its instance and adds the stage rows of every stage: two stages of
    RESTART_PAIRS/2 + 1 rows pass RESTART_PAIRS, two of RESTART_PAIRS/2 do not."""
    for size, many in ((RESTART_PAIRS // 2 + 1, True), (RESTART_PAIRS // 2, False)):
        c = SimpleNamespace(
            inst=SimpleNamespace(counts_startup=counts_startup),
            found=SimpleNamespace(tables=[SimpleNamespace(size=size)] * 2),
        )
        search = CompactSearch(c, highs=None, clock=Stopwatch())  # type: ignore[arg-type]
        assert search.options["mip_allow_restart"] is (counts_startup or many)


class _PlanSet(CompactSearch):
    """A search over a fixed set of (hourly, T) plans whose cut-off runs always say "no plan" (the failure of
    HiGHS #3273 at its worst): a run without a cut-off answers the least a·hourly + b·T, ties by T."""

    def __init__(self, plans: list[tuple[float, float]]):
        self.plans = [Point(h, t, None) for h, t in plans]  # type: ignore[arg-type]
        self.uncut = 0

    def minimise(self, a, b, below=NO_BOUND, start=None):
        if below != NO_BOUND:
            return None
        self.uncut += 1
        return min(self.plans, key=lambda p: (_line(a, b, p), p.makespan))


PLANS = [(1.0, 10.0), (2.0, 4.0), (3.0, 3.5), (4.0, 3.0), (10.0, 1.0)]  # least product 8 at (2, 4)


def test_an_untrusted_cut_off_is_repeated_without_it(monkeypatch):
    least = min(h * t for h, t in PLANS)
    monkeypatch.setattr(stage_hull, "CUTOFF_TRUSTED", False)
    search = _PlanSet(PLANS)
    found = search.least_product()
    assert found is not None and math.isclose(found.hourly * found.makespan, least)
    assert search.uncut > 2  # the two ends, then the edge runs again without their cut-off
    monkeypatch.setattr(stage_hull, "CUTOFF_TRUSTED", True)
    trusting = _PlanSet(PLANS).least_product()
    assert trusting is not None and trusting.hourly * trusting.makespan > least  # what the repeat guards against
