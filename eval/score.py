"""Score vjplint on the evaluation cases: recall on hazards, false positives on look-alikes.

    python eval/score.py                       # table per family + one summary line
    python eval/score.py --json                # the same as JSON
    python eval/score.py --written-before REV  # also: only cases written before commit REV
    python eval/score.py --references DIR      # score references.csv from git clones under DIR

Runs the real CLI (`python -m vjplint check --output-format json --extend-select VJP106,VJP107`)
over eval/cases. A hazard is found when a diagnostic's line range overlaps one of the lines the
case marks with `# eval: span`; any diagnostic on a look-alike is a false positive. A case JAX
labels `no-op` (a statement shown to change nothing) is counted apart: flagged or not. Labels come
from eval/labels.json (JAX's verdict, written by eval/oracle.py), not from the author's `expect`;
disagreements are listed. Never imports JAX or the cases.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

EVAL_DIR = Path(__file__).resolve().parent
ROOT = EVAL_DIR.parent
CASES = EVAL_DIR / "cases"
LABELS = EVAL_DIR / "labels.json"
SPAN_MARK = "# eval: span"
sys.path.insert(0, str(EVAL_DIR))
from oracle import case_files, read_meta  # noqa: E402 (reads cases with ast; no JAX)


def span_lines(path: Path) -> Set[int]:
    return {i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if SPAN_MARK in line}


def run_vjplint(paths: Sequence[Path]) -> Dict[str, List[Dict[str, Any]]]:
    """Diagnostics per resolved file path, from the real CLI."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    cmd = [sys.executable, "-m", "vjplint", "check", "--output-format", "json", "--extend-select",
           "VJP106,VJP107", "--no-cache", "--exit-zero", *map(str, paths)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"vjplint failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    by_file: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for diag in json.loads(proc.stdout or "[]"):
        by_file[str((ROOT / diag["filename"]).resolve())].append(diag)
    return by_file


def is_ancestor(commit: str, rev: str) -> bool:
    """`commit` was HEAD strictly before `rev` was made (it is an ancestor of rev's parent)."""
    proc = subprocess.run(["git", "merge-base", "--is-ancestor", commit, f"{rev}^"], cwd=ROOT,
                          capture_output=True)
    return proc.returncode == 0


REFERENCES = EVAL_DIR / "references.csv"


def _clone(root: Path, repo: str) -> Optional[Path]:
    """A git directory for owner/name under root: owner+name/repo (mirror layout) or owner/name."""
    owner, name = repo.split("/")
    for cand in (root / f"{owner}+{name}" / "repo", root / owner / name, root / name):
        if cand.exists():
            return cand
    return None


