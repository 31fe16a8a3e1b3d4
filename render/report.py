"""`report`: one self-contained HTML page of an instance's answer (drivers.report.Findings).

Each section shows its key numbers in a table whose cells carry the number they print (``data-key`` is the
number's path in the page's embedded JSON, whose ``solve`` part is `solve --json`'s document), then the
commands' own text for the same objects, then the plots. No computation: every figure comes from the drivers.
"""

from __future__ import annotations

from trainground.render.report_html import figures, lead, money, note, page, seconds, section, share, terminal
from trainground.render.report_lead import headline, uncertain_lead
from trainground.render.report_tradeoffs import certainty_section, frontier_section, risk_section


def report_html(findings, source: str) -> str:
    """The page for ``findings``, ``source`` naming the instance file it was made from."""
    from trainground.drivers.tradeoffs.frontier import csv_rows

    answer = findings.answer
    payload = answer.to_json()
    data: dict = {"source": source, "solve": payload}
    sections = [
        summary(findings, payload, source),
        plan_section(answer),
        hold_section(answer, source),
        levers_section(answer),
    ]
    if findings.risk is not None:
        data["risk"] = findings.risk.to_json()
        sections.append(risk_section(findings.risk, data["risk"]))
    if findings.certainty is not None:
        data["certainty"] = {"rows": findings.certainty.rows()}
        sections.append(certainty_section(findings.certainty, data["certainty"]["rows"]))
    if findings.frontier is not None:
        data["frontier"] = {"rows": csv_rows(findings.frontier)}
        sections.append(frontier_section(findings.frontier, findings.frontier_basis, source))
    if findings.notes:
        sections.append(section("notes", "Notes", *(note(n) for n in findings.notes)))
    return page(f"trainground report: {answer.result.instance}", sections, data)


BASES = {
    "hold": "hold: sized to finish on time when the run is replayed trajectory by trajectory (docs/model.md §11)",
    "steady_state": "steady_state: sized on the average rates, as the seed article computes them (docs/model.md §2-§8)",
}


def summary(findings, payload: dict, source: str) -> str:
    answer = findings.answer
    result = answer.result
    value = result.objective_value
    shown = "n/a" if value is None else (f"{value:,.0f} s" if result.objective == "makespan" else money(value))
    basis = payload.get("basis")
    rows = [
        ["status", ("solve.status", payload["status"], str(result.status))],
        ["objective", ("solve.objective", result.objective, result.objective)],
        ["objective value", ("solve.objective_value", value, shown)],
        ["basis", ("solve.basis", basis, BASES.get(str(basis), str(basis)))],
    ]
    uncertain = uncertain_lead(findings, source)  # first what to trust: the plan under the inputs' uncertainty
    parts = [
        *([lead(uncertain)] if uncertain else []),
        lead(headline(answer, nominal=uncertain is not None)),
        note(f"instance file: `{source}`; the numbers below are those of `trainground solve --json` on it."),
        figures(["", "value"], rows),
    ]
    if result.message:
        parts.append(note(result.message))
    return section("summary", "Summary", *parts)


