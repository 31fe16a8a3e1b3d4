"""The run regimes of MODEL.md §14 the planner plans beside the seed's: each regime's pair table and rows.

A regime is registered once, here: :func:`batch_of` says whether an instance runs a batch mode the MIP plans
(pipelined ``k = 0`` or ``1``; see :mod:`solver.regimes.batch`), and the model side reads the regime from that
object alone — its pair table (:func:`solver.regimes.batch.batch_pairs`), its rows (the training-group choice of
:mod:`solver.regimes.rows`) and its metrics (:mod:`solver.regimes.metrics`). The replay is
``simulate/regimes.py``; the checks are ``solver/verify/regimes.py``, which imports nothing of this package.
"""
