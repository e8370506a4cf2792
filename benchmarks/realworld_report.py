"""Lint public JAX code bases and print the table in docs/realworld.md.

Usage: python benchmarks/realworld_report.py /path/to/trees/*   (one directory per code base)

Per tree: Python files, files that mention the recognised names (candidates), custom
derivatives found, diagnostics with the default rules, and crashes (internal errors or VJP900
on files CPython parses). Triage (true finding or false positive) is done by reading the code;
this script only counts.
"""

from __future__ import annotations

import ast
import sys
import time
from collections import Counter
from pathlib import Path

from vjplint.facts.collect import collect
from vjplint.settings.config import Config
from vjplint.lint.engine import PREFILTER_NAMES, lint_source
from vjplint.syntax.source import SourceError, decode, parse


def report(tree: Path) -> dict:
    files = sorted(tree.rglob("*.py"))
    candidates = definitions = crashes = 0
    codes: Counter = Counter()
    start = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        if not any(name in data for name in PREFILTER_NAMES):
            continue
        candidates += 1
        result = lint_source(str(path), data, Config())
        crashes += len(result.errors)
        for d in result.diagnostics:
            codes[d.code] += 1
            if d.code == "VJP900":
                try:
                    ast.parse(data)
                    crashes += 1  # CPython parses it but we did not
                except SyntaxError:
                    pass
        try:
            text = decode(data).text
            definitions += len(collect(parse(text), text.splitlines()).derivatives)
        except SourceError:
            pass
    return {"tree": tree.name, "files": len(files), "candidates": candidates, "definitions": definitions,
            "diagnostics": sum(codes.values()), "codes": dict(sorted(codes.items())), "crashes": crashes,
            "seconds": round(time.perf_counter() - start, 2)}


def main(argv: list) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Lint public JAX code bases and print the docs/realworld.md table.")
    parser.add_argument("trees", nargs="+", type=Path, metavar="TREE", help="one directory per code base")
    args = parser.parse_args(argv)
    missing = [str(t) for t in args.trees if not t.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    print("| code base | .py files | candidates | custom derivatives | diagnostics (by code) | crashes |")
    print("|---|---|---|---|---|---|")
    for tree in args.trees:
        r = report(tree)
        by_code = ", ".join(f"{c} {n}" for c, n in r["codes"].items()) or "-"
        print(f"| {r['tree']} | {r['files']} | {r['candidates']} | {r['definitions']} | {r['diagnostics']}"
              f" ({by_code}) | {r['crashes']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
