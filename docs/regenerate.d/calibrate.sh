# Regenerates the outputs quoted in docs/calibrate.md; run by docs/regenerate.sh (docs/regenerate.sh calibrate).
# The bundled logs come from `simulate instances/seed-week-75.yaml --iterations 8
# --set workload.batch_trajectories=256 --trace ...` (columns trimmed, times rounded to 0.1 s);
# instances/logs/verl-metrics.jsonl is a synthetic file in the shape verl's file logger writes; the files of
# tests/data/frameworks/ are ours too, in the shapes verl, slime and AReaL write (their README). The two-pool
# logs are drawn from known parameters by bench/calibrate.py (tests/calibrate_logs.py) into the scratch folder.
set -e
OUT=docs/calibrate
mkdir -p "$OUT"
ln -sfn "$ROOT/bench" "$SCRATCH/bench"
ln -sfn "$ROOT/docs" "$SCRATCH/docs"
show $OUT/report.txt trainground calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/seed-small-steps.csv --into instances/seed-week-75.yaml \
    -o docs/calibrate/seed-small-calibrated.yaml --out docs/calibrate
show $OUT/bottleneck-200.txt "trainground calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/seed-small-steps.csv --into instances/seed-week-200.yaml --json \
    | python -c \"import json, sys; d = json.load(sys.stdin); print(d['bottleneck']); print(*[n for n in d['notes'] if 'against' in n])\""
show $OUT/verl.txt "trainground calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/verl-metrics.jsonl --json \
    | python -c \"import json, sys; d = json.load(sys.stdin); print(json.dumps({k: d[k] for k in ('update_time', 'cadence', 'bottleneck', 'notes')}, indent=2))\""
show $OUT/frameworks-console.txt trainground calibrate --steps tests/data/frameworks/verl-console.log --inference-gpus 8
show $OUT/regime.txt "trainground calibrate --steps tests/data/frameworks/verl-colocated-console.log --into instances/seed-week-75.yaml \
    -o regime.yaml --json | python -c \"import json, sys; print(*[n for n in json.load(sys.stdin)['notes'] if n.startswith(('regime', 'schedule'))], sep='\\n')\""
also $OUT/regime.txt "grep -E '^regime:|^  (mode|switch_time|extra_time):' regime.yaml"
also $OUT/regime.txt trainground calibrate --steps tests/data/frameworks/verl-colocated-console.log --regime pipelined-2
show $OUT/regime-async.txt "trainground calibrate --steps tests/data/frameworks/verl-one-step-off.log --training-gpus 12 \
    --inference-gpus 4 --json | python -c \"import json, sys; d = json.load(sys.stdin); print(*[n for n in d['notes'] if n.startswith(('regime', 'timing_s/reward'))], d['step_log']['generation_tokens_per_gpu_s']['note'], sep='\\n')\""
also $OUT/regime-async.txt "trainground calibrate --steps tests/data/frameworks/verl-fully-async.jsonl --training-gpus 8 \
    --inference-gpus 8 --json | python -c \"import json, sys; d = json.load(sys.stdin); print(*[n for n in d['notes'] if n.startswith('regime')], d['step_log']['generation_tokens_per_gpu_s']['note'], sep='\\n')\""
show $OUT/frameworks-format.txt trainground calibrate --steps tests/data/frameworks/verl-console.log --format areal
also $OUT/frameworks-format.txt "printf 'Loading checkpoint shards: 100%%\\nnothing else\\n' > run.log && trainground calibrate --steps run.log"
show $OUT/frameworks-holdout.txt "trainground calibrate --steps tests/data/frameworks/verl-v05-file-logger.jsonl --holdout --json \
    | python -c \"import json, sys; d = json.load(sys.stdin); print(*[n for n in d['notes'] if 'inside' in n or n.startswith('hold-out')], sep='\\n')\""
show $OUT/roundtrip.txt "trainground calibrate --steps tests/data/frameworks/verl-v05-file-logger.jsonl --holdout \
    --into tests/data/frameworks/run-8gpus.yaml -o half.yaml --plan plan.json --json \
    | python -c \"import json, sys; print(*[n for n in json.load(sys.stdin)['notes'] if n.startswith(('round trip', 'logged run', 'workload.'))], sep='\\n')\""
also $OUT/roundtrip.txt "grep -E '^ *(batch_trajectories|tokens_per_attempt|tokens_per_gpu_s|reference_time|samples|switch_time):' half.yaml"
also $OUT/roundtrip.txt trainground simulate half.yaml --plan plan.json
show $OUT/roundtrip-slime.txt "trainground calibrate --steps tests/data/frameworks/slime-console.log --regime colocated \
    --training-gpus 8 --holdout --into tests/data/frameworks/run-8gpus.yaml -o slime-half.yaml --plan slime-plan.json \
    --json | python -c \"import json, sys; print(*[n for n in json.load(sys.stdin)['notes'] if n.startswith(('round trip', 'logged run'))], sep='\\n')\""
