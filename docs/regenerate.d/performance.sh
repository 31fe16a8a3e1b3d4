# docs/performance.md: the bench scripts' own output (docs/performance/*.txt). They take minutes and want a
# quiet machine, so they run only when BENCH names them: BENCH=1 (or all) runs every one, BENCH="command
# diagnose" only those; otherwise the committed outputs stay as they are.
wanted() { case " ${BENCH:-0} " in *" 1 "* | *" all "* | *" $1 "*) return 0 ;; *) return 1 ;; esac; }
ln -sfn "$ROOT/bench" "$SCRATCH/bench"
if wanted command; then
    show docs/performance/command.txt python bench/solve.py --repeats 5 --sections command --instructions
fi
if wanted diagnose; then
    show docs/performance/diagnose.txt python bench/diagnose.py --repeats 3
fi
if wanted whatif; then
    show docs/performance/whatif.txt python bench/whatif.py --measure 3 --time-limit 30
fi
if wanted instances; then
    show docs/performance/instances.txt python bench/solve.py --repeats 3 --sections instances --skip-enumeration
fi
if wanted enumeration; then
    show docs/performance/enumeration.txt python bench/solve.py --repeats 3 --sections instances \
        --only seed-week-75 two-backends-cloud large-three-pools
fi
if wanted hold; then
    show docs/performance/hold.txt python bench/hold.py --repeats 3 --replications 20 --seed 1000
fi
if wanted simulate; then
    show docs/performance/simulate.txt python bench/simulate.py --repeats 3 --iterations 1000 --replications 16
fi
if wanted stages; then
    show docs/performance/stages.txt python bench/stages.py --repeats 3 --hold --replan 1,2
fi
if wanted scaling; then
    show docs/performance/scaling.txt python bench/scaling.py --repeats 3
fi
if wanted finegrid; then
    show docs/performance/finegrid.txt python bench/hold.py --sections finegrid --repeats 3
fi
if wanted hostile; then
    show docs/performance/hostile.txt python bench/hostile.py
fi
if wanted mutations; then
    show docs/performance/mutations.txt python bench/mutations.py --per-cell 3
fi
