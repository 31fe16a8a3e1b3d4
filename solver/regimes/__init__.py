"""The run regimes of MODEL.md §14 the planner plans beside the seed's: each regime's pair table and rows.

A regime is registered once, in :mod:`solver.regimes.table`: an object per mode says whether an instance runs it
— :func:`solver.regimes.batch.batch_of` (pipelined ``k = 0`` or ``1``, colocated),
:func:`solver.regimes.admission.admission_of` (async with admission control) and
:func:`solver.regimes.drop.drop_of` (async drop with in-flight updates, a rollout timeout, a concurrency cap) —
and the model side reads the regime from that object alone: its pair table, its rows (the training-group choice
and the colocated bill of :mod:`solver.regimes.rows`) and its metrics (:mod:`solver.regimes.metrics`). The
replay of the batch modes is ``simulate/regimes.py``; the checks are ``solver/verify/regimes.py`` and
``solver/verify/drop.py``, which import nothing of this package.
"""
