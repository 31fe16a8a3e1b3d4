#!/bin/sh
# Regenerates the outputs quoted in docs/confidence.md (run from the repository root).
set -e
OUT=docs/confidence
mkdir -p "$OUT"
I=instances/seed-week-75-uncertain.yaml
trainground() { python cli.py "$@"; }
COLUMNS=110 trainground solve "$I" --confidence 0.9 > "$OUT/solve-bundled.txt" || true
COLUMNS=110 trainground solve "$I" --confidence 0.9 --set uncertainty.factors[1].sigma=0.1 > "$OUT/solve-0.9.txt" || true
COLUMNS=110 trainground frontier "$I" --set uncertainty.factors[1].sigma=0.1 \
    --confidence-curve 0.5,0.8,0.9,0.95,0.99 --out "$OUT/curve" > "$OUT/curve.txt" || true
cp "$OUT/curve/certainty.png" docs/confidence-price-of-certainty.png
python bench/confidence.py --repeat 3 > "$OUT/bench.txt"
