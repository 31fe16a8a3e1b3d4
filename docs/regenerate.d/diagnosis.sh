#!/bin/sh
# Regenerates the outputs quoted in docs/diagnosis.md. Run from the repository root:
#   PYTHON=.venv/bin/python sh docs/regenerate.d/diagnosis.sh
set -u
PYTHON=${PYTHON:-python}
out=docs/diagnosis
mkdir -p "$out"
for name in mean-gap-only max-nodes-only two-limits gap-and-nodes; do
  "$PYTHON" cli.py solve "tests/data/infeasible/$name.yaml" --basis steady_state > "$out/$name.txt"
done
"$PYTHON" cli.py solve instances/seed-3000-cards.yaml --basis steady_state > "$out/seed-3000-cards.txt"
"$PYTHON" cli.py solve tests/data/infeasible/mean-gap-only.yaml --basis steady_state --json \
  | "$PYTHON" -c "import json, sys; print(json.dumps(json.load(sys.stdin)['diagnosis'], indent=2, ensure_ascii=False))" \
  > "$out/mean-gap-only.json"
exit 0
