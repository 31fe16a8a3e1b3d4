"""The pair table and the model extension of an instance's regime (MODEL.md §14): the one place the model side
asks which regime it plans. The seed's regime is :func:`solver.table.pairs.build`'s table with no extension; a
batch run's is :func:`solver.regimes.batch.batch_pairs`, a row per useful group count, with
:class:`solver.regimes.rows.SharedPool` under colocated; an admission run's is :func:`solver.regimes.admission.admission_pairs`;
an async drop run with regime fields set (in-flight updates, a timeout, a cap) is
:func:`solver.regimes.drop.drop_pairs`'s. A regime the planner does not plan yet is refused here, by name."""

from __future__ import annotations

from trainground.models.instance import Instance
from trainground.models.regime_rules import refuse_unplanned
from trainground.solver.regimes.admission import admission_of, admission_pairs
from trainground.solver.regimes.batch import batch_of, batch_pairs
from trainground.solver.regimes.drop import drop_of, drop_pairs
from trainground.solver.regimes.rows import SharedPool
from trainground.solver.table import pairs as pair_tables
from trainground.solver.tolerances import REGIME_FEASIBILITY_TOL


def pair_table(inst: Instance, cache: pair_tables.TableCache | None = None, **options) -> pair_tables.Pairs:
    """The admissible pairs of ``inst`` under its regime (``options`` as :func:`solver.table.pairs.build`'s, for
    the seed's regime)."""
    refuse_unplanned(inst)
    batch = batch_of(inst)
    if batch is not None:
        return batch_pairs(inst, batch)
    admitted = admission_of(inst)
    if admitted is not None:
        return admission_pairs(inst, admitted)
    dropped = drop_of(inst)
    if dropped is not None:
        return drop_pairs(inst, dropped)
    return pair_tables.build(inst, cache, **options)


def extension_of(inst: Instance) -> SharedPool | None:
    """The rows a regime adds to each pair block (None: the pair's own rows are the regime's): a colocated run's
    bill, the larger of its replicas' and its groups' GPUs."""
    batch = batch_of(inst)
    return SharedPool() if batch is not None and batch.shared else None


def highs_options(inst: Instance) -> dict:
    """HiGHS options of a regime's model: its feasibility tolerance (solver.tolerances.REGIME_FEASIBILITY_TOL)."""
    if inst.regime is None or inst.regime.is_default:
        return {}
    return {"mip_feasibility_tolerance": REGIME_FEASIBILITY_TOL, "primal_feasibility_tolerance": REGIME_FEASIBILITY_TOL}


def age_limited(inst: Instance) -> bool:
    """Staleness drop under async (the seed's regime and its variants): K bounds a consumed gap (MODEL §14's
    ``plan.age_limit``); batch modes and admission drop nothing for age."""
    r = inst.regime
    return r is None or (r.mode == "async" and r.staleness == "drop")


def batched(inst: Instance) -> bool:
    """A batch regime (MODEL §14): every batch's attempts launched together."""
    return inst.regime is not None and inst.regime.batched


def own_table(inst: Instance) -> bool:
    """A regime with a pair table of its own (a batch run, an admission run or an async drop run with regime fields
    set, MODEL §14), whose rows are listed whole, each group count worth having included: the seed's row cover
    (solver.table.rows) does not apply."""
    return batched(inst) or admission_of(inst) is not None or drop_of(inst) is not None
