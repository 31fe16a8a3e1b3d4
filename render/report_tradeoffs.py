"""The sections of `report` (render.report) that weigh one plan against others: its risk over the uncertainty
section's scenarios, the price of certainty, and the frontier of makespan against cost."""

from __future__ import annotations

from trainground.render.report_html import figures, image, money, note, seconds, section, share, terminal


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
    from trainground.drivers.tradeoffs.frontier import csv_rows, pools_of
    from trainground.render.plots import frontier_png
    from trainground.render.tradeoffs import shown_corners

    pools = pools_of(found)
    pools = pools if len(pools) > 1 else []  # one pool: its GPUs are the inference and training columns
    data = csv_rows(found)
    held = any(row["allowance_from"] for row in data)
    rows, hidden, offset = [], 0, 0
    for name, front in found.frontiers.items():
        shown = set(shown_corners(front.corners))
        hidden += len(front.corners) - len(shown)
        for i in sorted(shown):
            k, row = f"frontier.rows[{offset + i}]", data[offset + i]
            allowance = row["allowance_s"]
            carried = "*" if row["allowance_from"] == "carried" else ""
            rows.append(
                [
                    name,
                    (f"{k}.makespan_s", row["makespan_s"], seconds(row["makespan_s"])),
                    (f"{k}.cost", row["cost"], money(row["cost"])),
                    (f"{k}.cadence_s", row["cadence_s"], f"{row['cadence_s']:,.6g} s"),
                    (f"{k}.inference_gpus", row["inference_gpus"], f"{row['inference_gpus']:,}"),
                    (f"{k}.training_gpus", row["training_gpus"], f"{row['training_gpus']:,}"),
                    *((f"{k}.gpus[{p}]", row.get(f"gpus[{p}]"), f"{row.get(f'gpus[{p}]') or 0:,}") for p in pools),
                    *(
                        ((f"{k}.allowance_s", allowance, "—" if allowance is None else f"{allowance:,.0f} s{carried}"),)
                        if held
                        else ()
                    ),
                ]
            )
        offset += len(front.points)
    walked = note(
        f"Walked on the {basis} basis, as `trainground frontier {source} --basis {basis}` walks it: every plan no "
        "other beats on both makespan and cost (the cheapest is the plan above when the basis is the plan's); "
        "the table lists the corners, where the slope changes."
    )
    if not rows:
        return section("frontier", "The frontier", walked, note("no feasible plan: no frontier"))
    notes = []
    if held:
        notes.append(
            note(
                "* the cheapest plan's run-variance allowance, carried by every faster plan (docs/model.md §11): "
                "only the cheapest plan is replayed."
            )
        )
    if hidden:
        notes.append(
            note(
                f"{len(rows)} corners shown, evenly spread with both ends; {hidden} more, and every point, are in "
                "the page's JSON block (and in `frontier.csv`, which `trainground frontier` writes)."
            )
        )
    header = [
        "frontier",
        "makespan",
        "cost",
        "cadence",
        "inference GPUs",
        "training GPUs",
        *(f"GPUs in {p}" for p in pools),
        *(("allowance",) if held else ()),
    ]
    return section(
        "frontier",
        "The frontier: makespan against cost (its corners)",
        walked,
        figures(header, rows),
        *notes,
        image(frontier_png(found), "frontier"),
    )
