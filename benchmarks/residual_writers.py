#!/usr/bin/env python3
"""The residual-plus-None rewrite's two writers on every fixture and eval case with a plan:
text edits at `ast` positions (residual_text) against libcst (residual_plus_none), in-process
(CPU time of this process, best of N rounds, interleaved), and the import of libcst a cold
process pays. Both through the plan's one way to its edits (`ResidualPlusNone.edits`), the text writer on or off in its context.
Then the same files end to end: `fix_text` (lint and rewrite passes to a fixed point, as
`--fix --unsafe-fixes` per file), `attach_fix_edits` (JSON/SARIF/LSP edits) and the server's
quick fixes (`server.fixes.attach_family_fixes`, one diagnostic at a time on the derivative's
family of statements, after an `IncrementalLinter` lint, as a code action asks), with the text
writer on and off (libcst warm both ways).

    PYTHONPATH=. python benchmarks/residual_writers.py . [ROUNDS]
"""
import subprocess
import sys
import time
from pathlib import Path

from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source
from vjplint.diagnostics import ResidualPlusNone
from vjplint.fixes import apply, residual_text
from vjplint.lint.incremental import IncrementalLinter
from vjplint.server.fixes import attach_family_fixes
from vjplint.syntax.positions import source_lines

root = Path(sys.argv[1])
cases = []
for path in sorted([*root.glob("fixtures/**/*.py"), *root.glob("eval/cases/**/*.py")]):
    text = path.read_text(encoding="utf-8")
    plans = list(dict.fromkeys(d.fix.plan for d in lint_source(path.name, text).diagnostics
                               if d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone)))
    if plans:
        cases.append((text, plans, path.name))

def run(use_text):
    context = apply.FileContext(Config(), text_edits=use_text)
    t = time.process_time()
    for text, plans, _ in cases:
        ResidualPlusNone.edits(text, plans, context)
    return time.process_time() - t


def end_to_end(use_text, step):
    """`fix_text` or the JSON edits of every case; the text writer switched off where the fix loop
    makes its context (the loop offers no switch: it always takes the fast path)."""
    original = residual_text.spans_of
    residual_text.spans_of = original if use_text else (lambda *a: None)
    try:
        t = time.process_time()
        for text, _, name in cases:
            if step == "fix":
                apply.fix_text(name, text, Config(), unsafe=True)
            elif step == "server":
                linter = IncrementalLinter(name, Config())
                for d in linter.lint(text).diagnostics:
                    if d.fix is not None and d.fix.plan is not None and not d.fix.resolved:
                        attach_family_fixes([d], text, name, Config(), linter)
            else:
                diagnostics = lint_source(name, text, Config()).diagnostics
                apply.attach_fix_edits(diagnostics, {name: source_lines(text)}, Config(), once=True)
        return time.process_time() - t
    finally:
        residual_text.spans_of = original
import libcst  # noqa: F401  (both warm)
run(True); run(False)
best = {True: 1e9, False: 1e9}
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
    for mode in (True, False):
        best[mode] = min(best[mode], run(mode))
print(f"files with a planned rewrite: {len(cases)}")
print(f"text writer (falls back to libcst where unsure): {best[True]*1000:.0f} ms; libcst for all: {best[False]*1000:.0f} ms; ratio {best[False]/best[True]:.2f}x")
for step in ("fix", "json", "server"):
    best = {True: 1e9, False: 1e9}
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
        for mode in (True, False):
            best[mode] = min(best[mode], end_to_end(mode, step))
    what = {"fix": "fix_text (--fix --unsafe-fixes)", "json": "lint + attach_fix_edits (JSON)",
            "server": "incremental lint + quick fixes (server)"}[step]
    print(f"{what}: text writer {best[True]*1000:.0f} ms; libcst for all {best[False]*1000:.0f} ms; "
          f"ratio {best[False]/best[True]:.2f}x")
cold = []
for _ in range(3):
    t = time.perf_counter(); subprocess.run([sys.executable, "-c", "import libcst"], check=True); cold.append(time.perf_counter() - t)
base = []
for _ in range(3):
    t = time.perf_counter(); subprocess.run([sys.executable, "-c", "pass"], check=True); base.append(time.perf_counter() - t)
print(f"import libcst in a cold process: {(min(cold) - min(base))*1000:.0f} ms")
