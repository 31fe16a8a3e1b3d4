# docs/commands.md: one example per command (docs/commands/*.txt, plots as PNG).
show docs/commands/help.txt trainground --help
show docs/commands/explain.txt trainground explain instances/seed-week-75.yaml --inference-gpus 3000
show docs/commands/solve.txt trainground solve instances/seed-week-75.yaml
show docs/commands/solve-infeasible.txt "trainground solve instances/seed-week-75.yaml --set 'inference.shapes[0].tokens_per_gpu_s=40'"
show docs/commands/solve-json.txt "trainground solve instances/seed-week-75.yaml --json | head -n 24"
show docs/commands/schema.txt "trainground schema > trainground.schema.json; python -c 'import json; print(*json.load(open(\"trainground.schema.json\"))[\"properties\"])'"
show docs/commands/frontier.txt trainground frontier instances/seed-week-75.yaml --out out/frontier
cp "$SCRATCH/out/frontier/frontier.png" "$ROOT/docs/commands/frontier-seed-week-75.png"
show docs/commands/compare-pinned.txt trainground compare instances/seed-week-75.yaml --baseline-inference-gpus 3000 --cadence 500
show docs/commands/sweep-a2.txt "trainground sweep instances/a2-scan.yaml --set 'inference.shapes[0].tokens_per_gpu_s=1000,2000' --set 'environment.node_types[0].density.container=1048,3200' --out out/a2-scan"
cp "$SCRATCH/out/a2-scan/sweep-heatmap.png" "$ROOT/docs/commands/sweep-a2-scan-heatmap.png"
show docs/commands/sweep-weeks.txt "trainground sweep instances/seed-3000-cards.yaml --set schedule.deadline=7d,14d --set 'inference.shapes[0].tokens_per_gpu_s=60,75,200' --out out/week-vs-2week"
cp "$SCRATCH/out/week-vs-2week/sweep-schedule-deadline.png" "$ROOT/docs/commands/sweep-week-vs-2week-deadline.png"
show docs/commands/sweep-zip.txt "trainground sweep tests/data/compare/two-pools.yaml --zip 'gpu_pools[1].gpu_hour_cost=3,3.5,4.5' --zip 'inference.shapes[1].tokens_per_gpu_s=120,140,200' --set 'inference.shapes[*].version_slowdown=0,0.02' --out out/zip"
show docs/commands/batch-invalid.txt "trainground batch instances/seed-week-75.yaml tests/data/invalid/empty.yaml tests/data/invalid/nan.yaml --out out/checks"
show docs/commands/invalid.txt trainground solve tests/data/invalid/nan.yaml
