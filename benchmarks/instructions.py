"""Instructions a cold lint executes, per checkout: a measure that load on a shared machine leaves alone.

    python benchmarks/instructions.py --tree /path/to/jax --checkout before=/path/to/old --checkout after=.

Timings on a shared machine drift by a quarter from round to round (`benchmarks/paired.py` pairs
them with ruff for that reason); the number of instructions a run executes does not. Each checkout
runs `vjplint check --no-cache -j 1` once under valgrind's cachegrind (`--cache-sim=no`: counting
only, about 20 times slower than a plain run), with PYTHONHASHSEED=0 so that set and dict orders,
hence the work, repeat exactly. `-j 1` keeps the count to one process: cachegrind counts a forked
worker's instructions from the start of its parent, so a parallel run's sum counts the parent's
part several times. Byte-compile each checkout first (`python -m compileall -q vjplint`), as an
installed package is, and keep PYTHONPYCACHEPREFIX unset: where no .pyc is found, every run
compiles the package again, and that cost grows with the number of modules, not with the work.
An instruction is not a fixed time (cache misses, allocation), so report these beside a timing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence


def instructions(checkout: str, tree: str, extra: Sequence[str] = ()) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": os.path.abspath(checkout)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    with tempfile.TemporaryDirectory() as cwd:  # no pyproject.toml, no cache directory
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                               sys.executable, "-m", "vjplint", "check", "--no-cache", "-q", "--exit-zero", "-j", "1",
                               *extra, os.path.abspath(tree)],
                              cwd=cwd, env=env, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no count from valgrind for {checkout}:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", required=True)
    parser.add_argument("--checkout", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--arg", action="append", default=[], help="an extra argument for vjplint check")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    counts: Dict[str, int] = {}
    names: List[str] = []
    for spec in args.checkout:
        name, _, directory = spec.partition("=")
        counts[name] = instructions(directory, args.tree, args.arg)
        names.append(name)
        print(f"{name:<16} {counts[name] / 1e9:8.3f} G instructions", flush=True)
    first = names[0]
    for name in names[1:]:
        print(f"{name} / {first}: {counts[name] / counts[first]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
