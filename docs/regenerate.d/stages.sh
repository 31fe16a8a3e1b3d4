# docs/stages.md: MODEL.md §12 on the seed week whose responses lengthen (instances/seed-week-stages.yaml): the
# staged plan under one fixed capacity, and a comparison of the plan sized for the average tokens per attempt,
# the fixed staged plan and the replan staged plan (30 min per switch), costs side by side.
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`).
set -eu
show docs/stages/fixed.txt "trainground solve instances/seed-week-stages.yaml | sed -n '1,/^cadence above/p'"
ln -sfn "$ROOT/docs" "$SCRATCH/docs"
show docs/stages/compare.txt "python docs/tools/stages_compare.py instances/seed-week-stages.yaml instances/seed-week-75.yaml"
