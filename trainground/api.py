"""The Python API: the questions the commands answer, as functions that return objects.

Each function calls the driver its command calls (``solve`` -> :func:`drivers.answer.answer`, ``frontier`` ->
:func:`drivers.tradeoffs.frontier.frontiers`, ``sweep`` -> :func:`drivers.tradeoffs.sweep.solve_points`, ``risk`` ->
:func:`drivers.risk.assess`, ``simulate`` -> :func:`simulation.runner.simulate_plan`), so a notebook and the
command line cannot disagree: ``solve(...).to_dict()`` is `solve --json`'s document. Every plan returned has
passed the independent verifier (``solver/verify/plan.py``), and every result converts to a plain dict
(``to_dict()``) and to a list of flat dicts (``rows()``, one row per point, ready for ``pandas.DataFrame``).

Bad input raises :class:`InstanceError` (file, field path, rule), as the commands report it.
Imports are deferred into the functions: ``import trainground`` costs nothing until a question is asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from trainground.results import Frontier, RiskReport, Simulation, Solution, Sweep, plan_row

if TYPE_CHECKING:
    from trainground.drivers.tradeoffs.regimes import RegimeComparison
    from trainground.models.instance import Instance
    from trainground.models.result import Metrics, Plan, Result

__all__ = [
    "Frontier",
    "RiskReport",
    "Simulation",
    "Solution",
    "Sweep",
    "frontier",
    "load",
    "plan_row",
    "regimes",
    "report",
    "risk",
    "simulate",
    "solve",
    "sweep",
]

Source = Union[str, Path, Mapping[str, Any], "Instance"]
"""An instance: a file path (YAML, TOML or JSON), a document as a dict, or an :class:`Instance` already loaded."""

DICT_SOURCE = "<dict>"  # the file name errors about a document given as a dict carry


def load(source: Source, edits: Sequence[str] = (), *, basis: str | None = None) -> Instance:
    """The validated instance (MODEL.md §5, SI units) of a file, a dict or an :class:`Instance`.

    ``edits``: ``--set`` edits, ``"PATH=VALUE"`` (``"schedule.deadline=8d"``,
    ``"inference.shapes[*].tokens_per_gpu_s=70"``); ``basis``: ``planning.basis`` (``"hold"`` or
    ``"steady_state"``), as the commands' ``--basis``. Raises :class:`InstanceError` naming the file
    (``<dict>`` for a dict), the field path and the rule.
    """
    from trainground.models.edits import load_edited
    from trainground.models.instance import Instance

    edits = list(edits) + ([f"planning.basis={basis}"] if basis else [])
    if isinstance(source, Instance):
        return source if not edits else _from_document(_document_of(source), edits)
    if isinstance(source, Mapping):
        return _from_document(dict(source), edits)
    return load_edited(Path(source), edits)


def _document_of(inst: Instance) -> dict[str, Any]:
    """A loaded instance as a document again (an empirical occupancy keeps the samples it read)."""
    data = inst.model_dump(mode="python", exclude_none=False)
    occupancy = data["environment"]["occupancy"]
    if occupancy.get("distribution") == "empirical":
        occupancy.pop("csv", None)
    return data


def _from_document(data: dict[str, Any], edits: Sequence[str]) -> Instance:
    from trainground.models.edits import apply_edit, blamed_on_edits, parse_value, refuse_replaced, split_edit
    from trainground.models.load import InstanceError, Problem, validate

    own = data
    for edit in edits:
        try:
            path, text = split_edit(edit)
            data = apply_edit(data, path, parse_value(text))
        except ValueError as exc:
            raise InstanceError(DICT_SOURCE, [Problem("", str(exc), source=f"--set {edit}")]) from None
    try:
        inst = validate(data, DICT_SOURCE, Path.cwd())
    except InstanceError as exc:
        raise blamed_on_edits(exc, list(edits)) from None
    refuse_replaced(own, list(edits), DICT_SOURCE, Path.cwd())
    return inst


def solve(
    source: Source,
    objective: str | None = None,
    *,
    edits: Sequence[str] = (),
    basis: str | None = None,
    confidence: float | None = None,
    time_limit: float | None = None,
    simulate: int | None = None,
    levers: bool = True,
    levers_time: float = 10.0,
) -> Solution:
    """The cheapest (or fastest: ``objective="makespan"``) verified plan, as `solve` finds it.

    ``confidence``: plan to be on time in that share of the uncertainty section's scenarios (MODEL §9);
    ``time_limit``: seconds for the whole solve (the incumbent and its gap when it runs out);
    ``simulate``: replay the plan that many times (MODEL §10, the ``simulation`` key);
    ``levers``: re-solve with each limit relaxed one step, within ``levers_time`` seconds.
    """
    from trainground.drivers.answer import answer
    from trainground.models.load import InstanceError, Problem
    from trainground.solver.confidence.table import Unsupported
    from trainground.solver.stopwatch import Stopwatch

    clock = Stopwatch(time_limit)
    inst = load(source, edits, basis=basis)
    if confidence is not None:
        if inst.uncertainty is None:
            raise InstanceError(
                inst.name or DICT_SOURCE, [Problem("uncertainty", "confidence needs an uncertainty section")]
            )
        inst = inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": confidence})})
    try:
        found = answer(inst, objective, clock=clock, replications=simulate, with_levers=levers, levers_time=levers_time)
    except Unsupported as exc:
        raise InstanceError(inst.name or DICT_SOURCE, [Problem(exc.path, exc.rule)]) from None
    return Solution(found)


def frontier(source: Source, *, edits: Sequence[str] = (), basis: str | None = None) -> Frontier:
    """Makespan against total cost and against hourly cost: every plan no other beats on both."""
    from trainground.drivers.tradeoffs.frontier import frontiers

    return Frontier(frontiers(load(source, edits, basis=basis)))


def regimes(
    source: Source,
    specs: Sequence[str | Mapping[str, Any]] | None = None,
    *,
    edits: Sequence[str] = (),
    basis: str = "steady_state",
    objective: str | None = None,
) -> RegimeComparison:
    """The optimum of each regime (MODEL.md §14) side by side, as the ``regimes`` command prints it: ``specs``
    are the command's ``--regime`` texts or regime mappings (default §14's list); ``.rows`` each hold the regime,
    its label, its verified §6 result or why it has none; ``.best`` is the index of the best under the
    objective; ``.to_json()`` is the command's ``--json``."""
    from trainground.drivers.tradeoffs.regimes import compare_regimes, parse_regime

    parsed = None if specs is None else [parse_regime(s) if isinstance(s, str) else dict(s) for s in specs]
    return compare_regimes(load(source, edits, basis=basis), parsed, objective)


