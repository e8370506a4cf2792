"""vjplint beside ruff and grep on one tree, in one run: medians, ratios, peak memory.

  python benchmarks/bench.py --tree /path/to/jax            a real tree
  python benchmarks/bench.py                                a generated 1x tree (benchmarks/synth.py)
  python benchmarks/bench.py --tree T --scaling 1,4,16      also: N copies of T (or generated trees
                                                            when no --tree), cold runs, time per MB

Every command runs --runs times, the commands interleaved round by round so that a noisy machine
slows them alike; the ratios (vjplint / ruff, vjplint / grep, startup / `python -c pass`) are what
to compare across machines, the seconds only describe this one. Peak memory is the largest
process's maximum RSS (wait4) and the largest sum over the process tree (sampled from /proc).
Targets (the performance issue) are checked and printed; --json writes everything.
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
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402

PREFILTER = r"custom_vjp|custom_jvp|JVPTracer|direct_linearize|DIRECT_LINEARIZE"
TARGETS = {  # name: (numerator, denominator, max ratio)
    "cold lint / ruff --no-cache": ("vjplint cold", "ruff cold", 10.0),
    "warm lint / ruff warm": ("vjplint warm", "ruff warm", 5.0),
    "warm lint, cache only / ruff warm": ("vjplint warm, cache only", "ruff warm", 5.0),
    "--version / python -c pass": ("vjplint --version", "python -c pass", 3.0),
    "pre-commit, no candidates / python -c pass": ("vjplint 5 plain files", "python -c pass", 3.0),
}
MEMORY_LIMIT_MB = 300


PYTHON = sys.executable  # --python: time vjplint as installed in another environment


def find_vjplint() -> List[str]:
    script = Path(PYTHON).parent / "vjplint"
    return [str(script)] if script.exists() else [PYTHON, "-m", "vjplint"]


def find_ruff(explicit: Optional[str]) -> Optional[str]:
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "ruff"
    return str(beside) if beside.exists() else shutil.which("ruff")


# -- measuring one command ------------------------------------------------------------------
def _descendants(pid: int) -> List[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        out.extend(int(c) for c in children)
        todo.extend(int(c) for c in children)
    return out


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class _TreeSampler(threading.Thread):
    """The largest summed RSS of a process and its descendants, sampled every 10 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kb, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            total = sum(_rss_kb(p) for p in [self.pid, *_descendants(self.pid)])
            self.peak_kb = max(self.peak_kb, total)
            self.done.wait(0.01)


