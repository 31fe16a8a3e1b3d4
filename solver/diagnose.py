"""Infeasibility diagnosis (filled in below)."""


def diagnose(inst, pairs, objective):
    return {"rejected_by": dict(pairs.rejected)}
