# docs/stages.md: MODEL.md §12 on the seed week whose responses lengthen (instances/seed-week-stages.yaml): the
# staged plan at one fixed capacity and its stage levers; the same plan on the hold basis (start-up counted, E^hold
# per stage, the allowance from replays that play the stages in order); the plan sized for the average tokens per
# attempt held through the stages and replayed, beside the fixed and replan staged plans; compare's fixed-vs-replan
# line; a staged replay's stages; explain --stage.
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`).
set -eu
show docs/stages/fixed.txt "trainground solve instances/seed-week-stages.yaml | sed -n '1,/^cadence above/p'"
show docs/stages/levers.txt "trainground solve instances/seed-week-stages.yaml | sed -n '/^Stage levers/,/^start-up/p'"
show docs/stages/hold.txt "trainground solve instances/seed-week-stages.yaml --basis hold | sed -n '/^Stages/,/^\* /p;/^plan holds/,/basis steady_state)/p'"
ln -sfn "$ROOT/docs" "$SCRATCH/docs"
show docs/stages/compare.txt "python docs/tools/stages_compare.py instances/seed-week-stages.yaml instances/seed-week-75.yaml"
show docs/stages/compare-command.txt "trainground compare instances/seed-week-stages.yaml --switch-time 30m | grep -A1 '^re-planning'"
show docs/stages/simulate.txt "trainground simulate instances/seed-week-stages.yaml --seed 1 | sed -n '1,3p;/^Stages/,/^late/p'"
show docs/stages/explain.txt "trainground explain instances/seed-week-stages.yaml --stage late | sed -n '1,9p'"
