"""`report`: one self-contained HTML page of an instance's answer (drivers.report.Findings).

Each section shows its key numbers in a table whose cells carry the number they print (``data-key`` is the
number's path in the page's embedded JSON, whose ``solve`` part is `solve --json`'s document), then the
commands' own text for the same objects, then the plots. No computation: every figure comes from the drivers.
"""

from __future__ import annotations

from trainground.render.report_html import figures, image, money, note, page, seconds, section, share, terminal


def report_html(findings, source: str) -> str:
    """The page for ``findings``, ``source`` naming the instance file it was made from."""
    from trainground.drivers.frontier import csv_rows

    answer = findings.answer
    payload = answer.to_json()
    data: dict = {"source": source, "solve": payload}
    sections = [summary(answer, payload, source), plan_section(answer), hold_section(answer), levers_section(answer)]
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


def summary(answer, payload: dict, source: str) -> str:
    result = answer.result
    value = result.objective_value
    shown = "n/a" if value is None else (f"{value:,.0f} s" if result.objective == "makespan" else money(value))
    rows = [
        ["status", ("solve.status", payload["status"], str(result.status))],
        ["objective", ("solve.objective", result.objective, result.objective)],
        ["objective value", ("solve.objective_value", value, shown)],
        ["basis", ("solve.basis", payload.get("basis"), str(payload.get("basis")))],
    ]
    parts = [
        note(f"instance file: {source}; the numbers below are those of `trainground solve --json` on it."),
        figures(["", "value"], rows),
    ]
    if result.message:
        parts.append(note(result.message))
    return section("summary", "Summary", *parts)


def plan_section(answer) -> str:
    from trainground.render.tables import render_result

    plan = answer.result.plan
    if plan is None:
        return section("plan", "The plan", note("no plan"), terminal(lambda c: render_result(c, answer.result)))
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
        "plan", "The plan", figures(["decision", "value"], rows), terminal(lambda c: render_result(c, answer.result))
    )


def hold_section(answer) -> str:
    """Why the plan holds: the allowance loop's replays (MODEL §11), the simulated verdict, the start-up fill."""
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
            ["rounds", (f"{h}.rounds", hold.rounds, str(hold.rounds))],
            ["replays", (f"{h}.replays", hold.replays, str(hold.replays))],
            ["on time in the replays", (f"{h}.on_time_share", hold.on_time_share, share(hold.on_time_share))],
            [
                "95 % interval, low",
                (f"{h}.on_time_interval[0]", hold.on_time_interval[0], share(hold.on_time_interval[0])),
            ],
            [
                "95 % interval, high",
                (f"{h}.on_time_interval[1]", hold.on_time_interval[1], share(hold.on_time_interval[1])),
            ],
            ["lateness D_(k)", (f"{h}.lateness_s", hold.lateness_s, seconds(hold.lateness_s))],
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
                "expected total cost",
                (f"{h}.expected_total_cost", hold.expected_total_cost, money(hold.expected_total_cost)),
            ],
            ["p90 total cost", (f"{h}.p90_total_cost", hold.p90_total_cost, money(hold.p90_total_cost))],
            [
                "steady-state optimum",
                (f"{h}.steady_state_total_cost", hold.steady_state_total_cost, money(hold.steady_state_total_cost)),
            ],
        ]
        parts.append(figures(["", "value"], rows))
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

            render_hold(console, result)
        if result.plan is not None:
            render_solve_verdict(console, answer.inst.counts_startup, answer.startup_estimate_s, answer.simulation)

    parts.append(terminal(draw))
    return section("hold", "Why it holds", *parts)


def levers_section(answer) -> str:
    from trainground.render.levers import render_levers, value_text

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
                (f"{k}.saving", lv.saving, "n/a" if lv.saving is None else f"{lv.saving:,.2f}"),
                (f"{k}.saving_share", lv.saving_share, share(lv.saving_share)),
            ]
        )
    return section(
        "levers",
        "Levers",
        figures(["limit", "before", "after", "re-solve", f"saving ({found.objective})", "share"], rows),
        terminal(lambda c: render_levers(c, found)),
    )


