"""Label the mutation evaluation's modules by running them on JAX.

    python eval/mutation/label.py                 # bases, mutants, spelled bases -> labels.json
    python eval/mutation/label.py --jobs 2        # worker processes (each imports JAX once)
    python eval/mutation/label.py --only mutants/ct_order   # re-label a subset (merged into labels.json)
    python eval/mutation/label.py --held-out      # label only the held-out bases and their mutants (merged)
    python eval/mutation/label.py --held-out heldout3   # only one held-out set (its folder's name)
    python eval/mutation/label.py --held-out heldout3 --missing   # only its mutants not yet labelled

Each module goes through `eval/oracle.py`'s checks (eager, jit, vmap, grad, jit(grad), vmap(grad),
plus grad(jit) for custom_vjp and jvp/jacfwd for custom_jvp bases, and a mutant's own
`eval_custom` checks) against its float64 numpy reference (finite differences, or an analytic
gradient where the base's rule is deliberately not the true derivative). A module is a hazard
when any check raises or differs. A batch of modules shares one process (JAX imported once);
a batch that dies or times out is re-run one module per process.

A `direct_linearize` mutant only adds a flag statement; it is labelled `no-op` when every check
passes and `make_jaxpr(grad(...))` prints the same text as for its base (JAX shows the statement
changes nothing), as `eval/oracle.py` does with its span removed.

Spelled bases (every spelling operator applied to every base) are labelled too: a spelling is
meant to change nothing, and JAX is asked to confirm it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
LABELS = HERE / "labels.json"
MARK = "@@LABEL@@"


def child(paths: List[str]) -> None:
    import oracle  # eval/oracle.py

    for p in paths:
        try:
            res = oracle.run_case(Path(p))
        except Exception as exc:  # the oracle itself failed on this module
            res = {"checks": {"oracle": {"status": "raises", "detail": f"{type(exc).__name__}: {exc}"[:300]}},
                   "grad_jaxpr": None}
        print(MARK + json.dumps({"path": p, **res}), flush=True)


def run_batch(paths: List[str], timeout: float) -> Dict[str, Dict[str, Any]]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONHASHSEED": "0"}
    out: Dict[str, Dict[str, Any]] = {}
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *paths],
                              capture_output=True, text=True, timeout=timeout, env=env)
        stdout = proc.stdout
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    for line in stdout.splitlines():
        if line.startswith(MARK):
            rec = json.loads(line[len(MARK):])
            out[rec.pop("path")] = rec
    missing = [p for p in paths if p not in out]
    if len(paths) > 1:
        for p in missing:  # one module per process: a crash or a hang is that module's label
            out.update(run_batch([p], timeout=120.0))
    elif missing:
        out[paths[0]] = {"checks": {"crash": {"status": "raises", "detail": "the process died or timed out"}},
                         "grad_jaxpr": None}
    return out


def label_of(run: Dict[str, Any], base_run: Optional[Dict[str, Any]], claim: Optional[str]) -> Tuple[str, List[str]]:
    bad = sorted(k for k, v in run["checks"].items() if v["status"] != "ok")
    if bad:
        return "hazard", bad
    if claim == "no-op" and base_run is not None and run["grad_jaxpr"] is not None \
            and run["grad_jaxpr"] == base_run["grad_jaxpr"]:
        return "no-op", []
    return "ok", []


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--only", default="", help="label only entries whose key starts with this")
    ap.add_argument("--no-bases", action="store_true", help="with --only: do not re-label the bases")
    ap.add_argument("--per-spelling", type=int, default=0, help="label only the first N bases of each spelling")
    ap.add_argument("--held-out", nargs="?", const="*", default=None, metavar="SET",
                    help="label only the held-out bases (heldout/, heldout2/, heldout3/, heldout4/, heldout5/, heldout6/, heldout7/, heldout8/, heldout9/, heldout10/, heldout11/; or only the set SET) and their "
                         "mutants, merged into labels.json; every other label stays as it is")
    ap.add_argument("--missing", action="store_true",
                    help="with --held-out or --only: label only the mutants labels.json has no entry for "
                         "(and the bases), merged into it")
    ns = ap.parse_args(argv)
    if ns.child:
        child(ns.child)
        return 0
    import mutate

    manifest = json.loads(mutate.MANIFEST.read_text())
    tmp = Path(tempfile.mkdtemp(prefix="vjplint-spelled-"))
    jobs: Dict[str, Tuple[str, Optional[str]]] = {}  # key -> (path, claim)
    for stem, b in manifest["bases"].items():
        jobs[f"bases/{stem}"] = (str(ROOT / b["path"]), None)
        source = (ROOT / b["path"]).read_text(encoding="utf-8")
        for sp in mutate.SPELLINGS:
            text = mutate.spell(source, sp)
            if text is not None:
                p = tmp / sp / f"{stem}.py"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text, encoding="utf-8")
                jobs[f"spelled/{sp}/{stem}"] = (str(p), None)
    for key, m in manifest["mutants"].items():
        claim = "no-op" if m["operator"] == "direct_linearize" else None
        jobs[f"mutants/{key}"] = (str(ROOT / m["path"]), claim)
    chosen = {k: v for k, v in jobs.items() if k.startswith(ns.only) or k.startswith("bases/") and not ns.no_bases}
    if ns.held_out:
        def wanted(entry: Dict[str, Any]) -> bool:
            return bool(entry.get("held_out")) and ns.held_out in ("*", entry.get("held_out_set"))

        held = {s for s, b in manifest["bases"].items() if wanted(b)}
        chosen = {k: v for k, v in jobs.items()
                  if k.startswith("bases/") and k[len("bases/"):] in held
                  or k.startswith("mutants/") and wanted(manifest["mutants"][k[len("mutants/"):]])}
    if ns.missing:  # only what labels.json lacks (its bases always, for the no-op comparison)
        have = json.loads(LABELS.read_text()).get("entries", {}) if LABELS.exists() else {}
        chosen = {k: v for k, v in chosen.items() if k.startswith("bases/") or k not in have}
    if ns.per_spelling:  # a sample: the first N bases of each spelling
        kept: Dict[str, int] = {}
        for k in sorted(chosen):
            if k.startswith("spelled/"):
                sp = k.split("/")[1]
                kept[sp] = kept.get(sp, 0) + 1
                if kept[sp] > ns.per_spelling:
                    del chosen[k]
    # the flag of a direct_linearize mutant stays set in its process: those share batches only with each other
    flagged = [v[0] for k, v in chosen.items() if v[1] == "no-op"]
    plain = [v[0] for k, v in chosen.items() if v[1] != "no-op"]
    batches = [plain[i:i + ns.batch] for i in range(0, len(plain), ns.batch)]
    batches += [flagged[i:i + ns.batch] for i in range(0, len(flagged), ns.batch)]
    results: Dict[str, Dict[str, Any]] = {}
    done = 0
    with ThreadPoolExecutor(max_workers=ns.jobs) as pool:
        for res in pool.map(lambda b: run_batch(b, timeout=90.0 + 25.0 * len(b)), batches):
            results.update(res)
            done += len(res)
            print(f"labelled {done}/{len(chosen)}", flush=True)
    old = json.loads(LABELS.read_text()) if LABELS.exists() and (ns.only or ns.held_out or ns.missing) else {"entries": {}}
    entries = dict(old.get("entries", {}))
    base_runs = {k: results[v[0]] for k, v in chosen.items() if k.startswith("bases/")}
    for key, (path, claim) in chosen.items():
        run = results[path]
        base_key = None
        if key.startswith("mutants/") and claim:
            base_key = "bases/" + manifest["mutants"][key[len("mutants/"):]]["base"]
        label, failing = label_of(run, base_runs.get(base_key) if base_key else None, claim)
        entries[key] = {"label": label, "failing": failing,
                        "checks": {k: v for k, v in run["checks"].items() if v["status"] != "ok"}}
    import jax
    import jaxlib

    out = {"jax_version": jax.__version__, "jaxlib_version": jaxlib.__version__, "platform": "cpu",
           "python": sys.version.split()[0],
           "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
           "entries": dict(sorted(entries.items()))}
    LABELS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    from collections import Counter

    print(Counter(e["label"] for e in entries.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
