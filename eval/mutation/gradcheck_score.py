"""Score `vjplint check-grads` on the mutation evaluation (issue #35).

Copies the bases and a sample of mutants (the first N of each operator, by name; 4 by default) to
a temporary directory, runs `vjplint check-grads --report` on each set, and scores with the JAX
labels of labels.json (eval/mutation/label.py): a hazard counts as reported when its mutant draws
a VJP501-VJP504 error (or warning) its base does not; a false failure is an error on a correct
base or on an `ok` mutant. A second count, by finding, is the one for a base whose rule is not the
true gradient on purpose (it gives `eval_grad_reference`): a mutant is found when its report holds a
finding its base's does not (another code, transform or order, argument, or a raise where the base
gave a value mismatch), not when it repeats the base's own (docs/check-grads.md).

    python eval/mutation/gradcheck_score.py                  # run both sets, then score (-j 2)
    python eval/mutation/gradcheck_score.py -j 12 --out DIR  # keep the reports in DIR
    python eval/mutation/gradcheck_score.py --score DIR      # score reports already in DIR
    python eval/mutation/gradcheck_score.py --per-operator 0 --set heldout3   # every mutant of a held-out set
    python eval/mutation/gradcheck_score.py --per-operator 0 --set heldout4 --operators creator_swapped  # one operator
    python eval/mutation/gradcheck_score.py --record         # `check-grads --record -- pytest` on each set:
                                                             # the cases' usage tests (usage_tests.py) record
                                                             # and the tests' process checks what they called

It runs JAX (through the CLI, in subprocesses): about 25 min on 2 busy cores at -j 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHECK_CODES = {"VJP501", "VJP502", "VJP503", "VJP504"}


def _in_set(entry: dict, which: str) -> bool:
    """Whether a manifest entry belongs to the set `which`: "original" (not held out) or a held-out set's folder."""
    return entry.get("held_out_set", "heldout" if entry.get("held_out") else "original") == which


def sample(manifest: dict, per_operator: int, which: str = "original") -> list:
    """The first `per_operator` mutants of each operator (by name) in the set `which`; all of them with 0."""
    by_op = defaultdict(list)
    for key, entry in manifest["mutants"].items():
        if not _in_set(entry, which):
            continue  # each set is scored apart
        by_op[entry["operator"]].append(key)
    return sorted(k for keys in by_op.values() for k in sorted(keys)[:per_operator or None])


def prepare(out: Path, per_operator: int, missed_in: Optional[Path] = None, which: str = "original",
            modules: Optional[list] = None, operators: Optional[list] = None) -> tuple:
    manifest = json.loads((HERE / "manifest.json").read_text())
    bases = sorted(name for name, entry in manifest["bases"].items() if _in_set(entry, which)
                   and (not modules or name in modules))
    folder = HERE / ("bases" if which == "original" else which)
    (out / "bases").mkdir(parents=True, exist_ok=True)
    for name in bases:
        shutil.copy(folder / f"{name}.py", out / "bases" / f"{name}.py")
        _copy_usage_test(folder / f"{name}.py", out / "bases")
    mutants = sample(manifest, per_operator, which)
    if modules:  # only these bases and their mutants
        mutants = [k for k in mutants if k.rsplit("/", 1)[-1] in modules]
    if operators:  # only these operators' mutants
        mutants = [k for k in mutants if k.split("/", 1)[0] in operators]
    if missed_in is not None:  # rerun only the hazards a previous run missed (add them to its count)
        labels = json.loads((HERE / "labels.json").read_text())["entries"]
        st, diags = verdicts(missed_in / "sample.json")
        _, bdiags = verdicts(missed_in / "bases.json")
        bw = {p.stem: codes(d, {"error", "warning"}) for p, d in bdiags.items()}
        found = {f"{p.parent.name}/{p.stem}" for p in st if codes(diags.get(p, []), {"error", "warning"}) - bw.get(p.stem, set())}
        mutants = [k for k in mutants if labels.get(f"mutants/{k}", {}).get("label") == "hazard" and k not in found]
    for key in mutants:
        dest = out / "sample" / f"{key}.py"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / manifest["mutants"][key]["path"], dest)
        _copy_usage_test(ROOT / manifest["mutants"][key]["path"], dest.parent)
    return bases, mutants


