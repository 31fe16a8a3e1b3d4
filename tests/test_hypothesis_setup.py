"""The suite's Hypothesis set-up (tests/conftest.py): a derandomized test draws from no pool of constants found
in the modules imported so far, so its examples, and its coverage floors, do not depend on which tests ran
before it in the process. The set-up reaches a private name of Hypothesis's; this fails loudly on a release
that lacks it, where the set-up would otherwise fall back to the shared pool without a word."""

from __future__ import annotations


def test_the_pool_of_constants_a_derandomized_test_draws_from_is_empty():
    from hypothesis.internal.conjecture import providers

    import trainground.solver.laws.calculus  # noqa: F401  (a module full of constants, imported)

    assert hasattr(providers, "_get_local_constants"), "Hypothesis changed: see tests/conftest.py"
    pool = providers._get_local_constants()
    assert not (pool.integers or pool.floats or pool.bytes or pool.strings), pool
