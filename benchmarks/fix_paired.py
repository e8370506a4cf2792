"""The residual-plus-None fix, by several checkouts in paired rounds: in each round, one child
process per checkout (`PYTHONPATH` at it; the checkouts take turns at going first) lints every
fixture and eval file with a planned residual fix and times, in CPU seconds of that process,
`fix_text(..., unsafe=True)` (the `--fix --unsafe-fixes` loop, per file) and
`attach_fix_edits` (the edits JSON, SARIF and the server's quick fixes show) and the server's
quick fixes (`IncrementalLinter` and `server.fixes.attach_family_fixes` for each fixable
diagnostic, what a code action computes), each the best of `--repeat` passes after a warm one.
`--also DIR` adds the files under DIR with a planned residual fix (generated spellings). Prints each checkout's median and its
ratio to the first checkout taken round by round (a busy moment slows one round alike).

    python benchmarks/fix_paired.py --checkout before=/path/to/main-copy --checkout after=. --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import json, sys, time
from pathlib import Path
from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source
from vjplint.diagnostics import ResidualPlusNone
from vjplint.fixes import apply
from vjplint.syntax.positions import source_lines
from vjplint.lint.incremental import IncrementalLinter
from vjplint.server.fixes import attach_family_fixes

root = Path(sys.argv[1])
repeat = int(sys.argv[2])
cases = []
also = [p for d in sys.argv[3:] for p in Path(d).rglob("*.py")]
for path in sorted([*root.glob("fixtures/**/*.py"), *root.glob("eval/cases/**/*.py")]) + sorted(also):
    text = path.read_text(encoding="utf-8")
    if any(d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone) for d in lint_source(path.name, text).diagnostics):
        cases.append((path.name, text))

def fix():
    for name, text in cases:
        apply.fix_text(name, text, Config(), unsafe=True)

def edits():
    for name, text in cases:
        diagnostics = lint_source(name, text, Config()).diagnostics
        apply.attach_fix_edits(diagnostics, {name: source_lines(text)}, Config(), once=True)

def quick():
    for name, text in cases:
        linter = IncrementalLinter(name, Config())
        for d in linter.lint(text).diagnostics:
            if d.fix is not None and d.fix.plan is not None and not d.fix.resolved:
                attach_family_fixes([d], text, name, Config(), linter)

out = {"files": len(cases)}
for step, fn in (("fix", fix), ("edits", edits), ("quick", quick)):
    fn()
    best = 1e9
    for _ in range(repeat):
        t = time.process_time(); fn(); best = min(best, time.process_time() - t)
    out[step] = best
print(json.dumps(out))
'''


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--also", action="append", default=[], metavar="DIR",
                        help="also time the files under DIR with a planned residual fix")
    parser.add_argument("--files", default=str(Path(__file__).resolve().parent.parent),
                        help="the tree whose fixtures/ and eval/cases/ are timed (the same for every checkout)")
    args = parser.parse_args()
    checkouts = [c.split("=", 1) for c in args.checkout]
    runs = {name: [] for name, _ in checkouts}
    for r in range(args.rounds):
        order = checkouts[r % len(checkouts):] + checkouts[:r % len(checkouts)]
        for name, path in order:
            env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()), JAX_PLATFORMS="cpu")
            proc = subprocess.run([sys.executable, "-c", CHILD, args.files, str(args.repeat), *args.also], env=env,
                                  capture_output=True, text=True, check=True, cwd=str(Path(path).resolve()))
            runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first = checkouts[0][0]
    for name, _ in checkouts:
        files = runs[name][0]["files"]
        line = [f"{name} ({files} files):"]
        for step in ("fix", "edits", "quick"):
            med = statistics.median(x[step] for x in runs[name])
            ratio = statistics.median(x[step] / y[step] for x, y in zip(runs[name], runs[first]))
            line.append(f"{step} {med * 1000:.0f} ms CPU (x{ratio:.3f} of {first}, paired)")
        print(" ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
