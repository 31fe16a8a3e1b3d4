# Sourced by docs/regenerate.sh, which exports these functions to the fragments in docs/regenerate.d/.
# show OUT COMMAND...: run COMMAND (a shell line, in the scratch folder $SCRATCH, whose `instances` and `tests`
# lead to the repository's) and write into OUT (relative to the repository root) the line "$ COMMAND", its
# output (stdout and stderr, trailing blanks cut) and, when it exits non-zero, "$ echo $?" and the code.
# also OUT COMMAND...: the same, appended to OUT.
# `trainground` runs this checkout's cli.py with $PYTHON, named as the installed command is;
# `python` is $PYTHON, importing this checkout.

trainground() { PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -c 'from trainground import cli; cli.main(prog_name="trainground")' "$@"; }
export -f trainground
python() { PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" "$@"; }
export -f python

_run_shown() {
    local code=0
    printf '$ %s\n' "$*"
    (set +o pipefail; cd "$SCRATCH" && eval "$*") 2>&1 || code=$?
    if [ "$code" -ne 0 ]; then printf '$ echo $?\n%s\n' "$code"; fi
}

show() {
    local out="$ROOT/$1"
    shift
    mkdir -p "$(dirname "$out")"
    _run_shown "$@" | sed 's/[[:space:]]*$//' > "$out"
}

also() {
    local out="$ROOT/$1"
    shift
    _run_shown "$@" | sed 's/[[:space:]]*$//' >> "$out"
}
