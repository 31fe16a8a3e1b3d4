# docs/first-hour.md: the outputs it quotes, written to docs/first-hour/ (run from the repository root).
set -eu
root=$(pwd)
tg() { "${PYTHON:-python}" "$root/cli.py" "$@"; }
mkdir -p docs/first-hour
cd docs/first-hour  # so that the outputs name my-run.yaml, as a reader's would
rm -f my-run.yaml ./*.txt

# 1. a starter file: two GPU pools, two sandbox backends
tg init --pools 2 --backends container,microvm -o "my-run.yaml" 2> "init.txt"
sed -n '1,40p' "my-run.yaml" > "init-head.txt"
cp "my-run.yaml" "starter.yaml"

# 2. the planner's own numbers, edited in place (comments kept)
"${PYTHON:-python}" - "my-run.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
for old, new in [
    ("name: my-run", "name: h100-h200-10d"),
    ("  iterations: 1000", "  iterations: 2000"),
    ("  batch_trajectories: 4096", "  batch_trajectories: 2048"),
    ("  deadline: 7d", "  deadline: 10d"),
    ("    name: pool1\n", "    name: h100\n"), ("    gpus: 10000", "    gpus: 4096"),
    ("    name: pool2\n    gpus: 10000\n    gpu_hour_cost: 2.5", "    name: h200\n    gpus: 2048\n    gpu_hour_cost: 3.0"),
    ("      name: tp8-pool1\n", "      name: tp8-h100\n"), ("      pool: pool1", "      pool: h100"),
    ("      tokens_per_gpu_s: 75.0", "      tokens_per_gpu_s: 60"),
    ("      name: tp8-pool2\n      pool: pool2", "      name: tp8-h200\n      pool: h200"),
    ("      tokens_per_gpu_s: 93.75", "      tokens_per_gpu_s: 110"),
    ("  pool: pool1", "  pool: h100"),
    ("    reference_gpus: 7000", "    reference_gpus: 1024"), ("    reference_time: 300s", "    reference_time: 120s"),
    ("      name: microvm\n      share: 0.5\n      cores: 0.05\n      memory_gb: 0.5",
     "      name: microvm\n      share: 0.5\n      cores: 0.25\n      memory_gb: 2.0"),
    ("density: {container: 1048, microvm: 1048}", "density: {container: 1048, microvm: 524}"),
]:
    assert text.count(old) >= 1, old
    text = text.replace(old, new, 1)
open(path, "w").write(text)
PY
diff -U0 "starter.yaml" "my-run.yaml" | grep -v '^@@' | tail -n +3 > "edits.txt" || true
rm "starter.yaml"

# 3. solve it; then the lever the freshness line points at
tg solve "my-run.yaml" > "solve.txt" || echo "exit $?" >> "solve.txt"
tg solve "my-run.yaml" --set freshness.max_versions_kept=16 | sed -n '1p;/exceedance/p' > "k16.txt"

# 4. no plan: what the diagnosis says
{ tg solve "my-run.yaml" --set schedule.deadline=8d 2>&1 || echo "exit $?"; } > "deadline-8d.txt"

# 5. a bare number is seconds: the warning, and the diagnosis that repeats it
{ tg solve "my-run.yaml" --set schedule.deadline=10 2>&1 || echo "exit $?"; } | grep -E '^(my-run|h100|exit)|read as' > "deadline-10.txt"

# 6. quote every output in docs/first-hour.md (the code block under each <!-- output: PATH --> marker)
cd "$root"
"${PYTHON:-python}" - docs/first-hour.md <<'PY'
import re, sys
from pathlib import Path
doc = Path(sys.argv[1])
marker = re.compile(r"(<!-- output: (\S+) -->\n```\n)(.*?)(```\n)", re.S)
doc.write_text(marker.sub(lambda m: m[1] + Path(m[2]).read_text() + m[4], doc.read_text()))
PY
