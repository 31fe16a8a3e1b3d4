"""What a person reads after `simulate` (and under `solve --simulate`): each simulated figure beside the
model's, the on-time verdict, and where the two part."""

from __future__ import annotations

from trainground.render.failures import failure_lines
from trainground.render.tables import fitted, money
from trainground.simulation.report import Report, relative

HOUR = 3600.0

# (label, key, kind): kind picks the format; rows whose key neither side has are left out.
ROWS = (
    ("makespan", "makespan_s", "time"),
    ("start-up (first batch)", "startup_s", "time"),
    ("iteration mean", "iteration_mean_s", "time"),
    ("iteration p50", "iteration_p50_s", "time"),
    ("iteration p99", "iteration_p99_s", "time"),
    ("iteration max", "iteration_max_s", "time"),
    ("in flight mean", "inflight_mean", "count"),
    ("in flight p99", "inflight_p99", "count"),
    ("in flight max (model: planned peak)", "inflight_max", "count"),
    ("local sandboxes full", "local_full_share", "share"),
    ("cloud sandboxes in use (mean)", "cloud_sandboxes_mean", "count"),
    ("attempts that waited for a sandbox", "sandbox_wait_share", "share"),
    ("sandbox wait mean / p99", ("sandbox_wait_mean_s", "sandbox_wait_p99_s"), "time"),
    ("version gap mean (consumed)", "mean_version_gap", "gap"),
    ("version gap p99 (consumed)", "p99_version_gap", "gap"),
    ("exceedance q", "exceedance", "share"),
    ("group drop rate", "group_drop_rate", "share"),
    ("effective intake", "effective_intake", "share"),
    ("GPU-hours", "gpu_hours", "count"),
    ("realised cost", "realised_cost", "money"),
)

WAIT_MATTERS = 1e-3  # a mean sandbox wait per attempt above this share of the cadence lengthens iterations
WAIT_SHARE_MATTERS = (
    0.01  # a steady-state plan's waits worth a word: planning.sandbox_wait's default (docs/model.md §11)
)


def duration(seconds: float) -> str:
    """A span in the unit a person reads it in: seconds, minutes or hours."""
    size = abs(seconds)
    if size >= HOUR:
        return f"{size / HOUR:,.2f} h"
    if size >= 60:
        return f"{size / 60:,.1f} min"
    return f"{size:,.1f} s"


def _fmt(value, kind: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, (tuple, list)):
        return " / ".join(_fmt(v, kind) for v in value)
    if kind == "time":
        return f"{value:,.1f} s" if abs(value) < 1e5 else f"{value:,.0f} s"
    if kind == "share":
        return f"{value:.2%}"
    if kind == "gap":
        return f"{value:.2f}"
    if kind == "money":
        return money(value)
    return f"{value:,.0f}"


def _pick(side: dict, key):
    if isinstance(key, tuple):
        values = [side.get(k) for k in key]
        return None if all(v is None for v in values) else values
    return side.get(key)


def verdict(span: float | None, deadline: float) -> str:
    """'on time, 13.3 min (0.13 %) early' or 'LATE by 1.38 h (0.83 %)'."""
    if span is None:
        return "did not finish: no batch could form (see the figures)"
    slack = deadline - span
    if slack >= 0:
        return f"on time, {duration(slack)} ({slack / deadline:.2%}) early"
    return f"LATE by {duration(-slack)} ({-slack / deadline:.2%})"


def short_verdict(sim: dict | None) -> str:
    """A simulated verdict in a table cell: 'on time, 13.3 min early', 'LATE by 1.38 h', '2/5 on time'."""
    if sim is None:
        return ""
    lateness = sim.get("lateness_s")
    if lateness is None:
        return "did not finish"
    text = f"on time, {duration(-lateness)} early" if lateness <= 0 else f"LATE by {duration(lateness)}"
    if sim.get("replications", 1) > 1:
        text += f" ({round(sim['on_time_share'] * sim['replications'])}/{sim['replications']} on time)"
    return text