def measure(cmd: Sequence[str], cwd: Path, sample_memory: bool = False) -> Tuple[float, float, float, int]:
    """(wall seconds, largest process max RSS in MB, peak tree RSS in MB, exit status)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(cmd), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampler = None
    if sample_memory and Path("/proc").is_dir():
        sampler = _TreeSampler(proc.pid)
        sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    tree_mb = 0.0
    if sampler is not None:
        sampler.done.set()
        sampler.join()
        tree_mb = sampler.peak_kb / 1024
    return wall, usage.ru_maxrss / 1024, tree_mb, proc.returncode


# -- the side-by-side run -------------------------------------------------------------------
def commands(tree: Path, work: Path, ruff: Optional[str], vjplint: List[str], plain: List[str]) -> Dict[str, dict]:
    cache = str(work / "vjplint-cache")
    found = {
        "python -c pass": {"cmd": [PYTHON, "-c", "pass"]},
        "grep -rlE (I/O floor)": {"cmd": ["grep", "-rlE", PREFILTER, "--include=*.py", "--include=*.pyi", "."]},
        "vjplint --version": {"cmd": [*vjplint, "--version"]},
        "vjplint 5 plain files": {"cmd": [*vjplint, "check", "--no-cache", "--force-exclude", *plain]},
        "vjplint cold": {"cmd": [*vjplint, "check", "--no-cache", "--exit-zero", "-q", "."], "memory": True},
        "vjplint cold -j1": {"cmd": [*vjplint, "check", "--no-cache", "--exit-zero", "-q", "--jobs", "1", "."],
                             "memory": True},
        # Nothing changed: the recorded answer is replayed (vjplint.batch.fastpath).
        "vjplint warm": {"cmd": [*vjplint, "check", "--cache-dir", cache, "--exit-zero", "-q", "."], "warmup": True},
        # A command line never seen before (--jobs differs each time: no replay record), every file
        # a cache hit: the walk, a stat per file, the index.
        "vjplint warm, cache only": {"cmd": [*vjplint, "check", "--cache-dir", cache, "--exit-zero", "-q",
                                             "--jobs", "{unique}", "."]},
    }
    if ruff:
        found["ruff cold"] = {"cmd": [ruff, "check", "--select", "F", "--no-cache", "--exit-zero", "-q", "."]}
        found["ruff warm"] = {"cmd": [ruff, "check", "--select", "F", "--cache-dir", str(work / "ruff-cache"),
                                      "--exit-zero", "-q", "."], "warmup": True}
    return found


def plain_files(tree: Path, count: int = 5) -> List[str]:
    """Files without the prefilter names (what a typical pre-commit run receives)."""
    out = []
    for path in sorted(tree.rglob("*.py")):
        data = path.read_bytes()
        if not any(name in data for name in PREFILTER.encode().split(b"|")):
            out.append(str(path.relative_to(tree)))
            if len(out) == count:
                break
    return out


def side_by_side(tree: Path, runs: int, ruff: Optional[str]) -> dict:
    vjplint = find_vjplint()
    with tempfile.TemporaryDirectory(prefix="vjplint-bench-") as tmp:
        work = Path(tmp)
        table = commands(tree, work, ruff, vjplint, plain_files(tree))
        for name, spec in table.items():
            if spec.get("warmup"):
                measure(spec["cmd"], tree)
            spec.update(wall=[], rss=[], tree_rss=[], status=None)
        for round_ in range(runs):
            for name, spec in table.items():
                cmd = [a.replace("{unique}", str(1000 + round_)) for a in spec["cmd"]]
                wall, rss, tree_rss, status = measure(cmd, tree, bool(spec.get("memory")))
                spec["wall"].append(wall)
                spec["rss"].append(rss)
                spec["tree_rss"].append(tree_rss)
                spec["status"] = status
            print(f"  round {round_ + 1}/{runs} done", file=sys.stderr)
    results = {name: {"cmd": " ".join(spec["cmd"]), "median_s": statistics.median(spec["wall"]),
                      "min_s": min(spec["wall"]), "max_s": max(spec["wall"]), "runs": spec["wall"],
                      "max_rss_mb": max(spec["rss"]), "peak_tree_rss_mb": max(spec["tree_rss"]),
                      "status": spec["status"]} for name, spec in table.items()}
    return {"tree": str(tree), "tree_stats": synth.tree_stats(tree), "runs": runs, "results": results,
            "ratios": ratios(results), "python": sys.version.split()[0], "interpreter": PYTHON,
            "vjplint": " ".join(find_vjplint()), "cpus": os.cpu_count()}


def ratios(results: dict) -> dict:
    out = {}
    for label, (num, den, limit) in TARGETS.items():
        if num in results and den in results:
            value = results[num]["median_s"] / results[den]["median_s"]
            out[label] = {"ratio": value, "target": limit, "ok": value <= limit}
    grep = results.get("grep -rlE (I/O floor)")
    if grep:
        out["cold lint / grep"] = {"ratio": results["vjplint cold"]["median_s"] / grep["median_s"]}
    cold = results["vjplint cold"]
    out["peak memory, largest process (MB)"] = {"ratio": cold["max_rss_mb"], "target": MEMORY_LIMIT_MB,
                                                "ok": cold["max_rss_mb"] <= MEMORY_LIMIT_MB}
    if cold["peak_tree_rss_mb"]:
        out["peak memory, whole process tree (MB)"] = {"ratio": cold["peak_tree_rss_mb"],
                                                       "target": MEMORY_LIMIT_MB,
                                                       "ok": cold["peak_tree_rss_mb"] <= MEMORY_LIMIT_MB}
    return out


# -- scaling --------------------------------------------------------------------------------
def scaling(base: Optional[Path], scales: List[int], runs: int, ruff: Optional[str]) -> dict:
    vjplint = find_vjplint()
    rows = []
    for scale in scales:
        with tempfile.TemporaryDirectory(prefix=f"vjplint-scale{scale}-") as tmp:
            tree = Path(tmp) / "tree"
            tree.mkdir()
            if base is not None:
                synth.copy_tree(base, tree, scale)
            else:
                synth.generate_synthetic(tree, scale)
            stats = synth.tree_stats(tree)
            cmd = [*vjplint, "check", "--no-cache", "--exit-zero", "-q", "."]
            walls, rss, tree_rss = [], [], []
            ruff_walls = []
            for _ in range(runs):
                wall, peak, tree_peak, _ = measure(cmd, tree, sample_memory=True)
                walls.append(wall)
                rss.append(peak)
                tree_rss.append(tree_peak)
                if ruff:
                    ruff_walls.append(measure([ruff, "check", "--select", "F", "--no-cache", "--exit-zero", "-q",
                                               "."], tree)[0])
            row = {"scale": scale, **stats, "vjplint_median_s": statistics.median(walls), "vjplint_runs": walls,
                   "max_rss_mb": max(rss), "peak_tree_rss_mb": max(tree_rss)}
            if ruff_walls:
                row["ruff_median_s"] = statistics.median(ruff_walls)
            rows.append(row)
            print(f"  scale {scale}x: {row['vjplint_median_s']:.2f} s", file=sys.stderr)
    first = rows[0]
    per_mb = first["vjplint_median_s"] / (first["bytes"] / 1e6)
    for row in rows:
        row["s_per_mb"] = row["vjplint_median_s"] / (row["bytes"] / 1e6)
        row["vs_linear"] = row["s_per_mb"] / per_mb  # 1.0 = exactly linear from the smallest tree
        if "ruff_median_s" in row:  # ruff on the same tree in the same minutes: load-independent
            row["vs_ruff"] = row["vjplint_median_s"] / row["ruff_median_s"]
    return {"base": str(base) if base else "generated", "rows": rows}


# -- printing -------------------------------------------------------------------------------
def print_report(report: dict) -> None:
    side = report.get("side_by_side")
    if side:
        s = side["tree_stats"]
        print(f"Tree: {side['tree']} ({s['files']} files, {s['lines']:,} lines, {s['bytes'] / 1e6:.1f} MB); "
              f"Python {side['python']}, {side['cpus']} CPUs, {side['runs']} runs each, interleaved")
        print(f"{'command':<28} {'median':>8} {'min':>8} {'max':>8} {'max RSS':>9} {'tree RSS':>9}")
        for name, r in side["results"].items():
            tree_rss = f"{r['peak_tree_rss_mb']:.0f} MB" if r["peak_tree_rss_mb"] else "-"
            print(f"{name:<28} {r['median_s']:>7.3f}s {r['min_s']:>7.3f}s {r['max_s']:>7.3f}s "
                  f"{r['max_rss_mb']:>6.0f} MB {tree_rss:>9}")
        print()
        for label, r in side["ratios"].items():
            target = f"(target <= {r['target']:g}: {'ok' if r['ok'] else 'MISSED'})" if "target" in r else ""
            print(f"{label:<45} {r['ratio']:>8.2f} {target}")
    scale = report.get("scaling")
    if scale:
        print(f"\nScaling ({scale['base']}), cold, no cache:")
        print(f"{'scale':>5} {'files':>7} {'MB':>7} {'vjplint':>9} {'s/MB':>7} {'vs linear':>9} {'ruff':>8} "
              f"{'/ruff':>6} {'max RSS':>8} {'tree RSS':>9}")
        for row in scale["rows"]:
            ruff = f"{row['ruff_median_s']:.2f}s" if "ruff_median_s" in row else "-"
            vs_ruff = f"{row['vs_ruff']:.1f}" if "vs_ruff" in row else "-"
            print(f"{row['scale']:>4}x {row['files']:>7} {row['bytes'] / 1e6:>7.1f} {row['vjplint_median_s']:>8.2f}s "
                  f"{row['s_per_mb']:>7.3f} {row['vs_linear']:>9.2f} {ruff:>8} {vs_ruff:>6} {row['max_rss_mb']:>5.0f} MB "
                  f"{row['peak_tree_rss_mb']:>6.0f} MB")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=None, help="the tree to lint (default: a generated 1x tree)")
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--ruff", default=None, help="the ruff executable (default: beside Python, or PATH)")
    parser.add_argument("--scaling", default=None, help="also time generated trees of these sizes, e.g. 1,4,16")
    parser.add_argument("--scaling-runs", type=int, default=3)
    parser.add_argument("--skip-side-by-side", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    parser.add_argument("--python", default=None,
                        help="the interpreter whose environment has vjplint installed (default: this one); "
                             "its `vjplint` script and `python -c pass` are timed")
    args = parser.parse_args(argv)
    global PYTHON
    if args.python:
        PYTHON = args.python
    ruff = find_ruff(args.ruff)
    if ruff is None:
        print("bench: ruff not found; ruff ratios are left out", file=sys.stderr)
    # Byte-compile vjplint as an installed package is (PYTHONDONTWRITEBYTECODE would otherwise
    # make every run compile its modules, which no user's install does).
    subprocess.run([PYTHON, "-m", "compileall", "-q", "-x", "__pycache__", "-r", "10",
                    subprocess.run([PYTHON, "-c", "import os, vjplint; print(os.path.dirname(vjplint.__file__))"],
                                   capture_output=True, text=True, check=True,  # not from this checkout:
                                   cwd=tempfile.gettempdir()).stdout.strip()],  # the vjplint PYTHON runs
                   stdout=subprocess.DEVNULL, check=False)
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="vjplint-tree-") as tmp:
        tree = args.tree
        if tree is None:
            tree = Path(tmp) / "generated"
            synth.generate_synthetic(tree, 1)
        if not args.skip_side_by_side:
            report["side_by_side"] = side_by_side(tree.resolve(), args.runs, ruff)
        if args.scaling:
            scales = [int(s) for s in args.scaling.split(",")]
            report["scaling"] = scaling(args.tree.resolve() if args.tree else None, scales, args.scaling_runs, ruff)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