def _axis_texts(axes: Mapping[str, Sequence[Any]]) -> list[str]:
    import json

    return [
        f"{path}={','.join(v if isinstance(v, str) else json.dumps(v) for v in values)}"
        for path, values in axes.items()
    ]


def sweep(
    source: Source,
    axes: Mapping[str, Sequence[Any]],
    *,
    zipped: Mapping[str, Sequence[Any]] | None = None,
    objective: str | None = None,
    basis: str | None = None,
    workers: int = 1,
) -> Sweep:
    """Solve every point of the product of ``axes`` (``{"schedule.deadline": ["6d", "7d"]}``); the ``zipped``
    fields vary together, as one more axis (`sweep --set` and `--zip`)."""
    from trainground.drivers.tradeoffs import sweep as driver
    from trainground.drivers.tradeoffs.sweep_axes import grid_points

    parsed = driver.parse_axes(
        _axis_texts(axes) + ([f"planning.basis={basis}"] if basis else []), _axis_texts(zipped or {})
    )
    if isinstance(source, (str, Path)):
        return Sweep(driver.run_sweep(source, parsed, objective, workers=workers))
    document = _document_of(load(source))
    rows, builds = driver.solve_points(DICT_SOURCE, document, parsed, list(enumerate(grid_points(parsed))), objective)
    return Sweep(
        driver.SweepReport(
            instance=document.get("name") or "",
            file=DICT_SOURCE,
            objective=objective,
            axes=parsed,
            rows=rows,
            builds=builds,
            names=driver.item_names(document, [a.path for a in parsed]),
        )
    )


