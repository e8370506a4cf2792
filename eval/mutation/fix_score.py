"""The fixes over the mutation evaluation: is every fixable hazard rewritten, clean and right?

    python eval/mutation/fix_score.py            # counts per fix code, one line per failure
    python eval/mutation/fix_score.py -v         # also every rewritten or refused module
    python eval/mutation/fix_score.py --json     # everything as JSON
    python eval/mutation/fix_score.py --held-out # only the held-out sets (heldout/, heldout2/ and their mutants)

On a copy of `cases/` and `bases/` (the tree is never written):

1. `vjplint check` (JSON, `--extend-select VJP106,VJP107`) says, per module, which findings carry
   a fix (safe or unsafe) and which say "(no automatic fix: <reason>)": a refusal with a reason.
2. `vjplint --fix --unsafe-fixes` rewrites the copy; `vjplint check` again: a rewritten module
   **re-lints clean** when no code it reports after was absent before, no code is reported more
   often, and the codes the fixes were for are reported less often.
3. Proof on JAX, two ways: `vjplint verify --unsafe-fixes` on the original modules proves each
   residual-plus-None rewrite (eager, jit, vmap, grad, jit(grad), vmap(grad); the moved
   arguments' gradients zero, the others equal to the original's; a custom_vjp nested in a
   function is reached through the function that calls it or the module-level name a factory's
   result is bound to); and every rewritten module goes through the mutation oracle's checks
   (`eval/oracle.py`: the same transformations against the module's float64 reference, as
   `label.py` labels it). A rewrite is **proven** when the oracle labels the rewritten module
   `ok`, or when it is a residual rewrite that `verify` proves (the oracle then may still see the
   mutant's other edit, or the gradient the moved argument had before the mutation: the rewrite
   keeps the original's derivative, which is what it claims). Anything else is **failed**: a
   rewrite that is not clean, that a check shows wrong, or that neither way proves.
4. Counts: modules with a fix on offer, rewritten, re-lint clean, proven, **failed**, refused with
   a reason, and hazards (JAX's labels) with no fix offered and no reason (most hazards have no
   automatic fix, as their rules' pages say); the same counts for the held-out set alone
   (`heldout/`, `heldout2/` and their mutants, `held_out` in manifest.json) on their own line, or alone with
   `--held-out`.

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
        if group == "bases":  # a held-out base lives in heldout/ or heldout2/ (manifest.json's path)
            out[Path(bases[rest]["path"]).relative_to("eval/mutation").as_posix()] = entry["label"]
        elif group == "mutants":
            out["cases/" + rest + ".py"] = entry["label"]
    return out


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="work in this directory (kept) instead of a temporary one")
    ap.add_argument("--held-out", action="store_true", help="count only the held-out set")
    args = ap.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vjplint-fix-score-"))
    original, fixed = work / "original", work / "fixed"
    for root in (original, fixed):
        if root.exists():
            shutil.rmtree(root)
        for part in ("cases", "bases", "heldout", "heldout2"):
            if (HERE / part).exists():
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
        rows.append({"module": f, "label": labels.get(f), "codes": sorted(fixed_codes), "clean": clean,
                     "new_or_more": worse, "not_fixed": unfixed, "oracle_failing": failing,
                     "verify": [(r["function"], r["status"], r["reason"]) for r in reports],
                     "proven": proven, "failed": not (clean and proven)})
    no_reason = sorted(f for f, label in labels.items() if label == "hazard" and f not in offered and f not in refused)
    held = _held_out()
    if args.held_out:
        rows = [r for r in rows if r["module"] in held]
        offered = {f: ds for f, ds in offered.items() if f in held}
        refused = {f: ds for f, ds in refused.items() if f in held}
        no_reason = [f for f in no_reason if f in held]
    summary = _summary(rows, offered, refused, no_reason)
    held_line = _summary([r for r in rows if r["module"] in held], {f: 1 for f in offered if f in held},
                         {f: 1 for f in refused if f in held}, [f for f in no_reason if f in held])
    per_code = collections.Counter(c for r in rows for c in r["codes"])
    if args.json:
        print(json.dumps({"summary": summary, "per_code": per_code, "rewritten": rows,
                          "refused": {f: [d["message"].split(NO_FIX, 1)[1].rstrip(")") for d in ds]
                                      for f, ds in refused.items()}}, indent=2))
        return 1 if summary["failed"] else 0
    for r in rows:
        if r["failed"] or args.verbose:
            state = "FAILED" if r["failed"] else "ok"
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
    if not args.held_out:
        print("held-out set: " + ", ".join(f"{k} {v}" for k, v in held_line.items() if not k.startswith(" ")))
    return 1 if summary["failed"] else 0


def _held_out() -> set:
    """The held-out modules, by their path under the copy (`heldout/<base>.py`, `cases/<op>/<base>.py`)."""
    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    return {Path(entry["path"]).relative_to("eval/mutation").as_posix()
            for group in ("bases", "mutants") for entry in manifest[group].values() if entry.get("held_out")}


def _summary(rows: List[Dict[str, Any]], offered: Dict[str, Any], refused: Dict[str, Any],
             no_reason: List[str]) -> Dict[str, int]:
    return {
        "modules with a fix on offer": len(offered),
        "rewritten": len(rows),
        "re-lint clean": sum(r["clean"] for r in rows),
        "proven on JAX": sum(r["proven"] for r in rows),
        "  by the oracle (module labelled ok)": sum(not r["oracle_failing"] for r in rows),
        "  by vjplint verify (residual rewrites)": sum(bool(r["verify"]) and all(s == "verified" for _, s, _ in r["verify"])
                                                       for r in rows),
        "failed": sum(r["failed"] for r in rows),
        "refused with a reason": len(refused),
        "hazards with no fix (no rule offers one)": len(no_reason),
    }


if __name__ == "__main__":
    sys.exit(main())