def _extent(source: str, line: int) -> Tuple[int, int]:
    """Lines of the top-level definition (decorators included) that starts at or contains `line`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign)):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            if first <= line <= (node.end_lineno or node.lineno) and not isinstance(node, ast.ClassDef):
                return first, node.end_lineno or node.lineno
    return line, line


def score_references(root: Path) -> Dict[str, Any]:
    """Run vjplint on each referenced file at its commit; a hazard row is found when a diagnostic
    falls inside the definition, an ok row is a false positive when one does."""
    rows = list(csv.DictReader(REFERENCES.open(encoding="utf-8")))
    out: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        files: Dict[Tuple[str, str, str], Path] = {}
        for r in rows:
            clone = _clone(root, r["repo"])
            key = (r["repo"], r["commit"], r["path"])
            if clone is None or key in files:
                continue
            shown = subprocess.run(["git", "-C", str(clone), "show", f"{r['commit']}:{r['path']}"],
                                   capture_output=True, text=True)
            if shown.returncode == 0:
                dest = Path(tmp) / r["repo"].replace("/", "+") / r["commit"][:12] / r["path"]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(shown.stdout, encoding="utf-8")
                files[key] = dest
        diags = run_vjplint([Path(tmp)]) if files else {}
        for r in rows:
            path = files.get((r["repo"], r["commit"], r["path"]))
            if path is None:
                out.append({**r, "status": "unavailable"})
                continue
            lo, hi = _extent(path.read_text(encoding="utf-8"), int(r["line"]))
            hits = sorted({d["code"] for d in diags.get(str(path.resolve()), [])
                           if d["location"]["row"] <= hi and d["end_location"]["row"] >= lo})
            status = {"hazard": "found" if hits else "missed", "ok": "fp" if hits else "silent"}.get(
                r["label"], "flagged" if hits else "silent")
            out.append({**r, "extent": [lo, hi], "codes": hits, "status": status})
    def count(label: str, *statuses: str) -> int:
        return sum(x["label"] == label and x["status"] in statuses for x in out)

    return {"rows": out, "hazards_found": count("hazard", "found"), "hazards": count("hazard", "found", "missed"),
            "fp": count("ok", "fp"), "ok": count("ok", "fp", "silent"),
            "unavailable": sum(x["status"] == "unavailable" for x in out)}


def evaluate(labels: Dict[str, Any], diags: Dict[str, List[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    rows = []
    for path in case_files():
        meta = read_meta(path)
        entry = labels.get("cases", {}).get(meta["id"])
        label = entry["label"] if entry else None
        lines = span_lines(path)
        found = diags.get(str(path.resolve()), [])
        hits = [d for d in found if any(d["location"]["row"] <= ln <= d["end_location"]["row"] for ln in lines)]
        rows.append({
            "id": meta["id"], "family": meta["family"], "expect": meta["expect"], "label": label,
            "written_at_commit": meta.get("written_at_commit", ""), "source": meta.get("source", ""),
            "span": sorted(lines), "codes": sorted({d["code"] for d in found}),
            "hit_codes": sorted({d["code"] for d in hits}),
            "found": bool(hits) if label == "hazard" else None,
            "false_positive": bool(found) if label == "ok" else None,
            "flagged": bool(hits) if label == "no-op" else None,
        })
    return rows


def tally(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    fams: Dict[str, Dict[str, int]] = defaultdict(
        lambda: {"hazards": 0, "found": 0, "lookalikes": 0, "fp": 0, "noops": 0, "noops_flagged": 0})
    fams["overall"]  # present even for an empty selection
    for r in rows:
        for key in (r["family"], "overall"):
            f = fams[key]
            if r["label"] == "hazard":
                f["hazards"] += 1
                f["found"] += bool(r["found"])
            elif r["label"] == "ok":
                f["lookalikes"] += 1
                f["fp"] += bool(r["false_positive"])
            elif r["label"] == "no-op":
                f["noops"] += 1
                f["noops_flagged"] += bool(r["flagged"])
    out = {}
    for name, f in sorted(fams.items(), key=lambda kv: (kv[0] == "overall", kv[0])):
        out[name] = {**f, "recall": f["found"] / f["hazards"] if f["hazards"] else None,
                     "fp_rate": f["fp"] / f["lookalikes"] if f["lookalikes"] else None}
    return out


def summary_line(t: Dict[str, Any], prefix: str = "eval") -> str:
    o = t["overall"]
    rec = f"{o['recall']:.2f}" if o["recall"] is not None else "n/a"
    fp = f"{o['fp_rate']:.2f}" if o["fp_rate"] is not None else "n/a"
    return f"{prefix}: recall {o['found']}/{o['hazards']} ({rec}), FP {o['fp']}/{o['lookalikes']} ({fp})"


def table(t: Dict[str, Any]) -> str:
    lines = [f"{'family':16} {'recall':>14} {'false positives':>18}"]
    for name, f in t.items():
        rec = f"{f['found']}/{f['hazards']}" + (f" ({f['recall']:.2f})" if f["recall"] is not None else "")
        fp = f"{f['fp']}/{f['lookalikes']}" + (f" ({f['fp_rate']:.2f})" if f["fp_rate"] is not None else "")
        lines.append(f"{name:16} {rec:>14} {fp:>18}")
    noops = t.get("overall", {}).get("noops", 0)
    if noops:
        flagged = t["overall"]["noops_flagged"]
        lines.append(f"\nno-op statements (JAX ran each case with and without it: same checks, same grad "
                     f"jaxpr): {flagged}/{noops} flagged; counted neither as hazards nor as look-alikes")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--written-before", metavar="REV",
                    help="also score the cases written (written_at_commit) before commit REV")
    ap.add_argument("--references", metavar="DIR", type=Path,
                    help="score references.csv against git clones under DIR (owner+name/repo or owner/name)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every case")
    ns = ap.parse_args(argv)
    labels = json.loads(LABELS.read_text(encoding="utf-8")) if LABELS.exists() else {"cases": {}}
    rows = evaluate(labels, run_vjplint([CASES]))
    unlabelled = [r["id"] for r in rows if r["label"] is None]
    disagree = [r for r in rows if r["label"] is not None and r["label"] != r["expect"]]
    result: Dict[str, Any] = {"jax_version": labels.get("jax_version"), "families": tally(rows),
                              "unlabelled": unlabelled,
                              "disagreements": [{"id": r["id"], "expect": r["expect"], "label": r["label"]}
                                                for r in disagree],
                              "cases": rows}
    lines = [summary_line(result["families"])]
    if ns.written_before:
        before = [r for r in rows if r["written_at_commit"] and is_ancestor(r["written_at_commit"], ns.written_before)]
        result["written_before"] = {"rev": ns.written_before, "count": len(before), "families": tally(before),
                                    "ids": [r["id"] for r in before]}
        lines.insert(0, summary_line(result["written_before"]["families"], f"eval (written before {ns.written_before})"))
    if ns.references:
        refs = score_references(ns.references)
        result["references"] = refs
        lines.insert(0, f"references: hazards found {refs['hazards_found']}/{refs['hazards']}, "
                        f"FP {refs['fp']}/{refs['ok']} ({refs['unavailable']} rows without a clone)")
    result["summary"] = lines[-1]
    if ns.json:
        print(json.dumps(result, indent=1))
        return 0
    if ns.verbose:
        for r in rows:
            verdict = {True: "found", False: "MISSED"}.get(r["found"]) if r["label"] == "hazard" else (
                ("flagged" if r["flagged"] else "silent") if r["label"] == "no-op" else
                "FP" if r["false_positive"] else "silent")
            print(f"{r['label'] or '?':6} {verdict:6} {r['id']:50} {','.join(r['codes'])}")
        print()
    print(table(result["families"]))
    if ns.written_before:
        print(f"\nwritten before {ns.written_before} ({result['written_before']['count']} cases):")
        print(table(result["written_before"]["families"]))
    if ns.references:
        print("\nreferences.csv:")
        for r in result["references"]["rows"]:
            print(f"  {r['status']:11} {r['label']:6} {r['repo']}:{r['path']}:{r['line']} {','.join(r.get('codes', []))}")
    if disagree:
        print("\nJAX's label differs from the author's expectation (JAX's label is used):")
        for r in disagree:
            print(f"  {r['id']}: expected {r['expect']}, JAX says {r['label']}")
    if unlabelled:
        print(f"\nunlabelled (run eval/oracle.py): {', '.join(unlabelled)}")
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
