#!/bin/sh
# Regenerates the outputs quoted in docs/levers.md (run from the repository root):
#   sh docs/regenerate.d/levers.sh
# PYTHON defaults to the project's virtualenv when there is one.
set -u
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=docs/levers
TWO=tests/data/compare/two-pools.yaml
mkdir -p "$OUT"
tg() { PYTHONPATH=. "$PYTHON" cli.py "$@"; }

tg solve instances/seed-week-75.yaml > "$OUT/solve-seed.txt"
sed -n '/^binding:/,/staleness/p' "$OUT/solve-seed.txt" > "$OUT/solve-seed-levers.txt"
tg solve instances/seed-week-75.yaml --objective makespan | sed -n '/^Levers/,/staleness/p' > "$OUT/solve-seed-makespan.txt"
tg solve instances/seed-week-75.yaml --json \
  | "$PYTHON" -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["levers"], indent=2))' > "$OUT/solve-seed-levers.json"
tg compare "$TWO" > "$OUT/compare-two-pools.txt"
tg compare "$TWO" --baseline-inference-gpus 450 > "$OUT/compare-two-pools-450.txt"
tg frontier instances/seed-week-75.yaml --basis steady_state --out "$OUT/frontier" > "$OUT/frontier-seed.txt"
tg frontier instances/seed-week-75.yaml --basis steady_state --set limits.max_hourly_cost=19000 --out "$OUT/frontier-budget" \
  > "$OUT/frontier-seed-budget.txt"
cp "$OUT/frontier-budget/frontier.png" "$OUT/frontier-seed-budget.png"
tg frontier "$TWO" --basis steady_state --out "$OUT/frontier-two" > "$OUT/frontier-two-pools.txt"
cp "$OUT/frontier-two/frontier.png" "$OUT/frontier-two-pools.png"
tg sweep "$TWO" --set 'inference.shapes[1].tokens_per_gpu_s=100,140,180' --set 'gpu_pools[1].gpus=1024,2048' \
  --out "$OUT/sweep" > "$OUT/sweep-two-pools.txt"
cp "$OUT/sweep/sweep-inference-shapes-1-tokens-per-gpu-s.png" "$OUT/sweep-two-pools.png"
rm -rf "$OUT/frontier" "$OUT/frontier-budget" "$OUT/frontier-two" "$OUT/sweep"
# Paths of the scratch folders removed above read the same on every machine.
sed -i 's#docs/levers/\(frontier\|frontier-budget\|frontier-two\|sweep\)/#out/#g' "$OUT"/*.txt
"$PYTHON" bench/levers.py > "$OUT/bench.txt"
# Each fenced block after a "<!-- output: PATH -->" line of docs/levers.md gets PATH's contents.
"$PYTHON" - <<'PY'
import re
from pathlib import Path

doc = Path("docs/levers.md")
pattern = re.compile(r"(<!-- output: (\S+) -->\n```[a-z]*\n)(.*?)(```)", re.S)
doc.write_text(pattern.sub(lambda m: m.group(1) + Path(m.group(2)).read_text() + m.group(4), doc.read_text()))
PY
