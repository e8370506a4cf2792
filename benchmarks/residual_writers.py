#!/usr/bin/env python3
"""The residual-plus-None rewrite's two writers on every fixture and eval case with a plan:
text edits at `ast` positions (residual_text) against libcst (residual_plus_none), in-process
(best of N rounds, interleaved), and the import of libcst a cold process pays.

    PYTHONPATH=. python benchmarks/residual_writers.py . [ROUNDS]
"""
import subprocess
import sys
import time
from pathlib import Path

from vjplint.settings.config import Config
from vjplint.lint.engine import lint_source
from vjplint.fixes import apply, residual_text

root = Path(sys.argv[1])
cases = []
for path in sorted([*root.glob("fixtures/**/*.py"), *root.glob("eval/cases/**/*.py")]):
    text = path.read_text(encoding="utf-8")
    plans = list(dict.fromkeys(d.fix.plan for d in lint_source(path.name, text).diagnostics
                               if d.fix is not None and d.fix.plan is not None and d.fix.plan.transform == apply.RESIDUAL))
    if plans:
        cases.append((text, plans))
original = residual_text.spans_of

def run(use_text):
    residual_text.spans_of = original if use_text else (lambda *a: None)
    t = time.perf_counter()
    for text, plans in cases:
        apply._residual_rewrite(text, plans, Config())
    return time.perf_counter() - t
import libcst  # noqa: F401  (both warm)
run(True); run(False)
best = {True: 1e9, False: 1e9}
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
    for mode in (True, False):
        best[mode] = min(best[mode], run(mode))
residual_text.spans_of = original
print(f"files with a planned rewrite: {len(cases)}")
print(f"text writer (falls back to libcst where unsure): {best[True]*1000:.0f} ms; libcst for all: {best[False]*1000:.0f} ms; ratio {best[False]/best[True]:.2f}x")
cold = []
for _ in range(3):
    t = time.perf_counter(); subprocess.run([sys.executable, "-c", "import libcst"], check=True); cold.append(time.perf_counter() - t)
base = []
for _ in range(3):
    t = time.perf_counter(); subprocess.run([sys.executable, "-c", "pass"], check=True); base.append(time.perf_counter() - t)
print(f"import libcst in a cold process: {(min(cold) - min(base))*1000:.0f} ms")
