"""`vjplint --fix --unsafe-fixes` over copies of real code bases: what it changes, per rule,
and whether every rewritten file parses, is idempotent and still imports.

    python benchmarks/fix_sweep.py --out /tmp/sweep /tmp/trees/optax /tmp/trees/jax ...

Per tree: copy to OUT/<name> (writable), run `--fix --unsafe-fixes --show-fixes`, write
OUT/<name>.diff (against the pristine tree), check each changed file with `ast.parse`, run
`--fix --unsafe-fixes` a second time (idempotence: the copy must not change again). A summary is printed as JSON lines (one per tree) and written to OUT/summary.json.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

FIXED_LINE = re.compile(r"^\s+(\d+) × (VJP\d+) \(")


def _vjplint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vjplint", *args], capture_output=True, text=True)


def _copy(tree: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(tree, dest, symlinks=True)
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def _changed(tree: Path, copy: Path) -> List[str]:
    out = subprocess.run(["diff", "-rq", "--no-dereference", str(tree), str(copy)], capture_output=True, text=True)
    found = []
    for line in out.stdout.splitlines():
        m = re.match(r"Files (.+) and (.+) differ$", line)
        if m:
            found.append(os.path.relpath(m.group(2), copy))
    return found


def sweep(tree: Path, out: Path) -> Dict[str, object]:
    copy = out / tree.name
    _copy(tree, copy)
    first = _vjplint("--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", "--exit-zero", str(copy))
    counts: Counter = Counter()
    for line in first.stdout.splitlines():
        m = FIXED_LINE.match(line)
        if m:
            counts[m.group(2)] += int(m.group(1))
    changed = _changed(tree, copy)
    diff = subprocess.run(["diff", "-ruN", "--no-dereference", str(tree), str(copy)], capture_output=True, text=True)
    (out / f"{tree.name}.diff").write_text(diff.stdout, encoding="utf-8")
    unparsable = []
    for rel in changed:
        try:
            ast.parse((copy / rel).read_bytes())
        except (SyntaxError, ValueError):
            unparsable.append(rel)
    snapshot = {rel: (copy / rel).read_bytes() for rel in changed}
    _vjplint("--fix", "--unsafe-fixes", "--no-cache", "--exit-zero", str(copy))
    second_changed = sorted(set(_changed(tree, copy)) ^ set(changed)) + \
        [rel for rel in changed if (copy / rel).exists() and (copy / rel).read_bytes() != snapshot[rel]]
    return {"tree": tree.name, "fixed": dict(sorted(counts.items())), "files_changed": len(changed),
            "changed": changed, "unparsable": unparsable, "not_idempotent": second_changed,
            "errors": [line for line in first.stderr.splitlines() if "error" in line.lower()][:20]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for tree in args.trees:
        row = sweep(tree.resolve(), args.out)
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
