#!/bin/sh
# Regenerates every output quoted in docs/risk.md: run from the repository root.
# TRAINGROUND names the command (default: trainground; e.g. TRAINGROUND="python cli.py").
set -e
TG=${TRAINGROUND:-trainground}
mkdir -p docs/risk
$TG risk instances/seed-week-75-uncertain.yaml --basis steady_state --out docs/risk > docs/risk/risk.txt
$TG risk instances/seed-week-75.yaml --basis steady_state \
  --set 'uncertainty={factors: [{name: throughput, paths: ["inference.shapes[*].tokens_per_gpu_s"], dist: normal, mean: 1.0, sd: 0.05}]}' \
  > docs/risk/knife-edge.txt
$TG risk instances/seed-week-75-uncertain.yaml --basis steady_state --simulate 3 > docs/risk/simulate.txt
$TG risk instances/seed-week-75-uncertain.yaml --basis steady_state --json > docs/risk/risk.json
