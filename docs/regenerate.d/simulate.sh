# docs/simulate.md: the seed baseline's cheapest plan replayed trajectory by trajectory (MODEL.md §10), with
# and without start-up counted (§8); solve's verdict lines; the trace's columns; plots; and, with BENCH=1,
# what a replication costs (bench/simulate.py, minutes).
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`); run alone, it sets them itself:
#   PYTHON=.venv/bin/python bash docs/regenerate.d/simulate.sh
if ! declare -F show > /dev/null; then
    ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    PYTHON="${PYTHON:-python}"
    SCRATCH="$(mktemp -d)"
    trap 'rm -rf "$SCRATCH"' EXIT
    ln -s "$ROOT/instances" "$SCRATCH/instances"
    ln -s "$ROOT/tests" "$SCRATCH/tests"
    export ROOT PYTHON SCRATCH COLUMNS=100 TERM=dumb NO_COLOR=1 PYTHONHASHSEED=0
    if [ -f "$ROOT/docs/tools/show.sh" ]; then
        # shellcheck source=docs/tools/show.sh
        . "$ROOT/docs/tools/show.sh"
    else
        trainground() { "$PYTHON" "$ROOT/cli.py" "$@"; }
        export -f trainground
        show() {
            local out="$ROOT/$1" code=0
            shift
            mkdir -p "$(dirname "$out")"
            { printf '$ %s\n' "$*"; (cd "$SCRATCH" && eval "$*") 2>&1 || code=$?
              if [ "$code" -ne 0 ]; then printf '$ echo $?\n%s\n' "$code"; fi; } | sed 's/[[:space:]]*$//' > "$out"
        }
    fi
fi
ln -sfn "$ROOT/bench" "$SCRATCH/bench"

show docs/simulate/seed.txt trainground simulate instances/seed-week-75.yaml --basis steady_state --replications 5 --workers 2 --out out/simulate
for plot in inflight iterations version-gaps; do
    cp "$SCRATCH/out/simulate/simulate-$plot.png" "$ROOT/docs/simulate/seed-$plot.png"
done
show docs/simulate/seed-startup.txt trainground simulate instances/seed-week-75.yaml --basis steady_state --set schedule.count_startup=true --replications 5 --workers 2
show docs/simulate/seed-hold.txt trainground simulate instances/seed-week-75.yaml --replications 5 --workers 2 --seed 100
show docs/simulate/solve.txt "trainground solve instances/seed-week-75.yaml --basis steady_state --simulate | sed -n '/^start-up/,\$p'"
show docs/simulate/solve-startup.txt "trainground solve instances/seed-week-75.yaml --basis steady_state --set schedule.count_startup=true --simulate 3 | sed -n '/^start-up/,\$p'"
show docs/simulate/trace.txt "trainground simulate instances/seed-week-75.yaml --basis steady_state --iterations 2 --trace out/trace > /dev/null && head -n 4 out/trace/trajectories.csv && echo && cat out/trace/iterations.csv"
show docs/simulate/frontier.txt "trainground frontier instances/seed-week-75.yaml --basis steady_state --set schedule.count_startup=true --simulate --out out/frontier | head -n 18"
if [ "${BENCH:-0}" = 1 ]; then
    show docs/simulate/bench.txt "\"\$PYTHON\" bench/simulate.py --repeats 3"
fi
