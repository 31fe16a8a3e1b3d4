# docs/model.md §14 and docs/regimes.md: explain's Regime section on the bundled regime instances (the colocated
# seed week, the seed week under admission at k = 8); the refusals of what is not planned yet; the seed week as
# async drop with in-flight updates, re-prefills and a timeout; a pipelined run planned (the seed week's figures
# in 60 days), the colocated seed week in 60 days solved on the hold basis and replayed by simulate, the seed week
# under admission at k = 8 with a one-hour timeout solved on the hold basis and replayed, the seed week with a
# filtered one-hour timeout solved on the hold basis and replayed, one without a plan and
# its diagnosis; the `regimes` comparison on the seed week, on the 60-day pipelined run and on AReaL's 1.5B run;
# `regimes --help` (docs/commands.md) and trainground.regimes (docs/api.md).
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`).
set -eu
show docs/regimes/explain-colocated.txt "trainground explain instances/regimes/seed-week-colocated.yaml | sed -n '/^Regime/,\$p'"
show docs/regimes/explain-admission.txt "trainground explain instances/regimes/seed-week-admission-8.yaml --cadence 700 | sed -n '/^Regime/,\$p'"
show docs/regimes/refused.txt "trainground solve instances/seed-week-75.yaml --set regime.in_flight_updates=true --set reliability.gpu_mtbf=50000h"
show docs/regimes/refused-hold.txt "trainground solve instances/regimes/seed-week-pipelined-1.yaml"
show docs/regimes/solve-drop.txt "trainground solve instances/seed-week-75.yaml --basis steady_state --set regime.in_flight_updates=true --set regime.recompute=prefix --set regime.rollout_timeout=1h --no-levers"
show docs/regimes/solve-pipelined.txt "trainground solve instances/regimes/seed-pipelined-60d.yaml --no-levers"
show docs/regimes/solve-pipelined-json.txt "trainground solve instances/regimes/seed-pipelined-60d.yaml --no-levers --json | python -c 'import json, sys; d = json.load(sys.stdin); m = d[\"metrics\"]; print(json.dumps({\"regime\": d[\"regime\"], \"metrics\": {k: m[k] for k in (\"generation_phase_s\", \"slowest_attempt_s\", \"generation_busy_share\", \"launch_peak\", \"consumed_mean_gap\", \"consumed_p99_gap\", \"token_demand_per_s\", \"update_time_s\")}}, indent=1))'"
show docs/regimes/solve-colocated.txt "trainground solve instances/regimes/seed-week-colocated.yaml --set schedule.deadline=60d --set schedule.cadence.step=10s --no-levers"
show docs/regimes/simulate-colocated.txt "trainground simulate instances/regimes/seed-week-colocated.yaml --set schedule.deadline=60d --set schedule.cadence.step=10s --replications 5 --iterations 200 --seed 1"
show docs/regimes/solve-admission.txt "trainground solve instances/regimes/seed-week-admission-8-timeout.yaml --no-levers --out admission-plan.json"
show docs/regimes/simulate-admission.txt "trainground simulate instances/regimes/seed-week-admission-8-timeout.yaml --plan admission-plan.json --replications 3"
show docs/regimes/solve-timeout-filter.txt "trainground solve instances/regimes/seed-week-timeout-filter.yaml --no-levers --out timeout-plan.json"
show docs/regimes/simulate-timeout-filter.txt "trainground simulate instances/regimes/seed-week-timeout-filter.yaml --plan timeout-plan.json --replications 3"
show docs/regimes/diagnosis.txt "trainground solve instances/regimes/seed-week-pipelined-1.yaml --basis steady_state"
show docs/regimes/regimes-seed-week.txt "trainground regimes instances/seed-week-75.yaml"
show docs/regimes/regimes-60d.txt "trainground regimes instances/regimes/seed-pipelined-60d.yaml"
show docs/regimes/regimes-areal.txt "trainground regimes instances/regimes/areal-1.5b-128gpus.yaml"
show docs/regimes/help.txt "trainground regimes --help"
show docs/regimes/api.txt "python - <<'PY'
import trainground

found = trainground.regimes(
    'instances/regimes/areal-1.5b-128gpus.yaml',
    ['colocated', 'pipelined-0', 'pipelined-1', 'drop-inflight'],
)
for row in found.rows:
    plan = row.result.plan
    print(f'{row.label:29} {plan.cadence_s:6g} s  {plan.makespan_s / 3600:5.1f} h  {plan.inference_gpus:3} + {plan.training_gpus:3} GPUs')
print('best:', found.rows[found.best].label, '| keys of to_json():', sorted(found.to_json()))
PY"