show $OUT/solve.txt trainground solve docs/calibrate/seed-small-calibrated.yaml
show $OUT/bad.txt "printf 'start,end,output_tokens\n0,100,5\n10,4,5\n' > bad.csv && trainground calibrate --trajectories bad.csv"
show $OUT/hostile.txt "printf 'start,end,output_tokens\n0,100,5\n1,101,\377\n' > latin1.csv && trainground calibrate --trajectories latin1.csv"
also $OUT/hostile.txt "printf 'start,end,output_tokens,end\n0,100,5,100\n' > twice.csv && trainground calibrate --trajectories twice.csv"
also $OUT/hostile.txt "python -c \"print('{\\\"start\\\": ' + '[' * 100000 + ']' * 100000 + '}')\" > deep.jsonl && trainground calibrate --trajectories deep.jsonl"
also $OUT/hostile.txt "python -c \"print('start,end,output_tokens'); [print(f'{i},{i},5') for i in range(20)]\" > zero.csv && trainground calibrate --trajectories zero.csv"
also $OUT/hostile.txt "printf 'iteration,update_ms,training_gpus\n0,300000,64\n1,301000,64\n' > ms.csv && trainground calibrate --trajectories bad.csv --max-bad-rows 0.5 --steps ms.csv --columns update_s=update_ms"
(cd "$SCRATCH" && python bench/calibrate.py fixtures two-pools)
show $OUT/two-pools.txt trainground calibrate --trajectories two-pools/trajectories.csv \
    --inference-gpus h100=128,a100=128 --timeout 5495.6 --into instances/logs/two-pools.yaml \
    -o two-pools/calibrated.yaml
show $OUT/two-pools-instance.txt "grep -E 'tokens_per_gpu_s|name: throughput|sd:|median:|p99:' two-pools/calibrated.yaml"
show $OUT/two-pools-pooled.txt "trainground calibrate --trajectories two-pools/trajectories.csv --inference-gpus 256 --into instances/logs/two-pools.yaml -o two-pools/pooled.yaml --json | python -c \"import json, sys; print(*[n for n in json.load(sys.stdin)['notes'] if 'not written' in n])\""
show $OUT/truth.txt python bench/calibrate.py truth two-pools
rm -f "$OUT/calibrate.json"
show $OUT/frameworks.txt "trainground calibrate --trajectories two-pools/trajectories.csv --steps two-pools/verl.jsonl --regime pipelined-0 --json \
    | python -c \"import json, sys; d = json.load(sys.stdin); print(*d['notes'][1:], sep='\n'); print(json.dumps(d['update_time']['points']))\""
show $OUT/agentloop.txt "trainground calibrate --steps two-pools/verl.jsonl --columns training_gpus=trainer/gpus \
    --into instances/logs/two-pools.yaml -o two-pools/agentloop.yaml --json \
    | python -c \"import json, sys; print(*[n for n in json.load(sys.stdin)['notes'] if 'agent loop' in n], sep='\\n')\""
also $OUT/agentloop.txt "grep -E 'agent_loop' two-pools/agentloop.yaml"
also $OUT/agentloop.txt "trainground calibrate --trajectories two-pools/trajectories.csv --timeout 5495.6 --json \
    | python -c \"import json, sys; o = json.load(sys.stdin)['occupancy']; [print(k, o[k]['rows'], 'rows:', round(o[k]['value']), [round(x) for x in o[k]['interval']]) for k in ('median', 'p99')]\""
show $OUT/replay-calibrate.txt "trainground calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/seed-small-steps.csv --into instances/logs/seed-small-run.yaml \
    -o docs/calibrate/seed-small-run-calibrated.yaml --plan docs/calibrate/seed-small-run-plan.json | tail -3"
show $OUT/replay.txt trainground simulate docs/calibrate/seed-small-run-calibrated.yaml \
    --plan docs/calibrate/seed-small-run-plan.json --replications 8
show $OUT/replay-check.txt "trainground calibrate --trajectories instances/logs/seed-small-trajectories.csv \
    --steps instances/logs/seed-small-steps.csv --json > logged.json && trainground simulate \
    docs/calibrate/seed-small-run-calibrated.yaml --plan docs/calibrate/seed-small-run-plan.json --replications 8 \
    --json > replay.json && python -c \"import json; c = json.load(open('logged.json'))['cadence']['achieved_s']; \
s = json.load(open('replay.json'))['simulated']['iteration_mean_s']; lo, hi = c['interval']; \
print(f'logged iteration time {c[\\\"value\\\"]:.1f} s (90 % interval {lo:.1f}-{hi:.1f} s); replay of the logged plan {s:.1f} s: ' + ('inside' if lo <= s <= hi else 'OUTSIDE'))\""
if [ -n "${BENCH:-}" ]; then  # minutes and a quiet machine: only with BENCH set (the committed output stays)
    show $OUT/speed.txt "cat /proc/loadavg; python bench/calibrate.py timing --repeats 3; cat /proc/loadavg"
fi
