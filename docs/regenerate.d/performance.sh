# docs/performance.md: bench/solve.py's own output (docs/performance/*.txt). It takes many minutes and wants
# a quiet machine, so it runs only with BENCH=1; otherwise the committed outputs stay as they are.
if [ "${BENCH:-0}" = 1 ]; then
    ln -sfn "$ROOT/bench" "$SCRATCH/bench"
    show docs/performance/command.txt python bench/solve.py --repeats 5 --sections command
    show docs/performance/instances.txt python bench/solve.py --repeats 3 --sections instances --skip-enumeration
    show docs/performance/enumeration.txt python bench/solve.py --repeats 3 --sections instances \
        --only seed-week-75 two-backends-cloud large-three-pools
fi
