"""Within one cadence, the K a pair table keeps: those no other admissible K dominates (MODEL.md §2).

A K whose attempt rate is no lower and whose every shape's throughput is no higher than another K's
can never be strictly better; with the start-up counted (§8) its makespan must be no shorter too.
"""

from __future__ import annotations

import numpy as np


def undominated_where(keep: np.ndarray, attempts: np.ndarray, mult: np.ndarray, span: np.ndarray | None) -> np.ndarray:
    """:func:`undominated` of the entries of ``keep`` (the others inadmissible), computed on the cadences that
    keep any: a fine grid whose pools cut most cadences compares K only where it has to."""
    rows = np.flatnonzero(keep.any(axis=1))
    out = np.zeros(keep.shape, dtype=bool)
    if rows.size:
        rated = np.where(keep[rows], attempts[rows], np.inf)
        out[rows] = undominated(rated, mult, None if span is None else span[rows])
    return out


def undominated(attempts: np.ndarray, mult: np.ndarray, span: np.ndarray | None = None) -> np.ndarray:
    """Mask of (grid, K) entries not dominated by another admissible K at the same cadence.

    Inadmissible entries carry an infinite attempt rate. K' dominates K when its attempt rate is no
    higher and every shape's supply multiplier no lower (and, when the makespan depends on K through
    the start-up, ``span``, its makespan no longer); among exact equals the smaller K is kept.
    """
    n_k = attempts.shape[1]
    if span is not None:  # a lower attempt rate fills the pipeline more slowly: compare makespans too
        return undominated_in_time(attempts, mult, span)
    if n_k == 0 or np.all(mult == mult[0]):
        # No slowdown difference between the K: only the lowest attempt rate (smallest such K) survives.
        best = np.argmin(attempts, axis=1) if n_k else np.zeros(attempts.shape[0], dtype=int)
        keep = np.zeros(attempts.shape, dtype=bool)
        keep[np.arange(attempts.shape[0]), best] = True
        return keep & np.isfinite(attempts)
    ks = np.arange(n_k)
    mult_ok = np.all(mult[:, None, :] >= mult[None, :, :], axis=2)  # [k2, k]: k2's supply >= k's
    mult_equal = np.all(mult[:, None, :] == mult[None, :, :], axis=2)
    other = ks[:, None] != ks[None, :]
    a2, a1 = attempts[:, :, None], attempts[:, None, :]  # [grid, k2, k]
    better = a2 <= a1
    equal = (a2 == a1) & mult_equal[None]
    wins = (
        np.isfinite(a2)
        & mult_ok[None]
        & other[None]
        & ((better & ~equal) | (equal & (ks[:, None] < ks[None, :])[None]))
    )
    return np.isfinite(attempts) & ~wins.any(axis=1)


def undominated_in_time(attempts: np.ndarray, mult: np.ndarray, span: np.ndarray) -> np.ndarray:
    """:func:`undominated` where a dominating K must also have a makespan no longer."""
    ks = np.arange(attempts.shape[1])
    mult_ok = np.all(mult[:, None, :] >= mult[None, :, :], axis=2)
    mult_equal = np.all(mult[:, None, :] == mult[None, :, :], axis=2)
    a2, a1 = attempts[:, :, None], attempts[:, None, :]
    s2, s1 = span[:, :, None], span[:, None, :]
    no_worse = (a2 <= a1) & (s2 <= s1) & mult_ok[None]
    equal = (a2 == a1) & (s2 == s1) & mult_equal[None]
    wins = (
        np.isfinite(a2) & (ks[:, None] != ks[None, :])[None] & no_worse & (~equal | (ks[:, None] < ks[None, :])[None])
    )
    return np.isfinite(attempts) & ~wins.any(axis=1)