def render_simulation(console, report: Report) -> None:
    from rich.table import Table

    sim, pred = report.simulated, report.predicted
    plan = report.plan
    shapes = ", ".join(f"{i['replicas']:,} {i['shape']}" for i in plan["inference"])
    console.print(
        f"[bold]{report.instance}[/bold]: cadence {plan['cadence_s']:g} s, K = {plan.get('age_limit') or plan['versions_kept']}, "
        f"{shapes}, {plan['training_groups']:,} training groups; {report.replications} replication(s) of "
        f"{report.iterations:,} iterations, seed {report.seed}, {report.launch} launches"
    )
    console.print(
        f"simulated: {verdict(sim.get('makespan_s'), report.deadline_s)} against the deadline "
        f"{report.deadline_s:,.0f} s" + _share_line(report),
        markup=False,
    )
    counted = "counted (docs/model.md §8)" if report.count_startup else "not counted (schedule.count_startup: false)"
    console.print(f"model:     {verdict(pred['makespan_s'], report.deadline_s)}; start-up {counted}", markup=False)
    table = Table(show_edge=False, pad_edge=False)
    for column, justify in (("figure", "left"), ("simulated", "right"), ("model", "right"), ("difference", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
    spread = report.replications > 1
    if spread:
        table.add_column("min – max over replications", justify="right", no_wrap=True)
    for label, key, kind in ROWS:
        s, p = _pick(sim, key), _pick(pred, key)
        if s is None and p is None:
            continue
        diff = relative(s, p) if not isinstance(key, tuple) else None
        row = [label, _fmt(s, kind), _fmt(p, kind), "—" if diff is None else f"{diff:+.2%}"]
        if spread:
            band = report.spread.get(key) if isinstance(key, str) else None
            row.append(f"{_fmt(band['min'], kind)} – {_fmt(band['max'], kind)}" if band else "")
        table.add_row(*row)
    fitted(console, table)
    hist = sim.get("version_gap_histogram") or {}
    if hist:
        console.print("consumed version gaps: " + ", ".join(f"{k}: {v:.1%}" for k, v in hist.items()), markup=False)
    if sim.get("stages"):
        fitted(console, _stage_table(sim["stages"], pred.get("stages") or {}))
    for sentence in failure_lines(sim, pred) + partings(report):
        console.print(sentence, markup=False)


def _stage_table(simulated: dict, predicted: dict):
    """Per stage of a staged replay (MODEL §12): its iterations' mean length, in flight and launches, simulated
    beside the stage's closed forms."""
    from rich.table import Table

    table = Table(title="Stages, simulated / model", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("stage", "iters", "iteration mean", "in flight mean", "attempts/s"):
        table.add_column(column, justify="left" if column == "stage" else "right", no_wrap=True)
    for name, mine in simulated.items():
        model = predicted.get(name, {})

        def pair(key: str, kind: str, mine=mine, model=model) -> str:
            return f"{_fmt(mine.get(key), kind)} / {_fmt(model.get(key), kind)}"

        table.add_row(
            name,
            f"{int(mine.get('iterations') or 0):,}",
            pair("iteration_mean_s", "time"),
            pair("inflight_mean", "count"),
            pair("attempts_per_s", "gap"),
        )
    return table


def _share_line(report: Report) -> str:
    if report.replications == 1:
        return ""
    share = report.simulated["on_time_share"]
    return f"; on time in {round(share * report.replications)} of {report.replications} replications ({share:.0%})"


def _tightest_update(plan: dict, update: float | None, cadence: float) -> tuple[float | None, float, str]:
    """(update time s, the cadence it must fit in s, whose): the plan's, or for a staged plan (MODEL §12) the
    stage whose update time leaves the least share of its own cadence."""
    stages = plan.get("stages") or []
    if not stages:
        return update, cadence, ""
    tight = min(stages, key=lambda s: (s["cadence_s"] - s["update_time_s"]) / s["cadence_s"])
    return tight["update_time_s"], tight["cadence_s"], f" of stage '{tight['name']}'"


def partings(report: Report) -> list[str]:
    """Sentences saying where the simulation leaves the model, largest effects first."""
    sim, pred, parts = report.simulated, report.predicted, report.parts
    plan = report.plan
    gamma = pred.get("training_goodput") or 1.0
    L = plan["cadence_s"] / gamma  # MODEL §13: a training failure stalls the trainer, the model's L/γ per batch
    paced = f"{L:,.1f} s cadence over the training goodput" if gamma != 1.0 else f"{L:g} s cadence"
    out = []
    if not sim.get("finished", True):
        out.append("The run did not finish: batches stopped forming (every group dropped, or sandboxes never free).")
        return out
    if parts and abs(parts["total_s"]) > 5e-4 * pred["makespan_s"]:
        words = [
            f"the first batch {_later(parts['startup_s'])} than the model's "
            + ("fill" if report.count_startup else "one cadence")
        ]
        words.append(
            f"the {report.iterations - 1:,} iterations average {sim['iteration_mean_s']:,.1f} s against the "
            f"{paced} ({_signed(parts['iterations_s'])})"
        )
        if abs(parts["last_update_s"]) > 0.5:
            words.append(f"and the last update adds {duration(parts['last_update_s'])}, which n·L leaves out")
        out.append(
            f"The simulated run ends {duration(abs(parts['total_s']))} "
            f"{'later' if parts['total_s'] > 0 else 'earlier'} than the model's makespan: " + "; ".join(words) + "."
        )
    update, own, whose = _tightest_update(plan, pred.get("update_time_s"), L)
    mean = sim.get("iteration_mean_s")
    if mean is not None and mean > L * 1.001:
        slack = own - update if update is not None else None
        drop, bounds = sim.get("group_drop_rate"), pred.get("group_drop_bounds")
        if (sim.get("sandbox_wait_mean_s") or 0) > WAIT_MATTERS * L:
            out.append("Iterations run longer than the cadence because attempts wait for sandboxes.")
        elif drop is not None and bounds and drop > bounds[1] + 1e-3:
            out.append(
                f"Iterations run longer than the cadence: more groups pass their version cap than the model counts "
                f"({drop:.2%} against at most {bounds[1]:.2%}), so fewer effective trajectories arrive per second."
            )
        elif slack is not None and slack < 0.05 * own:
            out.append(
                f"Iterations run longer than the cadence: the update time{whose} ({update:,.1f} s) leaves "
                f"{slack:,.1f} s ({slack / own:.2%}) of slack in its {own:,.6g} s cadence, so a batch that is "
                "ready late is never made up and delays every batch after it."
            )
        else:
            out.append("Iterations run longer than the cadence: whole groups wait for their slowest member.")
    if sim.get("sandbox_wait_share", 0) > 0:
        out.append(_wait_sentence(report))
    if sim.get("inflight_max") and pred.get("inflight_max") and sim["inflight_max"] > pred["inflight_max"] * 1.001:
        out.append(
            f"In flight peaks at {sim['inflight_max']:,.0f}, above the {pred['inflight_max']:,.0f} the plan "
            "provisions for (peak_to_mean × the in-flight count its sandboxes are sized for: Little's-law mean, or "
            "E^hold under planning.basis hold)."
        )
    gap, model_gap = sim.get("mean_version_gap"), pred.get("mean_version_gap")
    if gap is not None and model_gap and abs(gap - model_gap) > 0.1 * model_gap:
        out.append(
            f"Consumed trajectories cross {gap:.2f} versions on average, the model says {model_gap:.2f}: a "
            "group is consumed only when its slowest member ends, and dropped groups leave the tail out."
        )
    drop, bounds = sim.get("group_drop_rate"), pred.get("group_drop_bounds")
    if drop is not None and bounds and not bounds[0] - 1e-3 <= drop <= bounds[1] + 1e-3:
        out.append(
            f"The group drop rate {drop:.2%} is outside the model's bounds [{bounds[0]:.2%}, {bounds[1]:.2%}]: "
            "groups that complete in time but wait in the buffer behind a full batch pass their version cap."
        )
    return out or ["Simulation and model agree within sampling error."]


def _wait_sentence(report: Report) -> str:
    """How many attempts waited for a sandbox, against what the plan allows: a plan that holds (MODEL §11) beside
    its limit planning.sandbox_wait and the model's share at these sandboxes (one run's share spreads widely
    around it, so one replication is not a verdict); a steady-state plan is sized for the mean load."""
    sim, limit = report.simulated, report.sandbox_wait
    text = (
        f"{sim['sandbox_wait_share']:.2%} of attempts waited for a sandbox (mean wait "
        f"{duration(sim['sandbox_wait_mean_s'])}, p99 {duration(sim['sandbox_wait_p99_s'])}); local "
        f"sandboxes were all taken {sim['local_full_share']:.1%} of the time"
    )
    if limit is None:
        if sim["sandbox_wait_share"] <= WAIT_SHARE_MATTERS:
            return text + "."
        return text + (
            ": the plan's sandboxes do not hold the load's fluctuation (basis steady_state sizes them for the mean "
            "load; hold sizes them for its fluctuation, docs/model.md §11)."
        )
    model = report.predicted.get("sandbox_wait_share")
    expected = "" if model is None else f"the model expects {model:.2%} at these sandboxes; "
    if sim["sandbox_wait_share"] <= limit:
        return text + f" ({expected}within the {limit:.2%} planning.sandbox_wait allows)."
    if report.replications == 1:
        return text + (
            f", above the {limit:.2%} planning.sandbox_wait allows ({expected}one run's share spreads widely around "
            "that, so one replication is no verdict: --replications 20 gives their mean)."
        )
    return text + (
        f" on average over {report.replications} replications ({expected}planning.sandbox_wait allows "
        f"{limit:.2%}): the plan's sandboxes do not hold the load's fluctuation."
    )


def _later(seconds: float) -> str:
    return f"comes {duration(abs(seconds))} {'later' if seconds >= 0 else 'earlier'}"


def _signed(seconds: float) -> str:
    return f"{'+' if seconds >= 0 else '-'}{duration(abs(seconds))}"


def render_solve_verdict(
    console, count_startup: bool, startup_s: float | None, report: Report | None, regime: str | None = None
) -> None:
    """The lines `solve` prints under a plan: whether start-up is counted, and the simulated verdict. ``regime``:
    a run regime other than the seed's (MODEL §14), its mode or, for an async run, its staleness: a batch run
    generates each batch inside its cadence; an admission run's or an async drop run's start-up is counted as the
    seed regime's, its fill over W_τ."""
    if regime in ("pipelined", "colocated"):
        line = "start-up: inside each iteration (a batch run generates each batch within its cadence, §14)"
    elif regime is not None and count_startup:
        line = "start-up: counted (docs/model.md §8 with §14: T = fill + (n-1)·L + U + extra_time, the fill over W_τ)"
    elif regime is not None:
        line = "start-up: not counted (T = n·L + extra_time; set schedule.count_startup: true to count it)"
    elif count_startup:
        line = "start-up: counted (docs/model.md §8: T = fill + (n-1)·L + U + extra_time)"
    else:
        line = "start-up: not counted (T = n·L + extra_time; set schedule.count_startup: true to count it)"
    if startup_s is not None:
        line += f"; the first batch needs ≈ {duration(startup_s)}"
    console.print(line, markup=False)
    if report is None:
        return
    sim = report.simulated
    line = f"simulated ({report.replications} replication(s)): {verdict(sim.get('makespan_s'), report.deadline_s)}"
    if report.replications > 1:
        line += f", on time in {sim['on_time_share']:.0%} of replications"
    console.print(line, markup=False)
