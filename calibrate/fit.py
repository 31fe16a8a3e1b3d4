"""One calibration: every figure the logs hold, with its interval, and what the measured run was bound by."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from trainground.calibrate import lifetimes as lt
from trainground.calibrate.figures import Figure, LoggedRun, percentile_interval
from trainground.calibrate.frameworks import AGENT_LOOP
from trainground.calibrate.holdout import overlaps
from trainground.calibrate.logs import Steps, Trajectories
from trainground.calibrate.phases import Split, split
from trainground.calibrate.regime import Finding, cpu_note, detect, generating_gpus, switch_time
from trainground.calibrate.stages import StageProposal, propose
from trainground.calibrate.stepfigures import step_figures
from trainground.calibrate.stepreader import FrameworkSteps
from trainground.calibrate.throughput import group_correlation, intake, tokens_per_attempt, tokens_per_gpu_s
from trainground.calibrate.updates import Cadence, UpdateFit, cadence, fit_update_law, version_gaps
from trainground.models.instance import Instance
from trainground.models.load import InstanceError, Problem
from trainground.models.regime import Regime

if TYPE_CHECKING:
    from trainground.models.result import Plan

REPLICATES = 200  # bootstrap replicates behind every interval
SEED = 0  # bootstrap seed: the same logs give the same intervals
SAMPLES = 500  # quantiles written for an empirical (Kaplan–Meier) law
MIN_ENDED = 10  # fewer ended attempts than this and no lifetime law is fitted


@dataclass
class OccupancyFit:
    law: str  # lognormal | empirical
    figures: dict[str, Figure]  # median, p99, mean, sigma
    mu: float
    sigma: float
    distance: float  # largest gap between Kaplan–Meier and the fitted lognormal survival
    threshold: float
    censored: int
    km: lt.KaplanMeier
    dropped: dict[str, float]  # median and p99 of the lognormal fitted to the ended attempts alone
    data: lt.Lifetimes
    samples: np.ndarray | None = None
    naive: dict[str, float] | None = None  # median and p99 when attempts a timeout cut are read as ended there
    cut: int = 0  # attempts a timeout cut

    def to_json(self) -> dict:
        return {
            "law": self.law,
            "from": "trajectories",
            **{k: f.to_json() for k, f in self.figures.items()},
            "ks_distance": self.distance,
            "ks_threshold": self.threshold,
            "censored_rows": self.censored,
            "lognormal_rejected": self.law == "empirical",
            "if_running_dropped": self.dropped,
            "timeout_cut_rows": self.cut,
            "if_timeout_ignored": self.naive,
        }


@dataclass
class Calibration:
    trajectories: str | None  # None: calibrated from a step log alone (a framework's, or trainground's own)
    steps: str | None
    occupancy: OccupancyFit | None  # None: the lifetimes are the agent loop's (step_figures), if any
    per_backend: dict[str, OccupancyFit]
    shares: dict[str, float]
    tokens_per_gpu_s: Figure | None
    window: dict
    tokens_per_attempt: Figure | None
    intake: Figure | None
    correlation: Figure | None
    update: UpdateFit | None
    cadence: Cadence | None
    gaps: dict | None
    bottleneck: str | None
    notes: list[str] = field(default_factory=list)
    pool_throughput: dict[str, Figure] = field(default_factory=dict)  # tokens/s per GPU of each logged pool
    step_figures: dict[str, Figure] = field(default_factory=dict)  # a framework step log's other figures
    stages: StageProposal | None = None  # MODEL §12: the trend of tokens per attempt, and stages when it is large
    split: Split | None = None  # a framework step log: where a step's wall time went
    holdout: dict | None = None  # --holdout: the first half's figures against the second half's step time
    regime: Finding | None = None  # MODEL §14: the regime written, said with --regime or read from the step log
    logged_run: LoggedRun | None = None  # --plan of a batch run from a step log: the logged run's own figures
    plan: Plan | None = None  # --plan: the logged configuration as a plan of the written instance
    unwritten: list[str] = field(default_factory=list)  # instance fields left as --into has them: too few rows

    def to_json(self) -> dict:
        def fig(f):
            return f.to_json() if f is not None else None

        return {
            "trajectories": self.trajectories,
            "steps": self.steps,
            "occupancy": self.occupancy.to_json() if self.occupancy else self._loop_occupancy(),
            "per_backend": {k: v.to_json() for k, v in self.per_backend.items()},
            "backend_shares": self.shares,
            "tokens_per_gpu_s": fig(self.tokens_per_gpu_s),
            "window": self.window,
            "tokens_per_attempt": fig(self.tokens_per_attempt),
            "intake_rate": fig(self.intake),
            "group_correlation": fig(self.correlation),
            "update_time": self.update.to_json() if self.update else None,
            "cadence": self.cadence.to_json() if self.cadence else None,
            "version_gaps": self.gaps,
            "bottleneck": self.bottleneck,
            "notes": self.notes,
            "tokens_per_gpu_s_per_pool": {k: v.to_json() for k, v in self.pool_throughput.items()},
            "step_log": {k: v.to_json() for k, v in self.step_figures.items()},
            "stages": self.stages.to_json() if self.stages is not None else None,
            "step_split": self.split.to_json() if self.split is not None else None,
            "holdout": self.holdout,
            "regime": self.regime.to_json() if self.regime is not None else None,
        }

    def _loop_occupancy(self) -> dict | None:
        """The lognormal law from the agent loop's min/mean/max, in the shape of OccupancyFit's."""
        if "agent_loop_median_s" not in self.step_figures:
            return None
        return {
            "law": "lognormal",
            "from": "agent_loop",
            "median": self.step_figures["agent_loop_median_s"].to_json(),
            "p99": self.step_figures["agent_loop_p99_s"].to_json(),
        }


def fit_occupancy(
    data: lt.Lifetimes, source: str, rng: np.random.Generator, replicates: int, cut: int = 0
) -> OccupancyFit:
    mu, sigma = lt.fit_lognormal(data)
    km = lt.kaplan_meier(data)
    distance = lt.ks_distance(km, mu, sigma)
    threshold = max(lt.LILLIEFORS_5 / np.sqrt(max(km.events, 1)), lt.REJECT_FLOOR)
    dropped = lt.figures_of(*lt.fit_lognormal(lt.Lifetimes(data.x, data.c[:0])))
    what = f"{data.c.size - cut:,} running attempts" + (f" and {cut:,} cut by the timeout" if cut else "")
    rows, note = data.rows, f"{what} right-censored"
    if not lt.lognormal_rejected(distance, km.events):
        point = lt.figures_of(mu, sigma)
        draws = lt.figures_of(*lt.bootstrap_lognormal(data, replicates, rng, (mu, sigma)))
        figures = {
            k: Figure(
                k,
                float(point[k]),
                *percentile_interval(draws[k]),
                rows,
                "s" if k != "sigma" else "ln s",
                source,
                f"lognormal MLE; {note}",
            )
            for k in point
        }
        return OccupancyFit(
            "lognormal",
            figures,
            mu,
            sigma,
            distance,
            threshold,
            data.c.size,
            km,
            {k: float(dropped[k]) for k in ("median", "p99")},
            data,
        )
    quantiles = km.quantile(np.array([0.5, 0.99]))
    draws = lt.bootstrap_km(data, replicates, rng, (0.5, 0.99))
    why = f"Kaplan–Meier (lognormal rejected: distance {distance:.3f} > {threshold:.3f}); {note}"
    figures = {
        "median": Figure("median", float(quantiles[0]), *percentile_interval(draws[:, 0]), rows, "s", source, why),
        "p99": Figure("p99", float(quantiles[1]), *percentile_interval(draws[:, 1]), rows, "s", source, why),
        "mean": Figure("mean", km.mean, None, None, rows, "s", source, "area under Kaplan–Meier"),
    }
    return OccupancyFit(
        "empirical",
        figures,
        mu,
        sigma,
        distance,
        threshold,
        data.c.size,
        km,
        {k: float(dropped[k]) for k in ("median", "p99")},
        data,
        lt.empirical_samples(km, SAMPLES),
    )


def timeout_ignored(log: Trajectories) -> dict[str, float]:
    """What a fit that reads the attempts a timeout cut as ended there gives: the lognormal MLE's median and
    p99, and the Kaplan–Meier p99 (which stops at the timeout)."""
    naive = lt.lifetimes_of(log.start, log.end, log.log_end)
    figures = lt.figures_of(*lt.fit_lognormal(naive))
    return {
        "median": float(figures["median"]),
        "p99": float(figures["p99"]),
        "kaplan_meier_p99": float(lt.kaplan_meier(naive).quantile(0.99)),
    }


def calibrate(
    log: Trajectories,
    steps: Steps | None = None,
    into: Instance | None = None,
    inference_gpus: float | dict[str, float] | None = None,
    replicates: int = REPLICATES,
    seed: int = SEED,
    framework: FrameworkSteps | None = None,
    regime: Regime | None = None,
) -> Calibration:
    """Every figure the logs hold; ``regime``: the run's regime as --regime says it (else read from the step log)."""
    rng = np.random.default_rng(seed)
    source = f"{log.file}: start, end"
    data = lt.lifetimes_of(log.start, log.end, log.log_end, group=log.group, cut=log.cut)
    if data.x.size < MIN_ENDED:
        raise InstanceError(
            log.file, [Problem("column 'end'", f"{data.x.size} attempt(s) ended: lifetimes need at least {MIN_ENDED}")]
        )
    cut = 0 if log.cut is None else int((~np.isnan(log.cut) & ~np.isnan(log.start)).sum())
    occupancy = fit_occupancy(data, source, rng, replicates, cut)
    if cut:
        occupancy.cut = cut
        occupancy.naive = timeout_ignored(log)
    per_backend, shares = {}, {}
    if log.backends is not None:
        started = ~np.isnan(log.start)
        for i, name in enumerate(log.backends):
            mine = log.backend == i
            shares[name] = float(mine.sum() / log.rows)
            data = lt.lifetimes_of(log.start, log.end, log.log_end, mine, log.group, log.cut)
            if len(log.backends) > 1 and (mine & started).sum() >= 10 and data.x.size >= 2:
                per_backend[name] = fit_occupancy(data, f"{source} (backend {name})", rng, replicates)
    throughput, window, pools = tokens_per_gpu_s(log, steps, inference_gpus)
    update = fit_update_law(steps, rng, replicates) if steps is not None else None
    pace = cadence(steps, rng, replicates) if steps is not None else None
    gaps = None
    if log.version_start is not None and log.version_consumed is not None:
        post = into is not None and into.freshness.gap_convention == "post_publish"
        gaps = version_gaps(log.version_start, log.version_consumed, post)
        if gaps and pace and pace.achieved:
            gaps["model_mean"] = occupancy.figures["mean"].value / pace.achieved.value + (1 if post else 0)
            gaps["model_p99"] = occupancy.figures["p99"].value / pace.achieved.value + (1 if post else 0)
    result = Calibration(
        log.file,
        steps.file if steps else None,
        occupancy,
        per_backend,
        shares,
        throughput,
        window,
        tokens_per_attempt(log),
        intake(log, rng, replicates),
        group_correlation(log, rng, replicates),
        update,
        pace,
        gaps,
        None,
        list(log.notes) + (list(steps.notes) if steps is not None else []),
        pools,
    )
    finding = detect(steps, framework, regime)
    if framework is not None:
        total = sum(inference_gpus.values()) if isinstance(inference_gpus, dict) else inference_gpus
        gpus, how = generating_gpus(finding, steps, total)
        result.step_figures, more = step_figures(steps, framework, gpus, rng, replicates, True, how)
        result.notes += more
        result.split = step_split(steps, framework, finding.regime)
    _regime(result, finding, steps, framework, rng, replicates)
    result.stages = propose(log, steps, into.workload.iterations if into is not None else None)
    if result.stages is not None:
        result.notes.append(result.stages.sentence())
    result.bottleneck = bottleneck(result, into)
    return result


