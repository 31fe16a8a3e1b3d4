"""The simulated on-time verdict of solved plans, for the commands that show plans (`solve`, `compare`,
`frontier` with ``--simulate R``): each plan replayed R times over the full run (MODEL.md §10).

A verdict is a small JSON-ready dict (:data:`VERDICT_KEYS` of the report's ``simulated`` figures, with
the replications and the deadline). Plans that appear more than once (the same plan in two columns or
on both frontiers) are replayed once; every plan is replayed with the same seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.simulation.report import Report
from trainground.simulation.runner import simulate_plan

VERDICT_KEYS = ("makespan_s", "startup_s", "iteration_mean_s", "on_time", "on_time_share", "lateness_s")
REPLICATION_WORKERS = 2  # local processes for a plan's replications when R > 1


def verdict_of(report: Report) -> dict:
    """The verdict of one simulation report."""
    out = {k: report.simulated.get(k) for k in VERDICT_KEYS}
    out["replications"] = report.replications
    out["deadline_s"] = report.deadline_s
    return out


def simulate_result(
    inst: Instance,
    result: Result,
    replications: int,
    seed: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Report | None:
    """Replay a solved plan ``replications`` times (the full run; base seed :func:`fresh_seed` unless given);
    None when the result has no plan."""
    if result.plan is None or result.metrics is None:
        return None
    seed = fresh_seed(inst) if seed is None else seed
    workers = min(replications, REPLICATION_WORKERS) if replications > 1 else None
    return simulate_plan(
        inst,
        result.plan,
        metrics=result.metrics,
        replications=replications,
        seed=seed,
        workers=workers,
        on_progress=on_progress,
    )


def fresh_seed(inst: Instance) -> int:
    """The base seed of replays that judge a plan: under hold, planning.seed + planning.replays, so that no
    replication ([seed, r]) is one of the replays that set the allowance ([planning.seed + i, 0]); else 0."""
    return inst.planning.seed + inst.planning.replays if inst.holds else 0


def verdicts(
    inst: Instance,
    results: Sequence[Result | None],
    replications: int,
    seed: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[dict | None]:
    """The verdict of each result's plan (None where there is no plan), identical plans replayed once.
    ``on_progress(done, total)`` counts distinct plans."""
    keys = [_key(r) for r in results]
    distinct = list(dict.fromkeys(k for k in keys if k is not None))
    done: dict[str, dict] = {}
    for result, key in zip(results, keys):
        if key is None or key in done:
            continue
        report = simulate_result(inst, result, replications, fresh_seed(inst) if seed is None else seed)
        done[key] = verdict_of(report)
        if on_progress is not None:
            on_progress(len(done), len(distinct))
    return [None if k is None else dict(done[k]) for k in keys]


def _key(result: Result | None) -> str | None:
    if result is None or result.plan is None or result.metrics is None:
        return None
    return result.plan.model_dump_json()
