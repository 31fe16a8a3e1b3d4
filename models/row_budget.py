"""The cap on the rows of one table: with start-up counted (MODEL §8, the hold basis §11) a (cadence, K) pair
becomes one row per training-group count worth having (:mod:`solver.table.group_counts`), so a table's rows, not its
(cadence, K) entries (:func:`models.plausible.size_errors`), are what fills memory: a long deadline keeps nearly every
count up to the pool's on time, and the rows reach pairs × counts. Their number is known only once the pairs are, so
the table counts them before any is allocated (:func:`solver.table.row_cap.check_rows`, from :mod:`solver.table.group_counts`) against this cap.
"""

from __future__ import annotations

import os

from trainground.models.plausible import TABLE_BUDGET_BYTES

# The rows are held to the budget of the (cadence, K) tables (models.plausible.TABLE_BUDGET_BYTES). A row costs
# TABLE_ROW_BYTES at the peak of a solve that needs every row (the table, the pyomo model and HiGHS's copy):
# `python bench/caps.py --rows` measures 616 (the slope of peak RSS over rows, the seed at a 10-year deadline
# with cadence.max 1,500 to 4,000 s, 0.44 to 3.0 million rows, solve --objective makespan --no-levers). One such
# table dominates at a time: the same solve of 1.36 million rows peaks at 0.86 GB alone and 1.63 GB with its levers
# (re-solves of up to 2.2 million rows), less than the two tables together would take. So a table may take the
# budget and a quarter more, ROW_BUDGET_BYTES: the bundled instances' largest lever re-solves (max_versions_kept
# raised one step on large-three-pools and seed-2week-60: 3.35 and 3.60 million rows, 2.06 and 2.24 GB peak measured)
# stay within it, and a table that would take tens of GB is refused before it is allocated. TABLE_ROW_VARIABLE sets
# another cap (a test, a machine with more memory).
TABLE_ROW_BYTES = 640
ROW_BUDGET_BYTES = TABLE_BUDGET_BYTES * 5 // 4
TABLE_ROWS = ROW_BUDGET_BYTES // TABLE_ROW_BYTES  # 3,906,250 rows a table
TABLE_ROW_VARIABLE = "TRAINGROUND_MAX_TABLE_ROWS"


def table_rows_cap() -> int:
    """The most (cadence, K, training groups) rows one table may hold: ``$TRAINGROUND_MAX_TABLE_ROWS``, else
    TABLE_ROWS (the budget at TABLE_ROW_BYTES a row). Raises ValueError when the variable is not a positive whole
    number."""
    text = os.environ.get(TABLE_ROW_VARIABLE, "").strip()
    if not text:
        return TABLE_ROWS
    try:
        rows = int(text)
    except ValueError:
        rows = 0
    if rows <= 0:
        raise ValueError(f"must be a positive whole number (the cap on a table's rows), got {text!r}")
    return rows


def rows_memory(rows: int, cap: int) -> str:
    """What ``rows`` table rows would take, against the cap: 'about 250 GB at 640 bytes a row, above the
    3,906,250 rows (2.5 GB) a table may hold'."""
    return (
        f"about {rows * TABLE_ROW_BYTES / 1e9:.3g} GB at {TABLE_ROW_BYTES} bytes a row, above the {cap:,} rows "
        f"({cap * TABLE_ROW_BYTES / 1e9:.3g} GB) a table may hold (docs/fields.md)"
    )