def plan_section(answer) -> str:
    from trainground.render.tables import render_result

    plan = answer.result.plan
    if plan is None:
        return section("plan", "The plan", note("no plan"), terminal(lambda c: render_result(c, answer.result), None))
    p = "solve.plan"
    rows = [
        ["cadence", (f"{p}.cadence_s", plan.cadence_s, f"{plan.cadence_s:,.6g} s")],
        ["makespan", (f"{p}.makespan_s", plan.makespan_s, seconds(plan.makespan_s))],
        ["versions kept (K)", (f"{p}.versions_kept", plan.versions_kept, str(plan.versions_kept))],
    ]
    for i, r in enumerate(plan.inference):
        if r.replicas:
            rows.append(
                [f"replicas {r.shape} (pool {r.pool})", (f"{p}.inference[{i}].replicas", r.replicas, f"{r.replicas:,}")]
            )
    rows.append(["training groups", (f"{p}.training_groups", plan.training_groups, f"{plan.training_groups:,}")])
    rows.append(["training GPUs", (f"{p}.training_gpus", plan.training_gpus, f"{plan.training_gpus:,}")])
    for kind, items in (("local_nodes", plan.local_nodes), ("cloud_vms", plan.cloud_vms)):
        for i, c in enumerate(items):
            if c.count:
                rows.append(
                    [
                        f"{'nodes' if kind == 'local_nodes' else 'VMs'} {c.type}",
                        (f"{p}.{kind}[{i}].count", c.count, f"{c.count:,}"),
                    ]
                )
    for i, pool in enumerate(plan.pools):
        rows.append(
            [
                f"GPUs used in pool {pool.pool}",
                (f"{p}.pools[{i}].gpus_used", pool.gpus_used, f"{pool.gpus_used:,} of {pool.gpus:,}"),
            ]
        )
    rows.append(["hourly cost", (f"{p}.hourly_cost", plan.hourly_cost, money(plan.hourly_cost))])
    rows.append(["total cost", (f"{p}.total_cost", plan.total_cost, money(plan.total_cost))])
    return section(
        "plan",
        "The plan",
        figures(["decision", "value"], rows),
        terminal(
            lambda c: render_result(c, answer.result),
            "what trainground solve prints: costs, throughput, sandboxes, freshness",
        ),
    )


def hold_section(answer, source: str) -> str:
    """Why the plan holds: the allowance loop's replays (MODEL §11), the simulated verdict, the start-up fill;
    ``source`` is the instance file the page was made from."""
    from trainground.render.simulate import render_solve_verdict

    result, parts = answer.result, []
    hold = result.hold
    if hold is not None:
        h = "solve.hold"
        rows = [
            [
                "verdict",
                (
                    f"{h}.allowance_converged",
                    hold.allowance_converged,
                    "holds" if hold.allowance_converged else "does NOT hold",
                ),
            ],
            ["run-variance allowance Δ", (f"{h}.allowance_s", hold.allowance_s, seconds(hold.allowance_s))],
            ["solve-and-replay rounds", (f"{h}.rounds", hold.rounds, str(hold.rounds))],
            ["replays of the final plan", (f"{h}.replays", hold.replays, str(hold.replays))],
            ["on time in the replays", (f"{h}.on_time_share", hold.on_time_share, share(hold.on_time_share))],
            [
                "95 % interval, low",
                (f"{h}.on_time_interval[0]", hold.on_time_interval[0], share(hold.on_time_interval[0])),
            ],
            [
                "95 % interval, high",
                (f"{h}.on_time_interval[1]", hold.on_time_interval[1], share(hold.on_time_interval[1])),
            ],
            [
                f"replay lateness that sets Δ (the {hold.order}th smallest)",
                (f"{h}.lateness_s", hold.lateness_s, seconds(hold.lateness_s)),
            ],
        ]
        for q in ("p50", "p90", "max"):
            rows.append(
                [
                    f"replay makespan {q}",
                    (f"{h}.makespan_s.{q}", hold.makespan_s.get(q), seconds(hold.makespan_s.get(q))),
                ]
            )
        rows += [
            [
                "sandbox wait share",
                (f"{h}.sandbox_wait_share", hold.sandbox_wait_share, share(hold.sandbox_wait_share)),
            ],
            [
                f"sandbox wait share, the {hold.order}th smallest replay's",
                (f"{h}.sandbox_wait_bound", hold.sandbox_wait_bound, share(hold.sandbox_wait_bound)),
            ],
            [
                "sandbox wait share the model expects",
                (f"{h}.sandbox_wait_model", hold.sandbox_wait_model, share(hold.sandbox_wait_model)),
            ],
            [
                "sandboxes sized for a wait share of",
                (f"{h}.sandbox_wait_sized", hold.sandbox_wait_sized, share(hold.sandbox_wait_sized)),
            ],
            [
                "expected total cost",
                (f"{h}.expected_total_cost", hold.expected_total_cost, money(hold.expected_total_cost)),
            ],
            ["p90 total cost", (f"{h}.p90_total_cost", hold.p90_total_cost, money(hold.p90_total_cost))],
            [
                "steady-state optimum (the seed's arithmetic)",
                (f"{h}.steady_state_total_cost", hold.steady_state_total_cost, money(hold.steady_state_total_cost)),
            ],
        ]
        parts.append(figures(["", "value"], rows))
    elif result.plan is None:
        parts.append(note(f"no plan ({result.status}): nothing to replay (basis {result.basis})."))
    else:
        parts.append(
            note(
                f"basis {result.basis}: the plan is sized on the steady-state rates and not replayed by the "
                "allowance loop (docs/model.md §11; solve it on the hold basis for that)."
            )
        )
    if answer.simulation is not None:
        sim = answer.to_json()["simulation"]
        parts.append(
            figures(
                ["simulated", "value"],
                [
                    ["replications", ("solve.simulation.replications", sim["replications"], str(sim["replications"]))],
                    ["makespan", ("solve.simulation.makespan_s", sim["makespan_s"], seconds(sim["makespan_s"]))],
                    [
                        "on time share",
                        ("solve.simulation.on_time_share", sim["on_time_share"], share(sim["on_time_share"])),
                    ],
                ],
            )
        )
    if answer.startup_estimate_s is not None:
        parts.append(
            figures(
                ["start-up", "value"],
                [
                    [
                        "fill before the first batch",
                        ("solve.startup_estimate_s", answer.startup_estimate_s, seconds(answer.startup_estimate_s)),
                    ]
                ],
            )
        )

    def draw(console) -> None:
        if hold is not None and result.plan is not None:
            from trainground.render.hold import render_hold

            render_hold(console, result, answer.inst, source)
        if result.plan is not None:
            render_solve_verdict(console, answer.inst.counts_startup, answer.startup_estimate_s, answer.simulation)

    parts.append(terminal(draw, None))
    return section("hold", "Why it holds", *parts)


