# docs/model.md §14: explain's Regime section on the bundled regime instances (the colocated seed week, the
# seed week under admission at k = 8) and the refusal a planning command gives a regime it does not plan yet.
# Sourced by docs/regenerate.sh (which sets ROOT, PYTHON, SCRATCH and `show`).
set -eu
show docs/regimes/explain-colocated.txt "trainground explain instances/regimes/seed-week-colocated.yaml | sed -n '/^Regime/,\$p'"
show docs/regimes/explain-admission.txt "trainground explain instances/regimes/seed-week-admission-8.yaml --cadence 700 | sed -n '/^Regime/,\$p'"
show docs/regimes/refused.txt "trainground solve instances/regimes/seed-week-colocated.yaml"