def risk_section(risk, data: dict) -> str:
    from trainground.render.risk import render_risk, risk_pngs

    rows = [
        [
            "on-time probability",
            ("risk.on_time_probability", data["on_time_probability"], share(data["on_time_probability"])),
        ],
        [
            "95 % interval, low",
            ("risk.on_time_interval[0]", data["on_time_interval"][0], share(data["on_time_interval"][0])),
        ],
        [
            "95 % interval, high",
            ("risk.on_time_interval[1]", data["on_time_interval"][1], share(data["on_time_interval"][1])),
        ],
        [
            "expected lateness",
            ("risk.expected_lateness_s", data["expected_lateness_s"], seconds(data["expected_lateness_s"])),
        ],
    ]
    for q in ("p50", "p90", "p99"):
        rows.append([f"makespan {q}", (f"risk.makespan_s.{q}", data["makespan_s"][q], seconds(data["makespan_s"][q]))])
        rows.append([f"total cost {q}", (f"risk.total_cost.{q}", data["total_cost"][q], money(data["total_cost"][q]))])
    plots = [image(png, name) for name, png in risk_pngs(risk).items()]
    return section(
        "risk",
        f"Risk over {risk.samples:,} scenarios",
        figures(["", "value"], rows),
        terminal(lambda c: render_risk(c, risk)),
        *plots,
    )


def certainty_section(found, rows_data: list[dict]) -> str:
    from trainground.render.confidence import curve_png

    rows = []
    for i, row in enumerate(rows_data):
        k = f"certainty.rows[{i}]"
        alpha = "deterministic" if row["confidence"] is None else f"{row['confidence']:.0%}"
        rows.append(
            [
                alpha,
                (f"{k}.status", row["status"], row["status"]),
                (f"{k}.total_cost", row["total_cost"], money(row["total_cost"])),
                (
                    f"{k}.inference_gpus",
                    row["inference_gpus"],
                    "n/a" if row["inference_gpus"] is None else f"{row['inference_gpus']:,}",
                ),
                (
                    f"{k}.training_gpus",
                    row["training_gpus"],
                    "n/a" if row["training_gpus"] is None else f"{row['training_gpus']:,}",
                ),
                (f"{k}.out_of_sample", row["out_of_sample"], share(row["out_of_sample"])),
            ]
        )
    table = figures(
        ["confidence", "status", "total cost", "inference GPUs", "training GPUs", "on time out of sample"], rows
    )
    return section("certainty", "The price of certainty", table, image(curve_png(found), "price of certainty"))


def frontier_section(found, basis: str, source: str) -> str:
    from trainground.drivers.frontier import csv_rows, pools_of
    from trainground.render.plots import frontier_png

    pools = pools_of(found)
    pools = pools if len(pools) > 1 else []  # one pool: its GPUs are the inference and training columns
    rows = []
    for i, row in enumerate(csv_rows(found)):
        if not row["corner"]:
            continue
        k = f"frontier.rows[{i}]"
        rows.append(
            [
                row["frontier"],
                (f"{k}.makespan_s", row["makespan_s"], seconds(row["makespan_s"])),
                (f"{k}.cost", row["cost"], money(row["cost"])),
                (f"{k}.cadence_s", row["cadence_s"], f"{row['cadence_s']:,.6g} s"),
                (f"{k}.inference_gpus", row["inference_gpus"], f"{row['inference_gpus']:,}"),
                (f"{k}.training_gpus", row["training_gpus"], f"{row['training_gpus']:,}"),
                *((f"{k}.gpus[{p}]", row.get(f"gpus[{p}]"), f"{row.get(f'gpus[{p}]') or 0:,}") for p in pools),
            ]
        )
    walked = note(
        f"Walked on the {basis} basis, as `trainground frontier {source} --basis {basis}` walks it: every plan no "
        "other beats on both makespan and cost; the table lists the corners (where the slope changes)."
    )
    if not rows:
        return section("frontier", "The frontier", walked, note("no feasible plan: no frontier"))
    header = [
        "frontier",
        "makespan",
        "cost",
        "cadence",
        "inference GPUs",
        "training GPUs",
        *(f"GPUs in {p}" for p in pools),
    ]
    table = figures(header, rows)
    return section(
        "frontier",
        "The frontier: makespan against cost (its corners)",
        walked,
        table,
        image(frontier_png(found), "frontier"),
    )
