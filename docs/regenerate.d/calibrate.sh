#!/bin/sh
# Regenerates the outputs quoted in docs/calibrate.md (run from the repository root):
#   sh docs/regenerate.d/calibrate.sh
# The bundled logs come from `simulate instances/seed-week-75.yaml --iterations 8
# --set workload.batch_trajectories=256 --trace ...` (columns trimmed, times rounded to 0.1 s);
# instances/logs/verl-metrics.jsonl is a synthetic file in the shape verl's file logger writes.
set -e
PY=${PYTHON:-python}
OUT=docs/calibrate
mkdir -p "$OUT"
export COLUMNS=110
$PY cli.py calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/seed-small-steps.csv --into instances/seed-week-75.yaml \
    -o "$OUT/seed-small-calibrated.yaml" --out "$OUT" > "$OUT/report.txt"
$PY cli.py calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/seed-small-steps.csv --into instances/seed-week-200.yaml --json \
    | $PY -c "import json, sys; print(json.load(sys.stdin)['bottleneck'])" > "$OUT/bottleneck-200.txt"
$PY cli.py calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/verl-metrics.jsonl --json \
    | $PY -c "import json, sys; d = json.load(sys.stdin); print(json.dumps({k: d[k] for k in ('update_time', 'cadence', 'bottleneck', 'notes')}, indent=2))" \
    > "$OUT/verl.txt"
$PY cli.py solve "$OUT/seed-small-calibrated.yaml" > "$OUT/solve.txt"
printf 'start,end,output_tokens\n0,100,5\n10,4,5\n' > "$OUT/bad.csv"
$PY cli.py calibrate --trajectories "$OUT/bad.csv" > "$OUT/bad.txt" 2>&1 || echo "exit $?" >> "$OUT/bad.txt"
rm -f "$OUT/bad.csv" "$OUT/calibrate.json"
