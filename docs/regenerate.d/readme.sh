# README.md: the three questions (docs/readme/*.txt).
show docs/readme/solve.txt trainground solve instances/seed-week-75.yaml
show docs/readme/compare.txt "trainground compare instances/seed-week-200.yaml --baseline-inference-gpus 3000 | head -n 29"
show docs/readme/batch.txt "trainground batch instances/seed-*.yaml --out out/what-if"
also docs/readme/batch.txt "cut -d, -f1,3,6,8,9,11,14 out/what-if/summary.csv | head -n 8"
