"""Cold lint of one tree by several vjplint checkouts beside ruff, in paired rounds.

    python benchmarks/paired.py --tree /path/to/jax --checkout before=/path/to/main-copy \\
        --checkout after=. --rounds 5
    python benchmarks/paired.py --tree benchmarks/data/flax_fp8_ops.py --checkout after=. --rounds 20

`--tree` may name one file: a pre-commit run on one changed module (`benchmarks/data/flax_fp8_ops.py`,
667 lines with six custom derivatives; the seconds are then printed in milliseconds).

Each round runs `ruff check --select F --no-cache` and then `vjplint check --no-cache` from each
checkout (`PYTHONPATH` pointing at it), from a directory without a `pyproject.toml`; the
checkouts take turns at going first, round by round.
For every command it reports the median wall time and the median CPU time (user + system of the
whole process tree, from `wait4`), and for every checkout the ratios to ruff taken round by
round: on a shared machine a busy moment slows one round's commands alike, so the ratios are
what to compare, not the seconds. Each checkout runs once untimed first, with bytecode written
(PYTHONDONTWRITEBYTECODE emptied), as an installed package has its .pyc files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence


def run(command: Sequence[str], cwd: str, pythonpath: Optional[str]) -> Dict[str, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", required=True)
    parser.add_argument("--checkout", action="append", required=True, metavar="NAME=DIR[=ARGS]",
                        help="a checkout to time; ARGS, when given, are extra `vjplint check` arguments "
                             "(`after-no333=.=--ignore VJP333`: the same checkout with a rule off)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ruff", default=None, help="ruff binary (default: beside Python, else on PATH)")
    parser.add_argument("--json", default=None, help="write every run here")
    args = parser.parse_args(argv)
    ruff = args.ruff or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        ruff = shutil.which("ruff") or ruff
    tree = os.path.abspath(args.tree)
    commands: Dict[str, tuple] = {"ruff": ([ruff, "check", "--select", "F", "--no-cache", "--exit-zero", "-q", tree],
                                           None)}
    for spec in args.checkout:
        name, _, rest = spec.partition("=")
        directory, _, extra = rest.partition("=")
        commands[name] = ([sys.executable, "-m", "vjplint", "check", "--no-cache", "-q", "--exit-zero", *extra.split(),
                           tree], os.path.abspath(directory))
    runs: Dict[str, List[Dict[str, float]]] = {name: [] for name in commands}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as cwd:  # no pyproject.toml, no cache directory
        checkouts = [name for name in commands if name != "ruff"]
        for name in checkouts:  # untimed, with bytecode written: the .pyc files and the dataclasses'
            command, pythonpath = commands[name]  # kept code (vjplint/batch/class_code.py), as installed
            subprocess.run(command, cwd=cwd, env={**os.environ, "PYTHONPATH": pythonpath or "",
                                                  "PYTHONDONTWRITEBYTECODE": ""},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for round_ in range(args.rounds):
            # ruff first, then the checkouts in an order that turns each round: in a fixed order each
            # checkout holds the same place in every round, and whatever a place costs or saves (a
            # warm page cache, the machine's other load) falls on one checkout alone
            turn = round_ % len(checkouts)
            for name in ["ruff", *checkouts[turn:], *checkouts[:turn]]:
                command, pythonpath = commands[name]
                runs[name].append(run(command, cwd, pythonpath))
    first = next(name for name in runs if name != "ruff")
    scale, unit = (1000.0, "ms") if os.path.isfile(tree) else (1.0, "s")
    print(f"{args.rounds} rounds; load average before {load[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    for name, measured in runs.items():
        print(f"{name:12s} wall {scale * statistics.median(m['wall'] for m in measured):7.2f} {unit}   "
              f"cpu {scale * statistics.median(m['cpu'] for m in measured):7.2f} {unit}")
    for name, measured in runs.items():
        if name == "ruff":
            continue
        for key in ("cpu", "wall"):
            ratios = [m[key] / r[key] for m, r in zip(measured, runs["ruff"])]
            print(f"{name:12s} / ruff, {key:4s}: {statistics.median(ratios):5.2f}  "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    for name, measured in runs.items():  # each checkout against the first, round by round
        if name in ("ruff", first):
            continue
        ratios = [m["cpu"] / f["cpu"] for m, f in zip(measured, runs[first])]
        print(f"{name:12s} / {first}, cpu: {statistics.median(ratios):5.3f} median, "
              f"lower in {sum(r < 1 for r in ratios)} of {len(ratios)} rounds")
    if args.json:
        Path(args.json).write_text(json.dumps({"tree": tree, "runs": runs}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
