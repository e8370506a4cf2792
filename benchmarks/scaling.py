"""Per-file scaling: seconds per 1,000 lines for lint, --fix and JSON output, over synthetic
modules of 1k-50k lines holding 10-4,000 custom derivatives (not a timed test: a benchmark).

    python benchmarks/scaling.py                      # the default grid
    python benchmarks/scaling.py --cases 5000:10 --steps lint,json --timeout 120

Each (module, step) runs in a fresh process, in CPU time (`time.process_time`), the module's
import and generation excluded, with the cyclic collector paused as the CLI's workers pause it, with a timeout so that a superlinear step shows as "timeout"
instead of hanging the benchmark. A step is linear when its s/1k lines stays within 2x across
the sizes of one density (the "spread" lines, per density of derivatives). The derivatives are those of `benchmarks/synth.py`, a fifth of
them fixable (an array in nondiff_argnums: VJP101's residual fix), amid ordinary code.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# (lines, derivatives): sparse (10 per 1k lines, as in real code) and dense (80 per 1k lines).
DEFAULT_CASES = [(1000, 10), (5000, 50), (10000, 100), (50000, 500),
                 (1000, 80), (5000, 400), (10000, 800), (50000, 4000)]
STEPS = ("lint", "fix", "json")


def module_text(lines: int, derivatives: int, seed: int = 0) -> str:
    """A module of about `lines` lines with exactly `derivatives` custom derivatives, spread evenly."""
    from synth import HEADER, _derivative, _filler_class, _filler_function

    rng = random.Random(seed)
    blocks: List[List[str]] = [_derivative(rng) for _ in range(derivatives)]
    used = sum(map(len, blocks)) + len(HEADER)
    filler: List[List[str]] = []
    while used < lines:
        block = _filler_class(rng) if rng.random() < 0.2 else _filler_function(rng)
        filler.append(block)
        used += len(block)
    out = list(HEADER)
    every = max(1, len(filler) // max(1, derivatives))
    for i, block in enumerate(blocks):
        out += block
        out += [line for f in filler[i * every:(i + 1) * every] for line in f]
    out += [line for f in filler[len(blocks) * every:] for line in f]
    return "\n".join(out) + "\n"


def run_step(step: str, lines: int, derivatives: int) -> Dict[str, float]:
    """In this process: time one step on one generated module."""
    import gc
    import time

    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    text = module_text(lines, derivatives)
    name = f"synth_{lines}_{derivatives}.py"
    config = Config()
    lint_source("warm.py", b"import jax\n@jax.custom_vjp\ndef f(x):\n    return x\n", config)  # imports
    gc.collect()
    gc.disable()  # as the CLI's workers lint (vjplint.batch.parallel); fixes pause it themselves
    start = time.process_time()
    if step == "lint":
        found = len(lint_source(name, text.encode(), config).diagnostics)
    elif step == "fix":
        from vjplint.fixes.apply import fix_text

        found = fix_text(name, text, config).fixed_count
    else:
        from vjplint.cli.report import session_for
        from vjplint.fixes.apply import attach_fix_edits
        from vjplint.output import OutputContext, get_formatter
        from vjplint.syntax.positions import source_lines

        session = session_for("json")  # as the CLI does: the fix edits read the linter's parse
        diagnostics = lint_source(name, text.encode(), config, session=session).diagnostics
        sources = {name: source_lines(text)}
        attach_fix_edits(diagnostics, sources, config, once=True, session=session)
        get_formatter("json")(diagnostics, OutputContext(sources=sources))
        found = sum(1 for d in diagnostics if d.fix is not None and d.fix.resolved)
    seconds = time.process_time() - start
    gc.enable()
    return {"seconds": seconds, "lines": len(text.splitlines()), "found": found}


def measure(step: str, lines: int, derivatives: int, timeout: float) -> Optional[Dict[str, float]]:
    command = [sys.executable, __file__, "--one", f"{step}:{lines}:{derivatives}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", help="LINES:DERIVATIVES,... (default: the built-in grid)")
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per (module, step)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        step, lines, derivatives = args.one.split(":")
        print(json.dumps(run_step(step, int(lines), int(derivatives))))
        return 0
    cases: List[Tuple[int, int]] = ([tuple(map(int, c.split(":"))) for c in args.cases.split(",")]  # type: ignore[misc]
                                    if args.cases else DEFAULT_CASES)
    steps = args.steps.split(",")
    results: Dict[str, Dict[str, Optional[Dict[str, float]]]] = {}
    print(f"{'lines':>7} {'derivs':>7} " + " ".join(f"{s + ' s/1k':>11} {'(found)':>8}" for s in steps))
    for lines, derivatives in cases:
        row = results.setdefault(f"{lines}:{derivatives}", {})
        cells = []
        for step in steps:
            figure = row[step] = measure(step, lines, derivatives, args.timeout)
            if figure is None:
                cells.append(f"{'timeout':>11} {'':>8}")
            else:
                cells.append(f"{figure['seconds'] / figure['lines'] * 1000:>11.4f} {int(figure['found']):>8}")
        print(f"{lines:>7} {derivatives:>7} " + " ".join(cells), flush=True)
    # Linear means flat across sizes at one density (derivatives per 1k lines); denser modules
    # cost more per line, as they hold more to analyse, so the whole grid's spread is printed apart.
    densities = sorted({round(d * 1000 / n) for n, d in cases})
    for step in steps:
        for density in [*densities, None]:
            rows = [results[f"{n}:{d}"] for n, d in cases if density is None or round(d * 1000 / n) == density]
            per_k = [r[step]["seconds"] / r[step]["lines"] * 1000 for r in rows if r.get(step)]
            timeouts = sum(1 for r in rows if r.get(step) is None)
            where = f"{density} derivatives per 1k lines" if density is not None else "the whole grid"
            if per_k:
                print(f"spread {step}, {where}: max/min s per 1k lines = {max(per_k) / min(per_k):.2f}"
                      + (f" ({timeouts} timed out)" if timeouts else ""))
    for lines, derivatives in cases:
        row = results[f"{lines}:{derivatives}"]
        for step in ("fix", "json"):
            if row.get("lint") and row.get(step):
                print(f"{'--fix' if step == 'fix' else 'JSON'} / lint at {lines} lines, {derivatives} derivatives: "
                      f"{row[step]['seconds'] / row['lint']['seconds']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
