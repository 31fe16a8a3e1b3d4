# docs/verifier.md: the plan the old reading of MODEL §3.5 returned, rejected by the verifier.
show docs/verifier/old-reading.txt "$(cat <<'SNIPPET'
TRAINGROUND_BASIS=steady_state python - <<'EOF'
from trainground.models.edits import load_edited
from trainground.models.result import Count
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan
from tests.plans import recosted
from tests.test_mixed_backends import MIXED, SEED
inst = load_edited(SEED, MIXED)
plan = solve_instance(inst).plan
old = recosted(inst, plan, local_nodes=[Count(type="standard", count=13)])
print("\n".join(verify_plan(inst, old).violations))
EOF
SNIPPET
)"