PlanSource = Union["Solution", "Result", str, Path, None]
"""A plan to replay or assess: a :class:`Solution` or a §6 result, a `solve --json` file, or None (solve first)."""


def _plan_for(inst: Instance, plan: PlanSource) -> tuple[Instance, Plan, Metrics, float]:
    """(instance on the plan's basis, plan, the verifier's metrics of the plan against ``inst``, its allowance Δ
    under hold, MODEL §11)."""
    from trainground.models.load import InstanceError, Problem
    from trainground.simulation.runner import basis_of, checked_metrics, plan_of, read_result

    if plan is None:
        plan = solve(inst, levers=False)
    if isinstance(plan, Solution):
        plan = plan.result
    if isinstance(plan, (str, Path)):
        data, label = read_result(plan), str(plan)
    else:
        data, label = plan.to_json(), plan.instance or "plan"
    if data.get("plan") is None or data.get("status") != "optimal":
        raise InstanceError(label, [Problem("status", f"{data.get('status')}: no optimal plan")])
    basis, allowance = basis_of(label, data)
    if basis != inst.planning.basis:
        inst = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": basis})})
    found = plan_of(label, data)
    return inst, found, checked_metrics(inst, found, label, allowance), allowance


def simulate(
    source: Source,
    plan: PlanSource = None,
    *,
    replications: int = 1,
    seed: int | None = None,
    iterations: int | None = None,
    launch: str = "even",
    edits: Sequence[str] = (),
    basis: str | None = None,
) -> Simulation:
    """Replay ``plan`` (default: the instance's optimal plan) trajectory by trajectory, as `simulate` does;
    ``seed`` defaults as there (under hold, past the replays that set the allowance)."""
    from trainground.simulation.runner import simulate_plan
    from trainground.simulation.verdicts import fresh_seed

    inst, found, metrics, _ = _plan_for(load(source, edits, basis=basis), plan)
    seed = fresh_seed(inst) if seed is None else seed
    return Simulation(
        simulate_plan(
            inst, found, metrics=metrics, replications=replications, seed=seed, iterations=iterations, launch=launch
        )
    )


def risk(
    source: Source,
    plan: PlanSource = None,
    *,
    samples: int = 10_000,
    seed: int | None = None,
    edits: Sequence[str] = (),
    basis: str | None = None,
) -> RiskReport:
    """How likely ``plan`` (default: the instance's optimal plan) is to finish on time over ``samples``
    scenarios of the instance's ``uncertainty`` section, as `risk` reports it."""
    from trainground.drivers.risk import assess
    from trainground.models.load import InstanceError, Problem

    inst = load(source, edits, basis=basis)
    if inst.uncertainty is None:
        raise InstanceError(inst.name or DICT_SOURCE, [Problem("uncertainty", "risk needs an uncertainty section")])
    inst, found, _, allowance = _plan_for(inst, plan)
    return RiskReport(assess(inst, found, samples, seed, allowance))


def report(
    source: Source,
    out: str | Path | None = None,
    objective: str | None = None,
    *,
    edits: Sequence[str] = (),
    basis: str | None = None,
    simulate: int | None = None,
    levers_time: float = 10.0,
    confidences: Sequence[float] = (0.5, 0.8, 0.9, 0.95),
    samples: int = 10_000,
    with_frontier: bool = True,
    frontier_basis: str | None = None,
) -> str:
    """`report`'s self-contained HTML page (written to ``out`` when given): the plan and why it holds, levers
    (their re-solves within ``levers_time`` seconds),
    risk and the price of certainty at ``confidences`` (with an uncertainty section), the frontier (walked on
    ``frontier_basis``; None: the plan's, as `report --frontier-basis`)."""
    from trainground.drivers.report import gather
    from trainground.render.report import report_html
    from trainground.simulation.output import write_atomic_bytes

    inst = load(source, edits, basis=basis)
    found = gather(
        inst,
        objective,
        replications=simulate,
        levers_time=levers_time,
        alphas=confidences,
        samples=samples,
        with_frontier=with_frontier,
        frontier_basis=frontier_basis,
    )
    text = report_html(found, str(source) if isinstance(source, (str, Path)) else inst.name or DICT_SOURCE)
    if out is not None:
        write_atomic_bytes(out, text.encode("utf-8"))
    return text
