"""The fixes over the mutation evaluation: is every fixable hazard rewritten, clean and right?

    python eval/mutation/fix_score.py            # counts per fix code, one line per failure
    python eval/mutation/fix_score.py -v         # also every rewritten or refused module
    python eval/mutation/fix_score.py --json     # everything as JSON

On a copy of `cases/` and `bases/` (the tree is never written):

1. `vjplint check` (JSON, `--extend-select VJP106,VJP107`) says, per module, which findings carry
   a fix (safe or unsafe) and which say "(no automatic fix: <reason>)": a refusal with a reason.
2. `vjplint --fix --unsafe-fixes` rewrites the copy; `vjplint check` again: a rewritten module
   **re-lints clean** when no code it reports after was absent before, no code is reported more
   often, and the codes the fixes were for are reported less often.
3. Proof on JAX, two ways: `vjplint verify --unsafe-fixes` on the original modules proves each
   residual-plus-None rewrite (eager, jit, vmap, grad, jit(grad), vmap(grad); the moved
   arguments' gradients zero, the others equal to the original's); and every rewritten module
   goes through the mutation oracle's checks (`eval/oracle.py`: the same transformations against
   the module's float64 reference, as `label.py` labels it). A rewrite is **proven** when the
   oracle labels the rewritten module `ok`, or when it is a residual rewrite that `verify` proves
   (the oracle then may still see the mutant's other edit, or the gradient the moved argument had
   before the mutation: the rewrite keeps the original's derivative, which is what it claims).
   A residual rewrite `verify` cannot run (a function nested in a factory, no input shape it can
   probe) is **unproven**, not failed, when the oracle sees every transformation run and the only
   differences from the unmutated base are gradients that are now exactly zero (the moved
   argument's: the mutant declared it never differentiated, and the rewrite keeps that).
4. Counts: modules with a fix on offer, rewritten, re-lint clean, proven, unproven, **failed** (a
   rewrite that is not clean, or that a check shows wrong), refused with a reason, and hazards
   (JAX's labels) with no fix offered and no reason (most hazards have no automatic fix, as their
   rules' pages say).

Needs JAX (CPU is enough); about five minutes on two busy cores.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
NO_FIX = "(no automatic fix: "


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "vjplint", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=3600)


def _lint(root: Path) -> Dict[str, List[Dict[str, Any]]]:
    proc = _cli("check", "--no-cache", "--output-format", "json", "--exit-zero", "--extend-select", "VJP106,VJP107",
                ".", cwd=root)
    assert proc.returncode == 0, proc.stderr
    out: Dict[str, List[Dict[str, Any]]] = collections.defaultdict(list)
    for d in json.loads(proc.stdout):
        out[Path(d["filename"]).as_posix()].append(d)
    return out


def _labels() -> Dict[str, str]:
    """JAX's label of every module, by its path under the copy (`cases/<op>/<base>.py`, `bases/<base>.py`)."""
    entries = json.loads((HERE / "labels.json").read_text(encoding="utf-8"))["entries"]
    bases = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))["bases"]
    out = {}
    for key, entry in entries.items():
        group, _, rest = key.partition("/")
        if group == "bases":  # a held-out base lives in heldout/ (manifest.json's path)
            out[Path(bases[rest]["path"]).relative_to("eval/mutation").as_posix()] = entry["label"]
        elif group == "mutants":
            out["cases/" + rest + ".py"] = entry["label"]
    return out


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="work in this directory (kept) instead of a temporary one")
    args = ap.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vjplint-fix-score-"))
    original, fixed = work / "original", work / "fixed"
    for root in (original, fixed):
        if root.exists():
            shutil.rmtree(root)
        for part in ("cases", "bases", "heldout"):
            shutil.copytree(HERE / part, root / part)
    try:
        return _score(original, fixed, args)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _score(original: Path, fixed: Path, args: argparse.Namespace) -> int:
    import label as labeller  # eval/mutation/label.py: the oracle in a child process

    labels = _labels()
    before = _lint(original)
    proc = _cli("--fix", "--unsafe-fixes", "--no-cache", "--extend-select", "VJP106,VJP107", ".", cwd=fixed)
    assert proc.returncode in (0, 1), proc.stderr
    after = _lint(fixed)
    offered = {f: [d for d in ds if d.get("fix")] for f, ds in before.items()}
    offered = {f: ds for f, ds in offered.items() if ds}
    refused = {f: [d for d in ds if NO_FIX in d["message"] and not d.get("fix")] for f, ds in before.items()}
    refused = {f: ds for f, ds in refused.items() if ds}
    rewritten = sorted(f for f in labels if (original / f).read_bytes() != (fixed / f).read_bytes())

    # Residual rewrites proven by `vjplint verify` (on the originals: it computes the fix itself).
    residual = sorted({f for f, ds in offered.items() for d in ds if d["code"] in ("VJP101", "VJP102")})
    verified: Dict[str, List[Dict[str, Any]]] = collections.defaultdict(list)
    if residual:
        proc = _cli("verify", "--unsafe-fixes", "--output-format", "json", "-j", "2", *residual, cwd=original)
        for r in json.loads(proc.stdout or "[]"):
            verified[Path(r["filename"]).as_posix()].append(r)
    runs = labeller.run_batch([str(fixed / f) for f in rewritten], timeout=1800.0) if rewritten else {}

    rows = []
    for f in rewritten:
        old = collections.Counter(d["code"] for d in before.get(f, []))
        new = collections.Counter(d["code"] for d in after.get(f, []))
        fixed_codes = collections.Counter(d["code"] for d in offered.get(f, []))
        worse = sorted(c for c in new if new[c] > old[c])
        unfixed = sorted(c for c in fixed_codes if new[c] >= old[c])
        clean = not worse and not unfixed
        run = runs.get(str(fixed / f), {"checks": {"missing": {"status": "raises", "detail": "no result"}}})
        failing = sorted(k for k, v in run["checks"].items() if v["status"] != "ok")
        reports = verified.get(f, [])
        by_verify = bool(reports) and all(r["status"] == "verified" for r in reports)
        proven = not failing or by_verify
        # Not proven, not failed: `verify` could not run the function (nested in a factory, no input
        # shape it could probe) and the oracle sees every transformation run, the only differences
        # being gradients that are now exactly zero (the moved argument's, as the rewrite says).
        unproven = not proven and bool(reports) and all(r["status"] == "unverified" for r in reports) and all(
            run["checks"][k]["status"] == "wrong" and _zero_gradient(run["checks"][k].get("detail", ""))
            for k in failing)
        rows.append({"module": f, "label": labels.get(f), "codes": sorted(fixed_codes), "clean": clean,
                     "new_or_more": worse, "not_fixed": unfixed, "oracle_failing": failing,
                     "verify": [(r["function"], r["status"], r["reason"]) for r in reports],
                     "proven": proven, "unproven": unproven and clean, "failed": not (clean and (proven or unproven))})
    no_reason = sorted(f for f, label in labels.items() if label == "hazard" and f not in offered and f not in refused)
    summary = {
        "modules with a fix on offer": len(offered),
        "rewritten": len(rows),
        "re-lint clean": sum(r["clean"] for r in rows),
        "proven on JAX": sum(r["proven"] for r in rows),
        "  by the oracle (module labelled ok)": sum(not r["oracle_failing"] for r in rows),
        "  by vjplint verify (residual rewrites)": sum(bool(r["verify"]) and all(s == "verified" for _, s, _ in r["verify"])
                                                       for r in rows),
        "unproven (verify cannot run it; the oracle sees only the moved gradients zero)": sum(r["unproven"] for r in rows),
        "failed": sum(r["failed"] for r in rows),
        "refused with a reason": len(refused),
        "hazards with no fix (no rule offers one)": len(no_reason),
    }
    per_code = collections.Counter(c for r in rows for c in r["codes"])
    if args.json:
        print(json.dumps({"summary": summary, "per_code": per_code, "rewritten": rows,
                          "refused": {f: [d["message"].split(NO_FIX, 1)[1].rstrip(")") for d in ds]
                                      for f, ds in refused.items()}}, indent=2))
        return 1 if summary["failed"] else 0
    for r in rows:
        if r["failed"] or r["unproven"] or args.verbose:
            state = "FAILED" if r["failed"] else "UNPROVEN" if r["unproven"] else "ok"
            notes = [f"clean={r['clean']}"]
            if r["new_or_more"]:
                notes.append("new/more " + ",".join(r["new_or_more"]))
            if r["not_fixed"]:
                notes.append("not fixed " + ",".join(r["not_fixed"]))
            notes.append("oracle=" + (",".join(r["oracle_failing"]) or "ok"))
            for fn, status, why in r["verify"]:
                notes.append(f"verify {fn}: {status}" + (f" ({why[:100]})" if status != "verified" else ""))
            print(f"{state:8} {r['module']} ({r['label']}; {', '.join(r['codes'])}): {'; '.join(notes)}")
    if args.verbose:
        for f, ds in sorted(refused.items()):
            for d in ds:
                print(f"refused {f}: {d['code']} {d['message'].split(NO_FIX, 1)[1].rstrip(')')}")
    print("fixes by code: " + ", ".join(f"{c} {n}" for c, n in sorted(per_code.items())))
    for k, v in summary.items():
        print(f"{k}: {v}")
    return 1 if summary["failed"] else 0


def _zero_gradient(detail: str) -> bool:
    """The oracle's "value [0.0, 0.0] != [0.5, -1.0]": what the rewritten module gives is all zeros."""
    got = detail.partition("value ")[2].partition(" != ")[0].strip("[] ")
    try:
        return bool(got) and all(float(x) == 0.0 for x in got.replace("[", "").replace("]", "").split(","))
    except ValueError:
        return False


if __name__ == "__main__":
    sys.exit(main())