def calibrate_steps(
    steps: Steps,
    framework: FrameworkSteps,
    into: Instance | None = None,
    inference_gpus: float | dict[str, float] | None = None,
    replicates: int = REPLICATES,
    seed: int = SEED,
    regime: Regime | None = None,
) -> Calibration:
    """What a framework's step log holds without a trajectory log: the update law (the trainer's busy time), the
    cadence, the split of a step, the step figures, the regime (or ``regime``, --regime), and the lifetime law
    from the agent loop's per-step min/mean/max when the log has them; without them the lifetimes are not in
    the log, which a note says."""
    rng = np.random.default_rng(seed)
    total = sum(inference_gpus.values()) if isinstance(inference_gpus, dict) else inference_gpus
    finding = detect(steps, framework, regime)
    gpus, how = generating_gpus(finding, steps, total)
    figures, more = step_figures(steps, framework, gpus, rng, replicates, False, how)
    if "agent_loop_median_s" not in figures:
        keys = f"{AGENT_LOOP}{{min,mean,max}}"
        why = (
            f"{keys} in fewer than 5 usable steps"
            if framework.loop is not None
            else f"no per-trajectory times, no {keys}"
        )
        more.append(
            f"lifetimes: not in this log ({why}): the lifetime law is not fitted (with --into it is kept as the "
            "instance has it); give --trajectories for one"
        )
    update = fit_update_law(steps, rng, replicates)
    result = Calibration(
        None,
        steps.file,
        None,
        {},
        {},
        None,
        {},
        None,
        None,
        None,
        update,
        cadence(steps, rng, replicates),
        None,
        None,
        list(steps.notes) + more,
        step_figures=figures,
    )
    result.split = step_split(steps, framework, finding.regime)
    _regime(result, finding, steps, framework, rng, replicates)
    result.bottleneck = bottleneck(result, into)
    return result


