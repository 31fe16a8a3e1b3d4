#!/usr/bin/env bash
# Regenerate every command output the docs show, then put them into the markdown (docs/tools/fill.py).
#
#   docs/regenerate.sh [FRAGMENT ...]     e.g. docs/regenerate.sh readme commands   (default: every fragment)
#
# Each docs/regenerate.d/<topic>.sh runs with bash from the repository root and writes the outputs its doc
# quotes (with `show OUT COMMAND`, docs/tools/show.sh, or on its own) into docs/<topic>/; the markdown
# quotes them with <!-- output: PATH --> markers. Run it from the installed venv (PYTHON defaults to
# `python`); performance.sh runs the bench scripts only with BENCH=1 (they take many minutes).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-$(command -v python)}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
ln -s "$ROOT/instances" "$SCRATCH/instances"
ln -s "$ROOT/tests" "$SCRATCH/tests"
export ROOT PYTHON SCRATCH
export COLUMNS=100 TERM=dumb NO_COLOR=1 PYTHONHASHSEED=0
# shellcheck source=docs/tools/show.sh
. "$ROOT/docs/tools/show.sh"
export -f show also _run_shown

if [ "$#" -gt 0 ]; then
    fragments=()
    for name in "$@"; do fragments+=("$ROOT/docs/regenerate.d/$name.sh"); done
else
    fragments=("$ROOT"/docs/regenerate.d/*.sh)
fi
cd "$ROOT"
for fragment in "${fragments[@]}"; do
    echo "== $(basename "$fragment")" >&2
    bash "$fragment"
done
"$PYTHON" "$ROOT/docs/tools/fill.py"
