#!/bin/sh
# Regenerates the outputs quoted in docs/confidence.md (run from the repository root); the bench
# (bench/confidence.py, minutes) only with BENCH=1.
set -e
OUT=docs/confidence
mkdir -p "$OUT"
I=instances/seed-week-75-uncertain.yaml
# run OUT ARGS...: the output of `trainground ARGS` (any exit code) into OUT, after its own command line
run() {
    out="$1"; shift
    echo "\$ trainground $*" > "$out"
    COLUMNS=110 "${PYTHON:-python}" cli.py "$@" >> "$out" 2>&1 || true
}
run "$OUT/solve-0.9.txt" solve "$I" --basis steady_state --confidence 0.9
run "$OUT/solve-bundled.txt" solve "$I" --basis steady_state --confidence 0.9 --set "uncertainty.factors[1].sigma=0.2"
run "$OUT/curve.txt" frontier "$I" --basis steady_state --confidence-curve 0.5,0.8,0.9,0.95,0.99 --out "$OUT/curve"
cp "$OUT/curve/certainty.png" docs/confidence-price-of-certainty.png
if [ "${BENCH:-0}" = 1 ]; then
    "${PYTHON:-python}" bench/confidence.py --repeat 3 > "$OUT/bench.txt"
fi
