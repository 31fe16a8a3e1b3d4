# docs/api.md: a notebook. Each ```python block of the page runs in turn in one Python session (from the
# scratch folder, where `instances` leads to the repository's); what a block prints is docs/api/cell-N.txt,
# which the page quotes under the block.
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" - "$ROOT/docs/api.md" "$ROOT/docs/api" "$SCRATCH" <<'PY'
import contextlib, io, os, re, sys
from pathlib import Path

page, folder, scratch = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
cells = re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), flags=re.S | re.M)
folder.mkdir(parents=True, exist_ok=True)
os.chdir(scratch)
session: dict = {"__name__": "__main__"}
for n, code in enumerate(cells, start=1):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"cell {n}", "exec"), session)
    text = "\n".join(line.rstrip() for line in printed.getvalue().rstrip().splitlines())
    (folder / f"cell-{n}.txt").write_text(text + "\n", encoding="utf-8")
PY
