"""What `report` opens with (render.report's summary): the plan in one sentence and whether it holds; and, for an
instance with an ``uncertainty:`` section, first what a planner should trust: the plan's on-time probability under
the section's factors (`risk`'s) and the plan for the run's target share (MODEL.md §9), with its price beside the
plan sized at the nominal inputs. No computation: every figure comes from drivers.report.Findings."""

from __future__ import annotations

from trainground.render.report_html import money


def plan_parts(plan) -> str:
    """'581 tp8 replicas (pool main), 439 training groups (3,512 GPUs), 20 standard nodes'."""
    parts = [f"{r.replicas:,} {r.shape} replicas (pool {r.pool})" for r in plan.inference if r.replicas]
    parts.append(f"{plan.training_groups:,} training groups ({plan.training_gpus:,} GPUs)")
    parts += [f"{c.count:,} {c.type} nodes" for c in plan.local_nodes if c.count]
    parts += [f"{c.count:,} {c.type} VMs" for c in plan.cloud_vms if c.count]
    return ", ".join(parts)


def headline(answer, nominal: bool = False) -> str:
    """One sentence: what the plan runs, what it costs, how long it takes, and whether it holds. ``nominal``: the
    page opened with the uncertainty section's figures, so the sentence says this plan is the one sized at the
    nominal inputs."""
    result, inst = answer.result, answer.inst
    plan = result.plan
    if plan is None:
        return f"No plan: {result.status}." + (f" {result.message.splitlines()[0]}" if result.message else "")
    kind = "fastest" if result.objective == "makespan" else "cheapest"
    opening = f"The {kind} plan"
    if result.confidence is not None:
        opening += f" on time in at least {result.confidence.target:.0%} of the uncertainty section's scenarios"
    elif nominal:
        opening = f"At the nominal inputs, the {kind} plan"
    text = (
        f"{opening}: {plan_parts(plan)}; {money(plan.total_cost)} over {plan.makespan_s / 86400:.2f} days "
        f"({plan.cadence_s:,.6g} s an iteration) against a deadline of {inst.schedule.deadline / 86400:.2f} days."
    )
    hold = result.hold
    if hold is not None:
        verdict = "It holds" if hold.allowance_converged else "It does NOT hold"
        replays = (
            "replays, each in one scenario of the uncertainty section"
            if result.confidence is not None
            else "replays at its nominal inputs (they vary the run itself: sandbox lifetimes, launches)"
        )
        text += (
            f" {verdict}: on time in {hold.on_time_share:.0%} of its {hold.replays} {replays}, with "
            f"{hold.allowance_s:,.0f} s kept for run variance; expected cost {money(hold.expected_total_cost)}."
        )
    return text


def uncertain_lead(findings, source: str) -> str | None:
    """For an instance with an uncertainty section whose plan was assessed: its on-time probability under the
    section's factors, then the plan for the run's target share (``uncertainty.confidence``; without one, the
    recommendation at ``planning.on_time``) with its price beside the plan sized at the nominal inputs."""
    answer, risk = findings.answer, findings.risk
    inst, result = answer.inst, answer.result
    if inst.uncertainty is None or risk is None or result.plan is None:
        return None
    names = ", ".join(f.name for f in inst.uncertainty.factors)
    low, high = risk.on_time_interval
    on_time = (
        f"on time in {risk.on_time_probability:.2%} of {risk.samples:,} scenarios of the uncertainty section's "
        f"factors ({names}; 95 % interval {low:.2%} to {high:.2%}; Risk, below)"
    )
    nominal = None if findings.certainty is None else findings.certainty.deterministic.plan
    conf = result.confidence
    if conf is not None:  # the file's uncertainty.confidence: the page's plan is the plan for it
        text = (
            f"Planned for uncertainty.confidence = {conf.target:.0%}: this plan is {on_time}, and in "
            f"{conf.out_of_sample:.1%} of {conf.check_samples:,} fresh ones its solve drew; it costs "
            f"{money(result.plan.total_cost)}"
        )
        if nominal is not None:
            text += (
                f" against {money(nominal.total_cost)} for the plan sized at the nominal inputs "
                f"({result.plan.total_cost / nominal.total_cost - 1:+.1%}; The price of certainty, below)"
            )
        return text + "."
    text = f"Sized at the nominal inputs, the plan below is {on_time}."
    return text + " " + recommendation(findings, source)


def recommendation(findings, source: str) -> str:
    """The plan to run instead of the nominal one: the price of certainty's plan for ``planning.on_time`` (its
    decisions, its cost beside the nominal plan's, its out-of-sample share), else the most certain plan below that
    share the curve found, else the command that finds it; a staged instance (no confidence solve) is told so."""
    from trainground.models.stage_rules import refuse_confidence

    inst, result = findings.answer.inst, findings.answer.result
    target = inst.planning.on_time
    command = f"`trainground solve {source} --confidence {target:g}`"
    if refuse_confidence(inst, "--confidence"):
        return (
            "A staged instance takes no confidence solve, so no plan for a target share is offered; each factor's "
            "swing (Risk, below) says which input moves this share most."
        )
    tried = {} if findings.certainty is None else dict(findings.certainty.points)
    if target not in tried:
        return f"{command} gives the best plan on time in at least {target:.0%} of them."
    head = f"Recommended: the best plan on time in at least {target:.0%} of them"
    chosen = tried[target]
    if chosen.plan is None:
        below = [(a, r) for a, r in sorted(tried.items()) if a < target and r.plan is not None]
        if not below:
            return f"No plan is on time in {target:.0%} of them, nor in any lower share the price of certainty tried."
        alpha, chosen = below[-1]
        head = f"No plan is on time in {target:.0%} of them; the most certain one found is on time in {alpha:.0%}"
        command = f"`trainground solve {source} --confidence {alpha:g}`"
    plan, conf = chosen.plan, chosen.confidence
    base = result.plan.total_cost
    if decisions(plan) == decisions(result.plan):
        return (
            f"It is already the best plan on time in at least {conf.target:.0%} of them: on time in "
            f"{conf.out_of_sample:.1%} of {conf.check_samples:,} fresh scenarios (The price of certainty, below)."
        )
    return (
        f"{head}: {plan_parts(plan)}; {money(plan.total_cost)} against {money(base)} for the plan at the nominal "
        f"inputs ({plan.total_cost / base - 1:+.1%}), on time in {conf.out_of_sample:.1%} of "
        f"{conf.check_samples:,} fresh scenarios (The price of certainty, below). {command} gives it; "
        f"`uncertainty.confidence: {conf.target:g}` in the file makes it the file's plan."
    )


def decisions(plan) -> tuple:
    """What a plan runs (cadence, K, replicas, groups, nodes, VMs): two solves that agree on it are one plan."""
    return (
        plan.cadence_s,
        plan.versions_kept,
        tuple((r.shape, r.replicas) for r in plan.inference),
        plan.training_groups,
        tuple((c.type, c.count) for c in plan.local_nodes),
        tuple((c.type, c.count) for c in plan.cloud_vms),
    )
