"""Cost per file as the tree grows: N copies of the fix fixtures (N = 1, 5, 20, 50 by default),
each copy a package of its own in which every module defines the same module-level names
(`_fwd`, `_bwd`, `f`...), as modules of a real monorepo do. For each N it prints the CPU time
per file of `vjplint check --no-cache` and of `vjplint check --fix --unsafe-fixes --no-cache`
(on a fresh copy), user + system of the whole process tree (`wait4`), and how many files the
fix changed. Issue 48: the time per file stays flat (within 1.5x from N = 1 to 50).

    python benchmarks/copies.py                   # N = 1, 5, 20, 50
    python benchmarks/copies.py --copies 1,20 --jobs 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
SETS = ("fix", "fix_small", "fix_structure")  # one input.py per case (fix_cross: a package of its own)


def fixture_set() -> Dict[str, bytes]:
    """relative path -> content of one copy."""
    files: Dict[str, bytes] = {"__init__.py": b""}
    for name in SETS:
        for case in sorted((ROOT / "fixtures" / name).glob("*/input.py")):
            files[f"{case.parent.name}.py"] = case.read_bytes()
    cross = ROOT / "fixtures" / "fix_cross" / "input"
    for path in sorted(cross.rglob("*.py")):
        files[str(path.relative_to(cross))] = path.read_bytes()
    return files


def make_tree(root: Path, copies: int, files: Dict[str, bytes]) -> int:
    for i in range(copies):
        for rel, data in files.items():
            target = root / f"pkg{i}" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (root / "pyproject.toml").write_text('[tool.vjplint]\nper-file-ignores = { "**/*.py" = ["VJP501", "VJP502"] }\n')
    return copies * len(files)


def run(args: List[str], cwd: Path, jobs: int) -> Dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "vjplint", "check", "--no-cache", "--exit-zero", "--jobs",
                                str(jobs), *args, "."], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, err = process.communicate()
    return {"wall": time.perf_counter() - start, "out": out, "err": err}


def cpu_of(step) -> float:
    """CPU seconds of one command (children's rusage is cumulative: take differences)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = step()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", default="1,5,20,50")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (1: the CPU time of one process)")
    options = parser.parse_args()
    files = fixture_set()
    print(f"{'N':>4} {'files':>6} {'check s':>8} {'ms/file':>8} {'fix s':>8} {'ms/file':>8} {'fixed':>6}")
    base: Dict[str, float] = {}
    for copies in [int(n) for n in options.copies.split(",")]:
        with tempfile.TemporaryDirectory(prefix="vjplint-copies-") as tmp:
            tree = Path(tmp) / "tree"
            count = make_tree(tree, copies, files)
            check = cpu_of(lambda: run([], tree, options.jobs))
            fix = cpu_of(lambda: run(["--fix", "--unsafe-fixes"], tree, options.jobs))
            changed = sum(1 for i in range(copies) for rel, data in files.items()
                          if (tree / f"pkg{i}" / rel).read_bytes() != data)
        per = {"check": 1000 * check["cpu"] / count, "fix": 1000 * fix["cpu"] / count}
        base = base or per
        print(f"{copies:>4} {count:>6} {check['cpu']:>8.2f} {per['check']:>8.2f} {fix['cpu']:>8.2f} "
              f"{per['fix']:>8.2f} {changed:>6}   (x{per['check'] / base['check']:.2f} check, "
              f"x{per['fix'] / base['fix']:.2f} fix per file against the first N)", flush=True)
        if fix["err"].strip() and "internal error" in fix["err"]:
            print(fix["err"][-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
