"""Same output before and after an optimisation: `vjplint check --output-format json` and
`--diff --unsafe-fixes` from two checkouts on the same trees, compared byte for byte (the rule
pages' file:// links, which name the checkout, made equal first).

    python benchmarks/json_identity.py --before /tmp/main-copy --after . fixtures eval/cases /tmp/trees/optax

Each command runs with `python -P` (the working directory's own `vjplint/` must not shadow the
checkout on PYTHONPATH) from the tree's parent, so display paths are the same for both. Exit
status 1 when any output differs (the differing tree and command are printed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import List

COMMANDS = {"json": ["--output-format", "json", "--exit-zero"], "diff": ["--diff", "--unsafe-fixes", "--exit-zero"]}


def output(checkout: Path, tree: Path, args: List[str]) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(checkout), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-P", "-m", "vjplint", "check", "--no-cache", *args, tree.name],
                          cwd=tree.parent, env=env, capture_output=True)
    return proc.stdout.replace(checkout.as_uri().encode() + b"/", b"file://CHECKOUT/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="a checkout (a directory holding vjplint/)")
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("trees", nargs="+", type=Path)
    options = parser.parse_args()
    before, after = options.before.resolve(), options.after.resolve()
    differing = 0
    for tree in (t.resolve() for t in options.trees):
        for label, args in COMMANDS.items():
            a, b = output(before, tree, args), output(after, tree, args)
            same = a == b
            differing += not same
            print(f"{'same' if same else 'DIFFERENT'}  {label:4}  {tree}  ({len(a)} bytes before, {len(b)} after)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