def _copy_usage_test(case: Path, directory: Path) -> None:
    test = case.with_name(f"test_usage_{case.stem}.py")
    if test.is_file():
        shutil.copy(test, directory / test.name)


def run(out: Path, which: str, jobs: int, timeout: int, record: bool = False) -> float:
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    start = time.monotonic()
    with open(out / f"{which}.out", "w") as stdout, open(out / f"{which}.err", "w") as stderr:
        tail = (["--record", "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--import-mode=importlib", "-n", str(jobs), str(out / which)] if record else ["--no-recorded"])
        subprocess.run([sys.executable, "-m", "vjplint", "check-grads", "-j", str(jobs), "--timeout", str(timeout),
                        "--output-format", "concise", "--report", str(out / f"{which}.json"),
                        str(out / which)] + tail, env=env, stdout=stdout, stderr=stderr, cwd=out)
    return time.monotonic() - start


REACH = "can only reach module-level functions"


def verdicts(report: Path, reasons: Optional[dict] = None):
    status, diags = {}, defaultdict(list)
    for row in json.loads(report.read_text()):
        f = (report.parent / row["filename"]).resolve()  # shown relative to the run's directory
        if reasons is not None and row["status"] == "unverified":
            reasons[f] = row.get("reason", "")
        if f not in status or row["status"] in ("failed", "warned"):
            status[f] = row["status"]
        for check in row["checks"]:
            if check.get("status") == "failed" and check.get("code"):
                diags[f].append((check["code"], check.get("severity", "error"),
                                 check.get("message") or check.get("detail") or ""))
    return status, diags


def _kind(check: dict) -> str:
    """What sort of finding a failed check is: a "may" (a warning), a raise, a dtype, or a value mismatch."""
    detail = check.get("message") or check.get("detail") or ""
    if check.get("severity", "error") == "warning":
        return "may"
    if re.search(r"\braises\b", detail):
        return "raise"
    if "comes back as" in detail:
        return "dtype"
    return "value"


def findings(report: Path) -> dict:
    """Each module's findings, as what a reader would tell apart: (function, code, check -- the transform
    and order, or `call`/`registration` --, the arguments the message names, kind). The values and the
    sizes of the error are left out: a mutant whose report differs from its base's only in them repeats
    the base's finding."""
    out = defaultdict(set)
    for row in json.loads(report.read_text()):
        f = (report.parent / row["filename"]).resolve()
        names = {i.get("name") for i in row.get("inputs", []) if isinstance(i, dict)}
        for check in row["checks"]:
            if check.get("status") != "failed" or check.get("code") not in CHECK_CODES:
                continue
            detail = check.get("message") or check.get("detail") or ""
            args = frozenset(t for t in re.findall(r"`([^`]+)`", detail.split(" at ")[0])
                             if t in names or t.startswith("output"))
            out[f].add((row.get("function", ""), check["code"], check.get("name", ""), args, _kind(check)))
    return out


def _deliberate(path: Path) -> bool:
    try:
        return "def eval_grad_reference" in path.read_text()
    except OSError:
        return False


def codes(diags, severities) -> set:
    return {c for c, s, _ in diags if c in CHECK_CODES and s in severities}


