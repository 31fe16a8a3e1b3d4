# README.md: the three questions (docs/readme/*.txt).
show docs/readme/solve.txt trainground solve instances/seed-week-75.yaml
show docs/readme/compare.txt "trainground compare instances/seed-week-200.yaml --baseline-inference-gpus 3000 | sed -n '1,12p;28,29p'"
show docs/readme/batch.txt "trainground batch instances/seed-*.yaml --out out/what-if"
also docs/readme/batch.txt "cut -d, -f1,3,6,8,9,11,14 out/what-if/summary.csv | head -n 5"
show docs/readme/simulate.txt "trainground solve instances/seed-week-75.yaml --basis steady_state --no-levers --simulate 4 | sed -n '/^start-up/,\$p'"
also docs/readme/simulate.txt "trainground solve instances/seed-week-75.yaml --no-levers --simulate 4 | sed -n '/^start-up/,\$p'"
show docs/readme/certainty.txt "COLUMNS=175 trainground frontier instances/seed-week-75-uncertain.yaml --confidence-curve 0.8,0.9 --out out/certainty | head -n 7"
show docs/readme/risk.txt "trainground risk instances/seed-week-75-uncertain.yaml --out out/risk | head -n 7"
