"""The levers under a plan, one line each: "max_versions_kept 10 → 15: −11.9 % ($327k)"."""

from __future__ import annotations

SAME = 1e-9  # a relative change below this reads as "no change"


def value_text(value: float, kind: str) -> str:
    """A limit's value as the instance file would say it."""
    if kind == "count":
        return f"{value:,.0f}"
    if kind == "seconds":
        return f"{value / 86400:g} d" if value >= 86400 and value % 3600 == 0 else f"{value:,.0f} s"
    if kind == "share":
        return f"{value:.4g}"
    if kind == "money":
        return f"${value:,.0f}"
    return f"{value:.4g}"


def amount_text(amount: float, objective: str) -> str:
    """An objective difference: dollars (k, M) for the cost criteria, hours or seconds for makespan."""
    size = abs(amount)
    if objective == "makespan":
        return f"{size / 3600:,.1f} h" if size >= 3600 else f"{size:,.0f} s"
    if objective == "hourly_cost":
        return f"${size:,.0f}/h"
    if size >= 1e6:
        return f"${size / 1e6:,.2f}M"
    return f"${size / 1e3:,.0f}k" if size >= 1e4 else f"${size:,.0f}"


def lever_line(lever, objective: str) -> str:
    move = f"{lever.name} {value_text(lever.before, lever.kind)} → {value_text(lever.after, lever.kind)}"
    if lever.status == "skipped":
        return f"{move}: not computed (the time for the levers ran out)"
    if lever.status == "time_limit":
        return f"{move}: not proven in the time for the levers"
    if lever.status == "too_large":
        return (
            f"{move}: not solved, too large to tabulate ({lever.rows:,} rows or more, above the cap on a table's rows)"
        )
    if lever.saving is None:
        return f"{move}: no plan ({lever.status})"
    if abs(lever.saving_share or 0.0) < SAME:
        return f"{move}: no change" + bought_text(lever)
    sign = "−" if lever.saving > 0 else "+"
    line = f"{move}: {sign}{abs(lever.saving_share) * 100:.1f} % ({amount_text(lever.saving, objective)})"
    return line + bought_text(lever)


def bought_text(lever) -> str:
    """'; buys 3.1 h at this plan' for a reliability lever (MODEL §13), else ''."""
    bought = getattr(lever, "buys_s", None)
    if not bought:
        return ""
    return f"; buys {bought / 3600:,.1f} h at this plan" if bought >= 360 else f"; buys {bought:,.0f} s at this plan"


def unfinished_note(found) -> str | None:
    """Why some levers have no figure and how to get one: their re-solves share one time budget."""
    left = [lv for lv in found.items if lv.status in ("skipped", "time_limit")]
    if not left:
        return None
    first = left[0]
    return (
        f"{len(left)} lever{'s' if len(left) > 1 else ''} without a figure: the lever re-solves share one time "
        f"budget (--levers-time, within --time-limit), spent after {found.seconds:.1f} s here; rerun with "
        f"--levers-time 60 for more, or see one alone with --set {first.path}={first.after:g}"
    )


def drop_sentence(found) -> str | None:
    """How many groups the plan loses to staleness at its K (under overrun_policy: drop)."""
    if found.overrun_policy != "drop" or found.group_drop_rate <= 0:
        return None
    return f"{found.group_drop_rate * 100:.0f} % of groups are dropped for staleness at K = {found.versions_kept}"


def render_levers(console, found) -> None:
    """The levers under a plan, the largest saving first."""
    if found is None:
        return
    what = {"total_cost": "total cost", "hourly_cost": "hourly cost", "makespan": "makespan"}[found.objective]
    console.print(
        f"[bold]Levers[/bold] (each limit moved one step, re-solved; change in {what}, "
        f"{found.solves} re-solves, {found.seconds:.2f} s)"
    )
    for lever in found.items:
        console.print("  " + lever_line(lever, found.objective), markup=False)
    note = unfinished_note(found)
    if note:
        console.print("  " + note, markup=False)
    sentence = drop_sentence(found)
    if sentence:
        console.print("  " + sentence, markup=False)
