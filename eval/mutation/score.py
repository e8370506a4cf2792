"""Score vjplint on the mutation evaluation: recall on mutants JAX rejects, false positives on the rest.

    python eval/mutation/score.py             # per operator + overall, one summary line
    python eval/mutation/score.py -v          # also every mutant: found / MISSED / FP, with codes
    python eval/mutation/score.py --json      # everything as JSON
    python eval/mutation/score.py --spellings # also: the same hazards and bases in every spelling
    python eval/mutation/score.py --held-out  # only the held-out sets (heldout/, heldout2/, heldout3/, heldout4/, heldout5/, heldout6/, heldout7/, heldout8/, heldout9/, heldout10/, heldout11/ and their mutants)

The held-out bases (`heldout/`, `heldout2/`, `heldout3/`, `heldout4/`, `heldout5/`, `heldout6/`, `heldout7/`, `heldout8/`, `heldout9/`, `heldout10/` and `heldout11/`, `held_out` and `held_out_set` in manifest.json) are
scored apart: the per-operator table and the summary line are the original set's, as before; the
held-out sets get their own table and a line each, then one line for them together. Rules are
written against the original set and measured on the held-out ones.

Runs the real CLI (`python -m vjplint check --output-format json --extend-select VJP106,VJP107
--no-cache`) over `bases/` and `cases/`, and reads JAX's verdicts from `labels.json` (written by
`label.py`); never imports JAX or the modules. Kept apart from the report-based cases of
`eval/score.py`.

- A base (a correct definition adapted from a library) is a look-alike; any diagnostic on it is a
  false positive.
- A mutant JAX labels `hazard` is **found** when vjplint reports on it a code that it does not
  report on the mutant's base (the modules are small: one definition and its caller; a code the
  base already draws is the base's false positive, counted once, there).
- A mutant JAX labels `ok` is a look-alike: a code its base does not draw is a false positive.
- A `no-op` mutant (a statement JAX ignores, shown by an unchanged grad jaxpr) is neither: how many
  are flagged is printed apart, as in `eval/score.py`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import mutate  # noqa: E402  (ast only; no JAX)

LABELS = HERE / "labels.json"


def run_vjplint(paths: Sequence[Path]) -> Dict[str, List[Dict[str, Any]]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    cmd = [sys.executable, "-m", "vjplint", "check", "--output-format", "json", "--extend-select",
           "VJP106,VJP107", "--no-cache", "--exit-zero", *map(str, paths)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"vjplint failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    by_file: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for diag in json.loads(proc.stdout or "[]"):
        by_file[str((ROOT / diag["filename"]).resolve())].append(diag)
    return by_file


def codes(diags: List[Dict[str, Any]]) -> Set[str]:
    return {d["code"] for d in diags}


def _folders() -> List[Path]:
    return [p for p in (HERE / "bases", *mutate.HELD_OUT_SETS, HERE / "cases") if p.exists()]


def ratio(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b:.2f})" if b else "-"


def _in(entry: Dict[str, Any], held_out: bool, held_set: Optional[str]) -> bool:
    return bool(entry.get("held_out")) == held_out and (held_set is None or entry.get("held_out_set") == held_set)


def score(verbose: bool = False, held_out: bool = False, diags: Dict[str, List[Dict[str, Any]]] | None = None,
          held_set: Optional[str] = None) -> Dict[str, Any]:
    """The original set's scores, or the held-out sets' (`held_out=True`; one of them: `held_set`)."""
    manifest = json.loads(mutate.MANIFEST.read_text())
    labels = json.loads(LABELS.read_text())["entries"]
    manifest["bases"] = {s: b for s, b in manifest["bases"].items() if _in(b, held_out, held_set)}
    manifest["mutants"] = {k: m for k, m in manifest["mutants"].items() if _in(m, held_out, held_set)}
    base_paths = {stem: (ROOT / b["path"]).resolve() for stem, b in manifest["bases"].items()}
    mut_paths = {key: (ROOT / m["path"]).resolve() for key, m in manifest["mutants"].items()}
    if diags is None:
        diags = run_vjplint(_folders())
    base_codes = {stem: codes(diags.get(str(p), [])) for stem, p in base_paths.items()}
    per_op: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = []
    for stem in manifest["bases"]:
        flagged = bool(base_codes[stem])
        per_op["(bases)"]["ok"] += 1
        per_op["(bases)"]["fp"] += flagged
        rows.append({"key": f"bases/{stem}", "label": labels[f"bases/{stem}"]["label"], "codes": sorted(base_codes[stem]),
                     "verdict": "FP" if flagged else "silent"})
    for key, m in manifest["mutants"].items():
        label = labels[f"mutants/{key}"]["label"]
        got = codes(diags.get(str(mut_paths[key]), []))
        new = got - base_codes[m["base"]]
        op = per_op[m["operator"]]
        if label == "hazard":
            op["hazard"] += 1
            op["found"] += bool(new)
            verdict = "found" if new else "MISSED"
        elif label == "ok":
            op["ok"] += 1
            op["fp"] += bool(new)
            verdict = "FP" if new else "silent"
        else:
            op["noop"] += 1
            op["noop_flagged"] += bool(got)
            verdict = "no-op flagged" if got else "no-op silent"
        rows.append({"key": f"mutants/{key}", "label": label, "codes": sorted(got), "new_codes": sorted(new),
                     "verdict": verdict, "failing": labels[f"mutants/{key}"]["failing"]})
    total = defaultdict(int)
    for op in per_op.values():
        for k, v in op.items():
            total[k] += v
    return {"operators": {k: dict(v) for k, v in sorted(per_op.items())}, "overall": dict(total), "rows": rows}


def spellings_report() -> Dict[str, Any]:
    """Each spelling of every base (must stay silent) and every hazard found in its canonical form
    or not (must be found): what vjplint reports once the definition is respelled."""
    manifest = json.loads(mutate.MANIFEST.read_text())
    labels = json.loads(LABELS.read_text())["entries"]
    manifest["bases"] = {s: b for s, b in manifest["bases"].items() if not b.get("held_out")}
    manifest["mutants"] = {k: m for k, m in manifest["mutants"].items() if not m.get("held_out")}
    tmp = Path(tempfile.mkdtemp(prefix="vjplint-spell-score-"))
    subjects = {f"bases/{s}": ROOT / b["path"] for s, b in manifest["bases"].items()}
    subjects.update({f"mutants/{k}": ROOT / m["path"] for k, m in manifest["mutants"].items()
                     if labels[f"mutants/{k}"]["label"] == "hazard"})
    files: Dict[str, Dict[str, Path]] = defaultdict(dict)
    for key, path in subjects.items():
        source = path.read_text(encoding="utf-8")
        for sp in mutate.SPELLINGS:
            text = mutate.spell(source, sp)
            if text is not None:
                target = tmp / sp / (key.replace("/", "__") + ".py")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
                files[sp][key] = target.resolve()
        for sp in mutate.MODULE_SPELLINGS:  # two modules: the rules imported from `<key>_rules.py`
            split = mutate.split_rules(source, sp)
            if split is not None:
                stem = key.replace("/", "__")
                target = tmp / sp / (stem + ".py")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(split[0].replace(mutate.RULES_MODULE, stem + "_rules"), encoding="utf-8")
                (tmp / sp / (stem + "_rules.py")).write_text(split[1], encoding="utf-8")
                files[sp][key] = target.resolve()
    diags = run_vjplint([tmp])
    base_paths = {s: (ROOT / b["path"]).resolve() for s, b in manifest["bases"].items()}
    canon = run_vjplint(list(base_paths.values()))
    out: Dict[str, Any] = {}
    for sp, by_key in sorted(files.items()):
        r = {"bases": 0, "bases_flagged": [], "hazards": 0, "hazards_found": 0, "missed": []}
        for key, path in by_key.items():
            got = codes(diags.get(str(path), []))
            if key.startswith("bases/"):
                r["bases"] += 1
                if got:
                    r["bases_flagged"].append(f"{key} {sorted(got)}")
            else:
                base = manifest["mutants"][key[len('mutants/'):]]["base"]
                spelled_base = by_key.get(f"bases/{base}")
                base_got = codes(diags.get(str(spelled_base), [])) if spelled_base else codes(canon.get(str(base_paths[base]), []))
                r["hazards"] += 1
                if got - base_got:
                    r["hazards_found"] += 1
                else:
                    r["missed"].append(key)
        out[sp] = r
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--spellings", action="store_true")
    ap.add_argument("--held-out", action="store_true", help="only the held-out set")
    ns = ap.parse_args(argv)
    diags = run_vjplint(_folders())
    res = score(held_out=ns.held_out, diags=diags)
    held = None if ns.held_out else score(held_out=True, diags=diags)
    if held is not None and held["rows"]:
        res["held_out"] = held
    sets = {folder.name: score(held_out=True, diags=diags, held_set=folder.name) for folder in mutate.HELD_OUT_SETS}
    res["held_out_sets"] = {name: r["overall"] for name, r in sets.items() if r["rows"]}
    if ns.spellings:
        res["spellings"] = spellings_report()
    if ns.json:
        print(json.dumps(res, indent=1))
        return 0
    if ns.verbose:
        for r in res["rows"] + (res["held_out"]["rows"] if "held_out" in res else []):
            extra = f" new={','.join(r.get('new_codes', []))}" if r.get("new_codes") else ""
            print(f"{r['verdict']:14} {r['label']:6} {r['key']:55} {','.join(r['codes'])}{extra}")
        print()

    def table(r: Dict[str, Any], title: str) -> None:
        print(f"{title:24} {'recall':>16} {'false positives':>18}")
        for name, op in r["operators"].items():
            line = f"{name:24} {ratio(op.get('found', 0), op.get('hazard', 0)):>16} {ratio(op.get('fp', 0), op.get('ok', 0)):>18}"
            if op.get("noop"):
                line += f"   no-op flagged {op.get('noop_flagged', 0)}/{op['noop']}"
            print(line)
        t = r["overall"]
        print(f"{'overall':24} {ratio(t.get('found', 0), t.get('hazard', 0)):>16} {ratio(t.get('fp', 0), t.get('ok', 0)):>18}")

    table(res, "held-out operator" if ns.held_out else "operator")
    t = res["overall"]
    if "held_out" in res:
        print()
        table(res["held_out"], "held-out operator")
    if ns.spellings:
        print()
        print(f"{'spelling':18} {'hazards found':>16} {'bases flagged':>14}")
        for sp, r in res["spellings"].items():
            print(f"{sp:18} {ratio(r['hazards_found'], r['hazards']):>16} {len(r['bases_flagged']):>7}/{r['bases']}")
    for name, h in res["held_out_sets"].items() if ns.held_out or "held_out" in res else ():
        print(f"held-out set {name}/: recall {ratio(h.get('found', 0), h.get('hazard', 0))}, FP {ratio(h.get('fp', 0), h.get('ok', 0))}")
    print(f"mutation eval{' (held-out)' if ns.held_out else ''}: recall {ratio(t.get('found', 0), t.get('hazard', 0))}, "
          f"FP {ratio(t.get('fp', 0), t.get('ok', 0))}")
    if "held_out" in res:
        h = res["held_out"]["overall"]
        print(f"held-out: recall {ratio(h.get('found', 0), h.get('hazard', 0))}, FP {ratio(h.get('fp', 0), h.get('ok', 0))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
