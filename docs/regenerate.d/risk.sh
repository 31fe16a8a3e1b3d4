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
$TG risk instances/seed-week-spot.yaml --basis steady_state \
  --set 'uncertainty={factors: [{name: mtbf, paths: ["reliability.gpu_mtbf"], dist: lognormal, median: 1.0, sigma: 0.5}, {name: preemptions, paths: ["gpu_pools[*].preemptions_per_hour"], dist: uniform, low: 0.5, high: 1.5}, {name: sync, paths: ["reliability.weight_sync_time"], dist: uniform, low: 0.5, high: 1.5}]}' \
  > docs/risk/failures.txt
$TG risk instances/seed-week-75-uncertain.yaml --set regime.rollout_timeout=1h --set regime.truncated=filter \
  > docs/risk/drop.txt
$TG risk instances/regimes/seed-week-admission-8-timeout.yaml \
  --set 'uncertainty={factors: [{name: throughput, paths: ["inference.shapes[*].tokens_per_gpu_s"], dist: normal, mean: 1.0, sd: 0.05}, {name: lifetimes, paths: ["environment.occupancy.median", "environment.occupancy.p99"], dist: lognormal, median: 1.0, sigma: 0.1}, {name: updates, paths: ["training.update_time.reference_time"], dist: uniform, low: 0.95, high: 1.3}]}' \
  > docs/risk/admission.txt
