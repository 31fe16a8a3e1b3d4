"""The suite's default basis.

Most tests check MODEL.md §2–§8 (the seed's figures, known optima, brute force, the verifier's rows):
the ``steady_state`` basis. Instances that do not choose a basis get it here, through the variable
every command reads (subprocesses inherit it). Tests of MODEL.md §11 set ``planning.basis: hold`` in
their instances, so they do not depend on this default.
"""

import os
import sys

from hypothesis import settings

from trainground.models.planning import BASIS_VARIABLE

os.environ[BASIS_VARIABLE] = "steady_state"

# Python's default, bytecode cached in __pycache__, even where the environment turns it off (PYTHONDONTWRITEBYTECODE):
# otherwise each xdist worker and each `trainground` process a test starts compiles the project again.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Hypothesis profiles. Each property test states its example count for the `ci` profile (the default: the
# suite in under 5 minutes on the 2-core CI machine) through tests.strategies.examples, which scales it by the
# profile's max_examples over 100: `deep` runs ten times as many,
#   python -m pytest -q -n 2 --hypothesis-profile deep
settings.register_profile("ci", max_examples=100)
settings.register_profile("deep", max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Hypothesis also draws, now and then, a constant it found in the project's modules imported so far: which ones
# depends on the tests that ran earlier in the process (the commands import lazily), so a derandomized test would
# see other examples alone than in the suite, or on another xdist worker, and its coverage floors would hold in one
# run and not the next. An empty pool keeps each derandomized test's examples a function of its own source.
try:  # a private name of Hypothesis's: where a release lacks it, its pool is left as that release makes it
    from hypothesis.internal.conjecture import providers as _providers
except ImportError:  # pragma: no cover
    _providers = None
if _providers is not None and hasattr(_providers, "_get_local_constants") and hasattr(_providers, "Constants"):
    _providers._get_local_constants = lambda: _providers.Constants()
