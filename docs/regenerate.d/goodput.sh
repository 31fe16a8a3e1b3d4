# docs/goodput.md: MODEL.md §13 on the seed: explain's goodput terms at the check figure, the spot
# instance's plan, the same run on demand only, a sweep over the spot pool's preemption rate, and simulate's
# injection of the failures (the seed week with the check figure's section, the spot instance).
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`).
set -eu
show docs/goodput/explain.txt "trainground explain instances/seed-week-75.yaml --cadence 601 --set reliability.gpu_mtbf=50000h | sed -n '/^Goodput/,\$p'"
show docs/goodput/spot.txt "trainground solve instances/seed-week-spot.yaml --basis steady_state | sed -n '1,12p;/^goodput/,/^weight sync/p'"
show docs/goodput/on-demand.txt "trainground solve instances/seed-week-spot.yaml --basis steady_state --set 'gpu_pools[1].gpus=1' | sed -n '1,11p'"
show docs/goodput/failure-free.txt "trainground solve instances/seed-week-75.yaml --basis steady_state | sed -n '1p'"
show docs/goodput/sweep.txt "trainground sweep instances/seed-week-spot.yaml --basis steady_state --set 'gpu_pools[1].preemptions_per_hour=0,0.25,0.5,1,1.5,2,3' --out out/goodput-sweep | cut -c1-134 | sed 's#out/goodput-sweep/#out/#g'"
cp "$SCRATCH/out/goodput-sweep/sweep-gpu-pools-1-preemptions-per-hour.png" "$ROOT/docs/goodput-preemption-sweep.png"
show docs/goodput/no-progress.txt "trainground solve instances/seed-week-75.yaml --basis steady_state --set reliability.gpu_mtbf=500h | sed -n '1,6p'"
show docs/goodput/levers.txt "trainground solve instances/seed-week-spot.yaml --basis steady_state | grep -E '^  (restart|checkpoint) time'"
show docs/goodput/simulate.txt "COLUMNS=400 trainground simulate instances/seed-week-spot.yaml --basis steady_state --replications 20 --seed 1000 --workers 2 | grep -E '^(simulated|model: |failures|trainer|replicas|weight sync)'"
show docs/goodput/simulate-training.txt "COLUMNS=400 trainground simulate instances/seed-week-75.yaml --basis steady_state --set reliability.gpu_mtbf=50000h --replications 20 --seed 1000 --workers 2 | grep -E '^(simulated|model: |failures|trainer)'"
