# docs/confidence.md: confidence solves on the bundled uncertain seed (the default hold basis, then steady_state),
# the case with no plan, MODEL §13's failures with the GPU MTBF uncertain, a plan replayed in 20 fresh
# scenarios, and the price of certainty; the bench (bench/confidence.py, many minutes) only with BENCH=1.
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`).
set -eu
I=instances/seed-week-75-uncertain.yaml
FACTORS='[{name: throughput, paths: ["inference.shapes[*].tokens_per_gpu_s"], dist: normal, mean: 1.0, sd: 0.05}, {name: updates, paths: [training.update_time.reference_time], dist: uniform, low: 0.95, high: 1.3}, {name: mtbf, paths: [reliability.gpu_mtbf], dist: lognormal, median: 1.0, sigma: 0.3}]'
show docs/confidence/solve-0.9.txt "trainground solve $I --confidence 0.9"
show docs/confidence/solve-0.9-steady.txt "trainground solve $I --confidence 0.9 --basis steady_state | sed -n '1,2p;/^confidence/,/short of a need/p'"
show docs/confidence/solve-bundled.txt "trainground solve $I --confidence 0.9 --set 'uncertainty.factors[1].sigma=0.2'"
show docs/confidence/failures.txt "trainground solve $I --confidence 0.9 --set schedule.deadline=8d --set reliability.gpu_mtbf=50000h --set 'uncertainty.factors=$FACTORS' | sed -n '1,2p;/^goodput/,/^ /p;/^plan holds/,/short of a need/p'"
show docs/confidence/replay.txt "trainground solve $I --confidence 0.9 --out out/plan-0.9.json > /dev/null; trainground simulate $I --plan out/plan-0.9.json --scenarios --replications 20 --seed 1000 --workers 2 | sed -n '1,5p'"
show docs/confidence/curve.txt "COLUMNS=175 trainground frontier $I --confidence-curve 0.5,0.8,0.9,0.95 --out out/curve | sed 's#out/curve/##g'"
also docs/confidence/curve.txt "COLUMNS=140 trainground frontier $I --basis steady_state --confidence-curve 0.5,0.8,0.9,0.95,0.99 --out out/curve-steady | sed -n '1,/^99/p'"
cp "$SCRATCH/out/curve/certainty.png" "$ROOT/docs/confidence-price-of-certainty.png"
if [ "${BENCH:-0}" = 1 ]; then
    python bench/confidence.py --repeat 1 --skip-growth > docs/confidence/bench.txt  # one run each: ~5 minutes
fi