def score(out: Path, verbose: bool) -> dict:
    labels = json.loads((HERE / "labels.json").read_text())["entries"]
    reasons: dict = {}
    bst, bdiag = verdicts(out / "bases.json", reasons)
    mst, mdiag = verdicts(out / "sample.json", reasons)
    base_codes = {p.stem: (codes(d, {"error"}), codes(d, {"error", "warning"})) for p, d in bdiag.items()}
    rows = []
    for p, status in sorted(mst.items()):
        key = f"mutants/{p.parent.name}/{p.stem}"
        label = labels.get(key, {}).get("label")
        be, bw = base_codes.get(p.stem, (set(), set()))
        new_e = codes(mdiag.get(p, []), {"error"}) - be
        new_w = codes(mdiag.get(p, []), {"error", "warning"}) - bw
        # An error where the base only warns is one the base does not draw (mjx_cylinder_sdf's base
        # warns for its discarded `size` tangent; a mutant breaking the kept tangent fails).
        rows.append((key, label, status, sorted(new_e), sorted(new_w | new_e)))
    hazards = [r for r in rows if r[1] == "hazard"]
    # Finer: a raise (JAX raising with the rule) where the base's finding of that code is a mismatch
    # (a base whose rule is deliberately not the gradient: netket_expect's score-function bwd).
    base_raises = {p.stem: {c for c, s, m in d if " raises " in m} for p, d in bdiag.items()}
    raised_new = {f"mutants/{p.parent.name}/{p.stem}" for p, d in mdiag.items()
                  if {c for c, s, m in d if s == "error" and " raises " in m and c in CHECK_CODES}
                  - base_raises.get(p.stem, set())}
    # A definition whose rule is not the true gradient on purpose (a gradient scaling, a surrogate: the
    # module gives `eval_grad_reference`) is not "meant to give the true gradient": counted apart.
    deliberate = {p.stem for p in bst if _deliberate(p)} | {f"mutants/{p.parent.name}/{p.stem}" for p in mst
                                                             if _deliberate(p)}
    ok = [r for r in rows if r[1] == "ok" and r[0] not in deliberate]
    # By finding (the count for a base whose rule is not the true gradient on purpose, and the same
    # rule for every base): a mutant is found when its report holds a finding its base's does not --
    # another code, another transform or order, another argument, another kind (a raise where the base
    # gave a value mismatch) --, not when it repeats the base's own. For a base with no finding this is
    # the first figure's "a code the base does not draw".
    bfind = {p.stem: f for p, f in findings(out / "bases.json").items()}
    mfind = findings(out / "sample.json")
    new_finding = {f"mutants/{p.parent.name}/{p.stem}": bool(f - bfind.get(p.stem, set())) for p, f in mfind.items()}
    deliberate_bases = {p.stem for p in bst if _deliberate(p)}
    of_deliberate = [r for r in hazards if r[0].rsplit("/", 1)[-1] in deliberate_bases]
    bad_bases = sorted((p.stem, sorted(codes(d, {"error"})), sorted(codes(d, {"warning"})))
                       for p, d in bdiag.items() if codes(d, {"error", "warning"}) and p.stem not in deliberate)
    result = {
        "bases": len(bst), "base_statuses": dict(Counter(bst.values())),
        "deliberate_not_true_gradient": len(deliberate),
        "mutants": len(rows), "mutant_labels": dict(Counter(r[1] for r in rows)),
        "hazards": len(hazards),
        "hazards_reported": sum(bool(r[4]) for r in hazards),
        "hazards_reported_as_errors": sum(bool(r[3]) for r in hazards),
        "hazards_reported_or_a_new_raise": sum(bool(r[4]) or r[0] in raised_new for r in hazards),
        "hazards_reported_by_finding": sum(new_finding.get(r[0], False) for r in hazards),
        "hazards_of_deliberate_bases": len(of_deliberate),
        "hazards_of_deliberate_bases_reported": sum(bool(r[4]) for r in of_deliberate),
        "hazards_of_deliberate_bases_reported_by_finding": sum(new_finding.get(r[0], False) for r in of_deliberate),
        "hazards_of_true_gradient_bases_reported": sum(bool(r[4]) for r in hazards if r not in of_deliberate),
        "ok_mutants_with_a_new_finding": sum(new_finding.get(r[0], False) for r in ok),
        "hazards_missed_by_status": dict(Counter(r[2] for r in hazards if not r[4])),
        "bases_with_an_error": sum(bool(e) for _, e, _ in bad_bases),
        "bases_with_an_error_or_warning": bad_bases,
        "ok_mutants_with_a_new_error": sum(bool(r[3]) for r in ok),
        "ok_mutants_with_a_new_error_or_warning": sum(bool(r[4]) for r in ok),
        "missed": [r[0] + " (" + str(r[2]) + ")" for r in hazards if not r[4]],
        "not_checked": sum(s == "unverified" for s in list(bst.values()) + list(mst.values())),
        "not_checked_for_reachability": sum(REACH in r for r in reasons.values()),
    }
    h = max(1, result["hazards"])
    print(f"bases: {result['bases']} {result['base_statuses']}; with an error: {result['bases_with_an_error']} "
          f"(of those meant to give the true gradient; {len(deliberate)} modules are not, on purpose)")
    for stem, e, w in bad_bases:
        print(f"   {stem}: errors {e} warnings {w}")
        if verbose:
            for p, d in bdiag.items():
                if p.stem == stem:
                    for c, s, m in d:
                        print(f"      {c} {s}: {m[:300]}")
    print(f"mutants: {result['mutants']} {result['mutant_labels']}")
    print(f"hazards reported: {result['hazards_reported']}/{result['hazards']} ({result['hazards_reported'] / h:.2f}),"
          f" as errors {result['hazards_reported_as_errors']}; missed by status {result['hazards_missed_by_status']}")
    print(f"hazards reported, counting also a raise where the base's finding of that code is not one: "
          f"{result['hazards_reported_or_a_new_raise']}/{result['hazards']}")
    t = result["hazards"] - result["hazards_of_deliberate_bases"]
    print(f"hazards reported by finding (a finding the base's report does not hold: another code, transform or "
          f"order, argument, or kind): {result['hazards_reported_by_finding']}/{result['hazards']} "
          f"({result['hazards_reported_by_finding'] / h:.2f}); of bases whose rule is not the true gradient on "
          f"purpose: {result['hazards_of_deliberate_bases_reported_by_finding']}/{result['hazards_of_deliberate_bases']}"
          f" by finding, {result['hazards_of_deliberate_bases_reported']} by code; of the others: "
          f"{result['hazards_of_true_gradient_bases_reported']}/{t} by code")
    print(f"modules not checked: {result['not_checked']}, for reachability: {result['not_checked_for_reachability']}")
    print(f"ok mutants with a new error: {result['ok_mutants_with_a_new_error']}"
          f" (error or warning: {result['ok_mutants_with_a_new_error_or_warning']}; a new finding of any"
          f" severity: {result['ok_mutants_with_a_new_finding']})")
    for r in rows:
        if (r[1] == "hazard" and not r[4]) or (r[1] == "ok" and r[4]):
            print("  ", "MISSED" if r[1] == "hazard" else "FALSE", r[0], r[2],
                  "(found by finding)" if r[1] == "hazard" and new_finding.get(r[0]) else "")
        elif verbose and r[1] == "hazard":
            print("   found", r[0], r[4])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--per-operator", type=int, default=4, help="mutants per operator (0: every mutant of the set)")
    ap.add_argument("--set", dest="which", default="original", choices=("original", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11"),
                    help="the original set (bases/ and its mutants) or one held-out set")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--out", type=Path, help="keep the copies and reports here (default: a temporary directory)")
    ap.add_argument("--score", type=Path, help="only score the reports in this directory")
    ap.add_argument("--only", choices=("bases", "sample"), help="run one set only")
    ap.add_argument("--missed-in", type=Path, help="sample only the hazards the run in this directory missed")
    ap.add_argument("--record", action="store_true",
                    help="check-grads --record -- pytest on the cases' usage tests (eval/mutation/usage_tests.py)")
    ap.add_argument("--modules", nargs="+", metavar="BASE",
                    help="only these bases (by name, e.g. netket_expect) and their mutants")
    ap.add_argument("--operators", nargs="+", metavar="OP",
                    help="only these operators' mutants (by name, e.g. creator_swapped), with every base")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.score:
        score(args.score, args.verbose)
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="vjplint-gradcheck-score-"))
    out = out.resolve()
    bases, mutants = prepare(out, args.per_operator, args.missed_in, args.which, args.modules, args.operators)
    print(f"{len(bases)} bases, {len(mutants)} mutants in {out}", flush=True)
    for which in ("bases", "sample"):
        if args.only in (None, which):
            print(f"{which}: {run(out, which, args.jobs, args.timeout, args.record):.0f} s", flush=True)
    if args.only is None:
        score(out, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
