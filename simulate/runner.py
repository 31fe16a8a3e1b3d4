"""Replications of one plan: the verified plan's setup, each replication with its own seed, in this
process, on local worker processes or on a Dask cluster; their figures beside the model's.

Replication ``r`` of seed ``S`` draws from ``numpy.random.default_rng([S, r])``: the same seed
gives the same figures wherever it runs, and replications differ from one another.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from trainground.models.instance import Instance
from trainground.models.load import InstanceError, Problem, field_path
from trainground.models.regime_rules import refuse_unplanned, refuse_unreplayed
from trainground.models.result import Metrics, Plan
from trainground.simulation.engine import Run, replicate
from trainground.simulation.processes import THREAD_VARS, one_line
from trainground.simulation.report import Report, combine, costed, makespan_parts, model_gap_histogram, predict
from trainground.simulation.setup import Setup, setup_of
from trainground.simulation.stages import stage_metrics
from trainground.simulation.summary import curve, summarize
from trainground.simulation.trace import write_trace
from trainground.solver.mip.metrics import plan_metrics
from trainground.solver.verify.metrics import metric_differences
from trainground.solver.verify.plan import verify_plan
from trainground.solver.verify.stages import verify_staged


class SchedulerUnavailable(Exception):
    """The Dask scheduler given with ``--scheduler`` could not be reached."""


@dataclass(frozen=True)
class TraceSpec:
    folder: Path
    format: str = "csv"


def read_result(path: str | Path) -> dict:
    """The JSON object of a ``solve --json`` result file that holds a plan; InstanceError (file, rule) if it
    cannot be read or holds none."""
    file = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InstanceError(file, [Problem("", f"cannot read plan file: {exc.strerror or exc}")]) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InstanceError(file, [Problem("", f"not a JSON result of `solve --json`: {exc}")]) from None
    if not isinstance(data, dict) or data.get("plan") is None:
        raise InstanceError(file, [Problem("plan", "no plan: give the JSON of a `solve --json` run that found one")])
    return data


def plan_of(file: str, data: dict) -> Plan:
    """The plan of a result read by :func:`read_result`; InstanceError naming each broken field."""
    try:
        return Plan.model_validate(data["plan"])
    except ValidationError as exc:
        problems = [Problem(field_path(("plan",) + tuple(err["loc"])), err["msg"]) for err in exc.errors()[:5]]
        raise InstanceError(file, problems) from None


def read_plan(path: str | Path) -> Plan:
    """The plan of a ``solve --json`` result file; InstanceError (file, field, rule) if it holds none."""
    return plan_of(str(path), read_result(path))


def basis_of(file: str, data: dict) -> tuple[str, float]:
    """(basis, allowance) a result read by :func:`read_result` names (MODEL §11): a result without ``basis``
    predates the hold basis and was sized on steady_state; the allowance is ``hold.allowance_s`` (0 without a
    hold object). InstanceError for a malformed one."""
    basis = data.get("basis") or "steady_state"
    if basis not in ("hold", "steady_state"):
        raise InstanceError(file, [Problem("basis", f"must be hold or steady_state, got {basis!r}")])
    hold = data.get("hold")
    if hold is None:
        return basis, 0.0
    allowance = hold.get("allowance_s") if isinstance(hold, dict) else None
    if isinstance(allowance, bool) or not isinstance(allowance, (int, float)) or not allowance >= 0:
        raise InstanceError(file, [Problem("hold.allowance_s", f"must be a number >= 0, got {allowance!r}")])
    return basis, float(allowance)


def checked_metrics(inst: Instance, plan: Plan, label: str, allowance: float = 0.0) -> Metrics:
    """The model's metrics of ``plan`` on ``inst`` (with MODEL §11's allowance in the deadline row), checked
    by the verifier (a staged plan's by the staged verifier: the metrics of the stage ``run_metrics`` marks);
    InstanceError naming each broken rule if it does not fit, or the regime (MODEL §14) if the planner does not
    plan it."""
    refuse_unplanned(inst)
    if inst.stages is not None:
        staged = verify_staged(inst, plan, allowance)
        if staged.ok and staged.metrics is not None:
            return staged.metrics
        problems = [Problem("plan", f"does not fit {inst.name or 'the instance'}: {v}") for v in staged.violations]
        raise InstanceError(label, problems or [Problem("plan", "does not fit the instance")])
    check = verify_plan(inst, plan, allowance)
    if check.ok and check.metrics is not None:
        metrics = plan_metrics(inst, plan, allowance)
        check.violations += metric_differences(check.metrics, metrics)
        if check.ok:
            return metrics
    problems = [Problem("plan", f"does not fit {inst.name or 'the instance'}: {v}") for v in check.violations]
    raise InstanceError(label, problems or [Problem("plan", "does not fit the instance")])


def seed_for(seed: int, replication: int) -> list[int]:
    return [seed, replication]


def simulate_plan(
    inst: Instance,
    plan: Plan,
    *,
    metrics: Metrics | None = None,
    replications: int = 1,
    seed: int = 0,
    iterations: int | None = None,
    launch: str = "even",
    workers: int | None = None,
    scheduler: str | None = None,
    trace: TraceSpec | None = None,
    capacity: dict[str, float] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    setups: list[Setup] | None = None,
) -> Report:
    """Replay ``plan`` ``replications`` times and set each figure beside the model's prediction.

    ``iterations`` shortens (or lengthens) the run; the deadline is then pro rata,
    ``extra_time + (deadline - extra_time)·N/n``. Replication 0 runs here (it writes the
    trace); the others run on ``workers`` local processes or on the Dask cluster at ``scheduler``.``setups``: replication r replays ``setups[r]`` instead (a scenario each, :mod:`simulate.scenarios`);
    the predicted figures stay the nominal plan's.
    """
    refuse_unreplayed(inst)  # a batch or admission run is replayed by its own module; a capped drop run not yet
    metrics = metrics or checked_metrics(inst, plan, inst.name or "plan")
    setup = setup_of(inst, plan, metrics, launch=launch, capacity=capacity, iterations=iterations)
    progress = _Progress(on_progress, replications * setup.iterations)
    pooled = range(1 if trace is not None else 0, replications)
    each = setups or [setup] * replications
    if scheduler:
        results = _on_dask(scheduler, each, seed, pooled, progress, trace)
    elif len(pooled) > 1 and (workers or 1) > 1:
        results = _on_processes(workers, each, seed, pooled, progress, trace)
    else:
        results = _here(each, seed, range(replications), progress, trace)
    if 0 not in results:
        results[0] = _first_with_trace(each[0], seed, trace, progress)
    runs = [costed(results[r][0], plan) for r in range(replications)]
    series = results[0][1]
    simulated, spread = combine(runs, setup.deadline)
    stages = stage_metrics(inst, plan) if inst.stages is not None else None
    predicted = predict(setup, plan, metrics, inst.counts_startup, stages, holds=inst.holds)
    paced = plan.cadence_s / (predicted.get("training_goodput") or 1.0)  # MODEL §13: L/γ per batch
    parts = makespan_parts(simulated, predicted, paced, setup.iterations, inst.counts_startup)
    top = max(
        [int(k) for k in simulated.get("version_gap_histogram", {})] + [(plan.age_limit or plan.versions_kept) + 1]
    )
    series["model_gap_histogram"] = model_gap_histogram(setup, plan.cadence_s, top, plan)
    return Report(
        instance=inst.name or "",
        plan=plan.model_dump(mode="json"),
        seed=seed,
        replications=replications,
        iterations=setup.iterations,
        deadline_s=setup.deadline,
        count_startup=inst.counts_startup,
        launch=launch,
        simulated=simulated,
        predicted=predicted,
        spread=spread,
        runs=runs,
        series=series,
        parts=parts,
        sandbox_wait=inst.planning.sandbox_wait if inst.holds else None,
    )


class _Progress:
    """Iterations done over all replications, told to ``hook`` (if any)."""

    def __init__(self, hook, total: int):
        self.hook, self.total, self.done = hook, total, 0

    def run_hook(self):
        if self.hook is None:
            return None
        base = self.done

        def tell(done: int, _n: int) -> None:
            self.hook(base + done, self.total)

        return tell

    def finished(self, iterations: int) -> None:
        self.done += iterations
        if self.hook is not None:
            self.hook(self.done, self.total)


def _first_with_trace(setup: Setup, seed: int, trace: TraceSpec, progress: _Progress):
    """Replication 0 in this process, which writes its trace (the per-attempt arrays never travel)."""
    run = replicate(setup, seed_for(seed, 0), progress.run_hook())
    progress.finished(setup.iterations)
    write_trace(setup, run, trace.folder, trace.format)
    return summarize(setup, run), _series(setup, run)


def _series(setup: Setup, run: Run) -> dict:
    """What the plots of replication 0 need: in-flight over time, iteration durations, capacities."""
    return {
        "inflight": curve(setup, run),
        "iterations_s": np.diff(run.boundaries).tolist(),
        "startup_s": float(run.boundaries[0]) if run.boundaries.size else None,
        "local": dict(zip(setup.backends, setup.local)),
        "capacity": dict(zip(setup.backends, setup.capacity)),
        "shares": dict(zip(setup.backends, setup.shares)),
    }


def _one(setup: Setup, seed: int, replication: int, hook=None) -> tuple[dict, dict | None]:
    """One replication's figures, and replication 0's plot series: small dicts, never the arrays."""
    run = replicate(setup, seed_for(seed, replication), hook)
    return summarize(setup, run), _series(setup, run) if replication == 0 else None


def _here(setups: list[Setup], seed: int, replications, progress: _Progress, trace: TraceSpec | None) -> dict:
    out = {}
    for r in replications:
        if r == 0 and trace is not None:
            continue
        out[r] = _one(setups[r], seed, r, progress.run_hook())
        progress.finished(setups[r].iterations)
    return out


def _worker_init() -> None:
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")


def _on_processes(
    workers: int, setups: list[Setup], seed: int, replications, progress: _Progress, trace: TraceSpec | None
) -> dict:
    """Replications on ``workers`` spawned processes; replication 0's trace, if asked, is written here meanwhile."""
    context = multiprocessing.get_context("spawn")
    out: dict[int, tuple] = {}
    with ProcessPoolExecutor(min(workers, len(replications)), mp_context=context, initializer=_worker_init) as pool:
        futures = {pool.submit(_one, setups[r], seed, r): r for r in replications}
        if trace is not None:
            out[0] = _first_with_trace(setups[0], seed, trace, progress)
        for future in as_completed(futures):
            out[futures[future]] = future.result()
            progress.finished(setups[futures[future]].iterations)
    return out


def _on_dask(
    address: str, setups: list[Setup], seed: int, replications, progress: _Progress, trace: TraceSpec | None
) -> dict:
    """Replications on the Dask cluster at ``address`` (workers import trainground, as for ``batch``)."""
    from distributed import Client
    from distributed import as_completed as dask_completed

    try:
        client = Client(address)
    except (OSError, TimeoutError) as exc:
        raise SchedulerUnavailable(f"cannot reach the Dask scheduler at {address}: {one_line(exc)}") from None
    try:
        chosen = list(replications)
        futures = client.map(_one, [setups[r] for r in chosen], [seed] * len(chosen), chosen, pure=False)
        index = {f.key: r for f, r in zip(futures, chosen)}
        out: dict[int, tuple] = {}
        if trace is not None:
            out[0] = _first_with_trace(setups[0], seed, trace, progress)
        for future in dask_completed(futures):
            out[index[future.key]] = future.result()
            progress.finished(setups[index[future.key]].iterations)
        return out
    finally:
        client.close()
