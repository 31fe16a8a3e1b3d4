"""The suite's default basis.

Most tests check MODEL.md §2–§8 (the seed's figures, known optima, brute force, the verifier's rows):
the ``steady_state`` basis. Instances that do not choose a basis get it here, through the variable
every command reads (subprocesses inherit it). Tests of MODEL.md §11 set ``planning.basis: hold`` in
their instances, so they do not depend on this default.
"""

import os

from trainground.models.planning import BASIS_VARIABLE

os.environ[BASIS_VARIABLE] = "steady_state"
