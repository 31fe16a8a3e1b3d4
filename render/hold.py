"""The lines under a plan sized to hold (MODEL.md §11): its allowance, its replays, the price of holding."""

from __future__ import annotations

from trainground.render.tables import money


def render_hold(console, result, inst=None, source: str | None = None) -> None:
    """What the replays of the plan say and what that verdict covers, beside the planned cost. With ``inst``, an
    uncertainty section the verdict leaves out is pointed at the commands that read it (``source`` names the file
    in them)."""
    hold, plan = result.hold, result.plan
    on_time = round(hold.on_time_share * hold.replays)
    rounds = f"{hold.rounds} round{'s' if hold.rounds != 1 else ''}"
    verdict = "holds" if hold.allowance_converged else "does NOT hold"
    if hold.allowance_converged and result.confidence is not None:  # MODEL §11 with §9: a scenario each
        claim = (
            f"each in a scenario of its own, so a fresh replay ends within its scenario's planned makespan plus "
            f"the allowance with probability >= {hold.order / (hold.replays + 1):.0%} (order statistic k = {hold.order})"
        )
    elif hold.allowance_converged:
        claim = (
            f"so a fresh replay is on time with probability >= {hold.order / (hold.replays + 1):.0%} "
            f"(order statistic k = {hold.order})"
        )
    elif on_time >= hold.order and hold.lateness_s is not None:  # on time: the replays' waits did not pass
        claim = "as its order statistic asks, but its replays wait beyond planning.sandbox_wait (below)"
    else:
        claim = f"short of the {hold.order} its order statistic asks for"
    waited = wait_line(hold, None if inst is None else inst.planning.sandbox_wait)
    waits = "not replayed" if hold.sandbox_wait_share is None else f"{hold.sandbox_wait_share:.2%} of attempts"
    console.print(
        f"plan {verdict} (basis hold): allowance {hold.allowance_s:,.0f} s for run variance ({rounds}); on time "
        f"in {on_time} of the {hold.replays} replays that set it, {claim}"
        + ("" if waited else f"; sandbox waits {waits}"),
        markup=False,
    )
    if waited:
        console.print(waited, markup=False)
    console.print(verdict_scope(result), markup=False)
    pointer = None if inst is None else uncertainty_pointer(inst, result, source)
    if pointer:
        console.print(pointer, markup=False)
    expected = "n/a" if hold.expected_total_cost is None else money(hold.expected_total_cost)
    p90 = "n/a" if hold.p90_total_cost is None else money(hold.p90_total_cost)
    line = f"cost: planned {money(plan.total_cost)}, expected {expected} (p90 {p90}) over the replays"
    steady = hold.steady_state_total_cost
    if result.objective == "makespan" and hold.steady_state_makespan_s:
        span = hold.makespan_s.get("p50") or plan.makespan_s
        line += (
            f"; price of holding {span / hold.steady_state_makespan_s - 1:+.1%} of makespan (replays' median) over "
            f"the steady-state optimum's {hold.steady_state_makespan_s:,.0f} s (--basis steady_state)"
        )
    elif steady:
        basis = hold.expected_total_cost if hold.expected_total_cost is not None else plan.total_cost
        line += f"; price of holding {basis / steady - 1:+.1%} over the steady-state optimum {money(steady)}"
        line += " (--basis steady_state)"
    console.print(line, markup=False)
    metrics = result.metrics
    if metrics is not None and (metrics.training_goodput is not None or metrics.availability):
        console.print(
            "the replays inject docs/model.md §13's failures, checkpoints, preemptions and weight-sync pauses: the "
            "allowance covers their variance beyond the expected time the planned makespan counts (docs/goodput.md)",
            markup=False,
        )


def wait_line(hold, limit: float | None) -> str | None:
    """The replays' sandbox test (MODEL §11, drivers.hold_waits): their mean wait share, and the k-th smallest of
    their wait shares against
    ``limit`` (planning.sandbox_wait), the model's mean share at the plan's sandboxes, and the share the rows were
    sized for when the replays asked for less than the limit; None where no replay queued a sandbox."""
    if hold.sandbox_wait_bound is None or limit is None:
        return None
    mean = "" if hold.sandbox_wait_share is None else f"{hold.sandbox_wait_share:.2%} of attempts on average, "
    text = (
        f"sandbox waits: {mean}{hold.sandbox_wait_bound:.2%} in the {hold.order}th smallest of the "
        f"{hold.replays} replays, "
    )
    if hold.sandbox_wait_bound <= limit:
        text += (
            f"within planning.sandbox_wait {limit:.2%}, so a fresh replay keeps its waits within it with probability "
            f">= {hold.order / (hold.replays + 1):.0%}"
        )
    else:
        text += f"above planning.sandbox_wait {limit:.2%}"
    if hold.sandbox_wait_model is not None:
        text += f"; the model expects {hold.sandbox_wait_model:.2%} on average at these sandboxes"
    sized = hold.sandbox_wait_sized
    if sized is not None and sized < limit:
        text += (
            f"; sized for {sized:.3%} of attempts waiting, as a plan sized for the limit waited beyond it in its "
            "replays (one run's share spreads widely around the mean)"
        )
    return text


def verdict_scope(result) -> str:
    """What the replays of a hold plan vary (MODEL §11), and so what its verdict covers: the run's own variance
    at the nominal inputs, and the inputs' uncertainty (§9) too only when each replay draws a scenario."""
    if result.confidence is not None:
        return (
            "what the verdict covers: the run's own variance (sandbox lifetimes, launches) and the inputs' "
            "uncertainty, each replay drawing one scenario of the uncertainty section (docs/model.md §11 with §9)"
        )
    return (
        "what the verdict covers: the run's own variance (sandbox lifetimes, launches) at the instance's nominal "
        "inputs, not uncertainty in the inputs themselves (docs/model.md §11; §9 for that)"
    )


def uncertainty_pointer(inst, result, source: str | None) -> str | None:
    """For an instance whose uncertainty section the verdict leaves out (no confidence solve): where its on-time
    probability under the section's factors is read (`risk`), and how to plan for one (`solve --confidence`,
    which a staged instance does not take)."""
    from trainground.models.stage_rules import refuse_confidence

    if inst.uncertainty is None or result.confidence is not None:
        return None
    file = source or "FILE"
    names = ", ".join(f.name for f in inst.uncertainty.factors)
    text = (
        f"the uncertainty section ({names}) is not in this verdict: `trainground risk {file}` gives the plan's "
        f"on-time probability under its factors"
    )
    if not refuse_confidence(inst, "--confidence"):
        alpha = inst.planning.on_time
        text += (
            f", and `trainground solve {file} --confidence {alpha:g}` the best plan on time in at least "
            f"{alpha:.0%} of its scenarios"
        )
    return text