def levers_section(answer) -> str:
    from trainground.render.levers import render_levers, unfinished_note, value_text

    found = answer.levers
    if found is None:
        why = "levers are re-solves of an optimal deterministic plan; this result has none to move"
        return section("levers", "Levers", note(why))
    rows = []
    for i, lv in enumerate(found.items):
        k = f"solve.levers.items[{i}]"
        rows.append(
            [
                lv.name,
                (f"{k}.before", lv.before, value_text(lv.before, lv.kind)),
                (f"{k}.after", lv.after, value_text(lv.after, lv.kind)),
                (f"{k}.status", lv.status, lv.status),
                (f"{k}.saving", lv.saving, "n/a" if lv.saving is None else saving_text(lv.saving, found.objective)),
                (f"{k}.saving_share", lv.saving_share, share(lv.saving_share)),
            ]
        )
    unfinished = unfinished_note(found)  # why some have no figure, and how to get one (report takes the options too)
    notes = [note(unfinished)] if unfinished else []
    if answer.result.hold is not None:
        notes.append(
            note(
                "On the hold basis each lever re-solves with this plan's run-variance allowance kept, without "
                "replays of its own: a saving is read against the plan's allowance (`trainground solve` with the "
                "edit replays it)."
            )
        )
    return section(
        "levers",
        "Levers",
        figures(["limit", "before", "after", "re-solve", f"saving ({found.objective})", "share"], rows),
        *notes,
        terminal(lambda c: render_levers(c, found)),
    )


def saving_text(saving: float, objective: str) -> str:
    """A lever's saving in the objective's unit, signed: "$920,087", "-$1,203", "3.1 h"."""
    from trainground.render.levers import amount_text

    if objective == "total_cost":
        text = money(abs(saving))
    else:
        text = amount_text(saving, objective)
    return ("-" if saving < 0 else "") + text
