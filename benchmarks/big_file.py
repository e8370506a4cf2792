"""One big file from the command line: CPU seconds and peak memory against its size.

Three shapes, each at each size (default 1, 2, 5 and 10 MB), each file alone in its own folder:
- `assignments`: lsp_latency.py's header and one custom_vjp block, then `v{i} = {i}` lines (a
  data table, a generated constants module: 600k top-level statements in 10 MB);
- `one-vjp`: `lsp_latency.make_module(lines, vjp_every=10**9)`, one block of two custom_vjps amid
  plain functions (a big module with one derivative);
- `dense`: `lsp_latency.make_module(lines)`, two custom_vjps every 38 lines (3,000 findings a MB;
  big_document.py's module).
Each is linted by `vjplint check --no-cache --jobs 1 FILE` in a child process; its CPU time (user +
system) and peak RSS come from `os.wait4`, the child's own (not the machine's load). With
`--before DIR` another checkout runs the same files in the same rounds, for paired ratios;
`--rounds N` runs each file N times from each checkout, alternating which goes first, and gives
medians (CPU, peak) and the median of the rounds' CPU ratios: on a loaded machine one run's CPU
time varies by 10-15%, so a single pair cannot show a change of that size.

    python benchmarks/big_file.py [--mb 1,2,5,10] [--shapes assignments,one-vjp,dense] [--before DIR] [--rounds N] [--args ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_latency import BLOCK, HEADER, make_module  # noqa: E402


def make(shape: str, mb: float) -> str:
    if shape == "assignments":
        return HEADER + BLOCK.format(i=0) + "".join(f"v{i} = {i}\n" for i in range(int(mb * 60_000)))
    if shape == "one-vjp":
        return make_module(int(mb * 43_400), vjp_every=10**9)
    if shape == "dense":
        return make_module(int(mb * 1e6 / 17.06))
    raise SystemExit(f"unknown shape {shape!r}")


def run(checkout: Path, path: Path, args: List[str]) -> Tuple[float, float, int]:
    """(CPU seconds, peak RSS in MB, exit status) of one `vjplint check` of `path`."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen([sys.executable, "-P", "-m", "vjplint", "check", "--no-cache", "--jobs", "1", *args,
                             path.name], cwd=path.parent, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", default="1,2,5,10")
    parser.add_argument("--shapes", default="assignments,one-vjp,dense")
    parser.add_argument("--before", type=Path, help="another checkout, run on the same files in the same rounds")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each file from each checkout (medians)")
    parser.add_argument("--args", nargs=argparse.REMAINDER, default=[], help="more arguments for `vjplint check`")
    options = parser.parse_args()
    checkouts: Dict[str, Path] = {"after": ROOT}
    if options.before:
        checkouts = {"before": options.before.resolve(), **checkouts}
    print("| shape | MB | lines | " + " | ".join(f"{k} CPU s | {k} µs/line | {k} peak MB" for k in checkouts)
          + (" | CPU after/before | peak after/before" if options.before else "") + " |")
    print("|---|---:|---:|" + "---:|---:|---:|" * len(checkouts) + ("---:|---:|" if options.before else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for shape in options.shapes.split(","):
            for mb in (float(m) for m in options.mb.split(",")):
                folder = Path(tmp) / f"{shape}-{mb:g}"
                folder.mkdir()
                path = folder / "big.py"
                text = make(shape, mb)
                path.write_text(text, encoding="utf-8")
                lines = text.count("\n")
                cells: List[str] = []
                got: Dict[str, List[Tuple[float, float]]] = {label: [] for label in checkouts}
                for n in range(options.rounds):
                    order = list(checkouts.items())
                    for label, checkout in (order if n % 2 == 0 else order[::-1]):
                        cpu, peak, status = run(checkout, path, options.args)
                        if status not in (0, 1):
                            raise SystemExit(f"{label}: exit status {status} on {shape} {mb:g} MB")
                        got[label].append((cpu, peak))
                for label in checkouts:
                    cpu = statistics.median(c for c, _ in got[label])
                    peak = statistics.median(p for _, p in got[label])
                    cells += [f"{cpu:.2f}", f"{cpu / lines * 1e6:.1f}", f"{peak:.0f}"]
                if options.before:
                    pairs = list(zip(got["after"], got["before"]))
                    cells += [f"{statistics.median(a[0] / b[0] for a, b in pairs):.2f}",
                              f"{statistics.median(a[1] / b[1] for a, b in pairs):.2f}"]
                print(f"| {shape} | {len(text.encode()) / 1e6:.2f} | {lines:,} | " + " | ".join(cells) + " |", flush=True)
                path.unlink()


if __name__ == "__main__":
    main()