def _regime(cal: Calibration, finding: Finding, steps, framework, rng, replicates: int) -> None:
    """The regime finding, said in a note (with a framework step log or --regime), and the terms it gives a place:
    a colocated run's switch time per iteration (a step log whose generation is a phase of the step)."""
    cal.regime = finding
    if framework is None and finding.regime is None:
        return
    cal.notes.append(finding.sentence())
    if finding.regime is None or framework is None:
        return
    if finding.colocated and framework.terms.generation:
        figure = switch_time(steps, framework, rng, replicates)
        if figure is not None:
            cal.step_figures["switch_time_s"] = figure
    note = cpu_note(steps, framework, finding.regime)
    if note is not None:
        cal.notes.append(note)


def step_split(steps: Steps, framework: FrameworkSteps, regime: Regime | None) -> Split | None:
    """The split of a step, its generation and trainer taken as overlapping when ``regime`` overlaps them."""
    if framework.wall_s is None or framework.scheme is None:
        return None
    return split(framework.values, framework.terms, framework.wall_s, steps.update_s, overlaps(regime))


def bottleneck(cal: Calibration, into: Instance | None) -> str | None:
    """One sentence on what bound the measured run, from the logs alone: which side the iterations waited
    for. The comparison of the measured tokens/s with ``into``'s own figure is a note: that figure is the
    instance's claim, not something the logs measured."""
    r, pace = cal.tokens_per_gpu_s, cal.cadence
    if r is not None and into is not None and "gpus" in cal.window and not cal.pool_throughput:
        capacity = into.inference.availability * into.inference.shapes[0].tokens_per_gpu_s
        excess = capacity / r.value - 1
        if abs(excess) > 0.01:
            cal.notes.append(
                f"against --into's figure (not measured): the run achieved {r.value:.4g} tok/s/GPU where the instance "
                f"claims {capacity:.4g}; "
                + (
                    f"if the claim holds, ~{cal.window['gpus'] * (1 - r.value / capacity):,.0f} inference GPUs idled"
                    if excess > 0
                    else "the claim is below what the run achieved"
                )
            )
    if pace is not None and pace.achieved is not None and pace.update_bound + pace.generation_bound:
        total = pace.update_bound + pace.generation_bound
        if pace.time_split is not None:  # the larger phase of each step
            side = "generation" if pace.generation_bound >= pace.update_bound else "update"
            share = max(pace.generation_bound, pace.update_bound) / total
            trainer = "the trainer's passes" if cal.split is not None else "the update"
            beside = cal.regime is not None and cal.regime.overlapped  # one step off: the longer sets the step
            return (
                f"{side}-bound: generation took {pace.time_split['generation']:.0%} of the step time"
                + (" (beside the step, the next batch's)" if beside else "")
                + f", {trainer} {pace.time_split['update']:.0%}; {side} was the longer phase in {share:.0%} of steps"
            )
        if pace.update_bound > pace.generation_bound:
            return (
                f"update-bound: {pace.update_bound / total:.0%} of iterations waited for the update; "
                "the inference side had slack"
            )
        return (
            f"generation-bound: {pace.generation_bound / total:.0%} of iterations waited for trajectories; "
            "the update finished early"
        )
    return None
