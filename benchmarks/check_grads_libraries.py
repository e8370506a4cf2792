"""`vjplint check-grads --record -- pytest` on real libraries, with their own tests (issue #44).

For each library (installed in this Python: numpyro, lineax, jaxopt, optax), runs a selection of
its own test files under `check-grads <installed package> --record -- pytest ...`, so every custom
derivative the tests call is checked in the tests' process at the values they passed, and writes
a table: found (under the package), called by the tests, checked, passed (at recorded calls),
failed, never called, time, time per checked derivative. Then plants bugs (a sign, a factor,
wrong only in a region, at a boundary, a dropped tangent, a swapped order) in temporary copies of
the packages, one definition at a time per round, reruns the same tests on the copy, and counts
the planted bugs found (an error or warning of VJP501-VJP504 on the planted definition).

    pip install numpyro==0.22.0 lineax==0.1.1 jaxopt==0.8.5 optax==0.2.8
    python benchmarks/check_grads_libraries.py --prepare SOURCES   # fetch the test files (needs network)
    python benchmarks/check_grads_libraries.py --sources SOURCES [--only numpyro,optax] [--no-plant]
        [--jobs 2] [--json out.json]

`--prepare` downloads the sdists of numpyro and optax (their tests ship there) and clones jaxopt
and lineax (whose sdists have none); on a machine without network (a lent TPU), copy SOURCES
there, with the libraries and their needs as wheels (`pip download --no-deps`; jaxopt's test
utilities also import scikit-learn, which needs joblib, threadpoolctl and narwhals), installed with
`pip install --no-index --no-deps --target DIR` and DIR added to PYTHONPATH, and run with
`JAX_PLATFORMS=tpu --jobs 1` (one process holds the chip). The libraries' code is never copied into
vjplint. Nothing here is imported by vjplint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
CODES = {"VJP501", "VJP502", "VJP503", "VJP504"}

# Test files (relative to the library's source tree in SOURCES/<name>) and a -k filter.
LIBRARIES: Dict[str, dict] = {
    "numpyro": {"version": "0.22.0", "fetch": "sdist", "tests": ["test/test_distributions_util.py"],
                "k": "log1mexp"},
    "lineax": {"version": "0.1.1", "fetch": "https://github.com/patrick-kidger/lineax",
               "tests": ["tests/test_norm.py"], "k": "",
               "support": ["tests/__init__.py", "tests/helpers.py", "tests/conftest.py"]},
    "jaxopt": {"version": "0.8.5", "fetch": "https://github.com/google/jaxopt",
               "tests": ["tests/projection_test.py", "tests/isotonic_test.py"],
               "k": "test_projection_simplex or test_gradient or test_vmap"},
    "optax": {"version": "0.2.8", "fetch": "sdist",
              "tests": ["optax/projections/_projections_test.py", "optax/losses/_classification_test.py"],
              "k": "projection_simplex or SafeSoftmaxCrossEntropy"},
}

JAXOPT_SIMPLEX = ("  primal_out = _projection_unit_simplex(x)\n  supp = primal_out > 0\n  card = jnp.count_nonzero(supp)\n"
                  "  tangent_out = supp * x_dot - (jnp.dot(supp, x_dot) / card) * supp\n")
# (library, file in the package, text, replacement, what): one definition each.
PLANTED = [
    ("numpyro", "distributions/util.py", "log1mexp.defjvps(lambda t, ans, x: -t / jnp.expm1(-x))",
     "log1mexp.defjvps(lambda t, ans, x: t / jnp.expm1(-x))", "sign"),
    ("numpyro", "distributions/util.py", "log1mexp.defjvps(lambda t, ans, x: -t / jnp.expm1(-x))",
     "log1mexp.defjvps(lambda t, ans, x: jnp.where(x > -0.1, t, -t) / jnp.expm1(-x))", "wrong only above -0.1"),
    ("numpyro", "distributions/util.py", "log1mexp.defjvps(lambda t, ans, x: -t / jnp.expm1(-x))",
     "log1mexp.defjvps(lambda t, ans, x: -2 * t / jnp.expm1(-x))", "factor 2"),
    ("lineax", "_norm.py", "    t_out = tree_dot(div, tx).real\n", "    t_out = 2 * tree_dot(div, tx).real\n",
     "factor 2"),
    ("lineax", "_norm.py", "return out, jnp.where(out == 0, 0, t_out)", "return out, jnp.where(out <= 1, 0, t_out)",
     "wrong in a region (norms up to 1)"),
    ("lineax", "_misc.py", "return _asarray(dtype, x), _asarray(dtype, tx)",
     "return _asarray(dtype, x), _asarray(dtype, 0.5 * tx)", "factor 0.5"),
    ("jaxopt", "_src/projection.py", JAXOPT_SIMPLEX, JAXOPT_SIMPLEX.replace(
        "  tangent_out = supp * x_dot - (jnp.dot(supp, x_dot) / card) * supp\n", "  tangent_out = supp * x_dot\n"),
     "dropped term (the projection's normal part)"),
    ("jaxopt", "_src/projection.py", JAXOPT_SIMPLEX, JAXOPT_SIMPLEX.replace("supp = primal_out > 0",
                                                                            "supp = primal_out >= 0"),
     "at the simplex's boundary (zeros counted in the support)"),
    ("jaxopt", "_src/isotonic.py", "  tangent_out = _jvp_isotonic_l2_jax_pav(primal_out, vector)",
     "  tangent_out = -_jvp_isotonic_l2_jax_pav(primal_out, vector)", "sign"),
    ("optax", "projections/_projections.py",
     "tangent_out = supp * values_dot - (jnp.dot(supp, values_dot) / card) * supp",
     "tangent_out = supp * values_dot - (jnp.dot(supp, values_dot) / (card + 1)) * supp", "factor (card + 1)"),
    ("optax", "losses/_classification.py", "      + weights_dot * logsoftmax_x\n", "\n",
     "dropped tangent (of the weights)"),
    ("optax", "losses/_classification.py", "  (x_dot, weights_dot) = tangents\n",
     "  (weights_dot, x_dot) = tangents\n", "swapped order (tangents)"),
]


def site_packages(name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed: pip install {name}=={LIBRARIES[name]['version']}")
    return Path(list(spec.submodule_search_locations)[0])


def prepare(sources: Path) -> None:
    sources.mkdir(parents=True, exist_ok=True)
    for name, lib in LIBRARIES.items():
        dest = sources / name
        if dest.exists():
            continue
        if lib["fetch"] == "sdist":
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                                "-d", tmp, f"{name}=={lib['version']}"], check=True)
                (archive,) = Path(tmp).glob("*.tar.gz")
                with tarfile.open(archive) as tar:
                    tar.extractall(tmp)
                (tree,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
                shutil.copytree(tree, dest)
        else:
            subprocess.run(["git", "clone", "--depth", "1", lib["fetch"], str(dest)], check=True)


def stage_tests(name: str, sources: Path, work: Path) -> List[str]:
    """The selected test files, copied out of the source tree (so the installed package is imported)."""
    lib = LIBRARIES[name]
    tests = work / "tests"
    tests.mkdir(parents=True)
    out = []
    for rel in lib["tests"] + lib.get("support", []):
        src = sources / name / rel
        if not src.is_file():
            print(f"  {name}: {rel} missing in {sources / name}", file=sys.stderr)
            continue
        dst = tests / (Path(rel).name if not rel.startswith("tests/") else rel[len("tests/"):])
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)
        if rel in lib["tests"]:
            out.append(str(dst))
    return out


def check(name: str, package: Path, tests: List[str], work: Path, jobs: int, pythonpath: str) -> dict:
    report = work / f"report-{time.monotonic_ns()}.json"
    lib = LIBRARIES[name]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "python_files=*_test.py test_*.py",
               "-n", str(jobs), *(["-k", lib["k"]] if lib["k"] else []), *tests]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (pythonpath, str(ROOT), os.environ.get(
        "PYTHONPATH", "")) if p))
    (work / "pyproject.toml").write_text("[tool.vjplint]\n")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "vjplint", "check-grads", "--output-format", "concise", "--report",
                           str(report), "-j", str(jobs), str(package), "--record", "--", *command],
                          cwd=work, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    rows = json.loads(report.read_text()) if report.is_file() else []
    return {"rows": rows, "seconds": seconds, "stdout": proc.stdout, "stderr": proc.stderr[-4000:],
            "returncode": proc.returncode}


def table_row(name: str, result: dict) -> dict:
    rows = result["rows"]
    checked = [r for r in rows if r["status"] != "unverified"]
    return {"library": f"{name} {LIBRARIES[name]['version']}", "found": len(rows),
            "called": sum(bool(r.get("called")) for r in rows), "checked": len(checked),
            "passed": sum(r["status"] == "passed" for r in rows),
            "failed": sum(r["status"] in ("failed", "warned") for r in rows),
            "assumed": sum(r["status"] == "assumed" for r in rows),
            "not checked": sum(r["status"] == "unverified" for r in rows),
            "never called": sum(not r.get("called") for r in rows), "seconds": round(result["seconds"], 1),
            "per checked": round(result["seconds"] / max(1, len(checked)), 1),
            "device": next((r.get("device") for r in rows if r.get("device")), "")}


def planted_found(rows: List[dict], planted_file: Path, line: int, run_dir: Path) -> Optional[bool]:
    """Whether a VJP501-VJP504 error or warning lands on the definition containing the planted line
    (the report's file names are relative to the run's directory)."""
    defs = sorted((r for r in rows if (run_dir / r["filename"]).resolve() == planted_file.resolve()),
                  key=lambda r: r["line"])
    owner = [r for r in defs if r["line"] <= line]
    if not owner:
        return None
    row = owner[-1]
    return any(c.get("status") == "failed" and c.get("code") in CODES for c in row["checks"])


def _definition_of(bug: tuple) -> tuple:
    """(file, the planted text's first line): two bugs whose texts overlap are in one definition."""
    return bug[1], DEFINITION.get(bug[2], bug[2])


# Planted texts in the same definition as another one's.
DEFINITION = {"  (x_dot, weights_dot) = tangents\n": "      + weights_dot * logsoftmax_x\n"}


def plant(name: str, sources: Path, jobs: int, keep: bool, only: Sequence[str] = ()) -> List[dict]:
    package = site_packages(name)
    bugs = [b for b in PLANTED if b[0] == name and (not only or any(o in b[4] for o in only))]
    rounds: List[List[tuple]] = []
    for bug in bugs:  # one bug per definition per round
        for r in rounds:
            if all(_definition_of(b) != _definition_of(bug) for b in r):
                r.append(bug)
                break
        else:
            rounds.append([bug])
    results = []
    for bugs_now in rounds:
        work = Path(tempfile.mkdtemp(prefix=f"vjplint-plant-{name}-"))
        site = work / "site"
        copy = site / package.name
        shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
        lines = []
        for _, rel, text, new, _what in bugs_now:
            path = copy / rel
            source = path.read_text()
            assert source.count(text) == 1, (name, rel, text)
            lines.append(source[:source.index(text)].count("\n") + 1)
            path.write_text(source.replace(text, new))
        tests = stage_tests(name, sources, work / "run")
        result = check(name, copy, tests, work / "run", jobs, str(site))
        for (_, rel, text, new, what), line in zip(bugs_now, lines):
            found = planted_found(result["rows"], copy / rel, line, work / "run")
            results.append({"library": name, "file": rel, "what": what, "found": found,
                            "seconds": round(result["seconds"], 1)})
            print(f"  planted {name}/{rel} ({what}): {'FOUND' if found else 'missed' if found is False else 'no def'}",
                  flush=True)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return results


def markdown(rows: List[dict], planted: List[dict]) -> str:
    head = ["library", "found", "called", "checked", "passed", "failed", "assumed", "not checked", "never called",
            "seconds", "per checked"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(r[h]) for h in head) + " |" for r in rows]
    if planted:
        found = sum(bool(p["found"]) for p in planted)
        out += ["", f"planted bugs found: {found} of {len(planted)}", "",
                "| library | file | bug | found |", "|---|---|---|---|"]
        out += [f"| {p['library']} | {p['file']} | {p['what']} | {'yes' if p['found'] else 'no'} |" for p in planted]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, default=Path(".vjplint-library-sources"))
    ap.add_argument("--prepare", type=Path, help="fetch the libraries' test files into this directory, then stop")
    ap.add_argument("--only", default="", help="comma-separated libraries (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-plant", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plant-only", default=None, metavar="WHAT",
                    help="only plant the bugs whose description contains one of these (comma-separated), no baseline")
    args = ap.parse_args()
    if args.prepare:
        prepare(args.prepare)
        return 0
    names = [n for n in (args.only.split(",") if args.only else LIBRARIES) if n]
    rows, planted, failures = [], [], {}
    if args.plant_only is not None:
        for name in names:
            planted += plant(name, args.sources, args.jobs, args.keep, [w for w in args.plant_only.split(",") if w])
        print(markdown([], planted))
        if args.json:
            args.json.write_text(json.dumps({"planted": planted}, indent=2))
        return 0
    for name in names:
        # A copy of the installed package (vjplint skips site-packages and virtual environments),
        # imported by the tests from there.
        work = Path(tempfile.mkdtemp(prefix=f"vjplint-lib-{name}-"))
        copy = work / "site" / name
        shutil.copytree(site_packages(name), copy, ignore=shutil.ignore_patterns("__pycache__"))
        tests = stage_tests(name, args.sources, work / "run")
        result = check(name, copy, tests, work / "run", args.jobs, str(work / "site"))
        rows.append(table_row(name, result))
        failures[name] = [{"function": r["function"], "filename": r["filename"], "line": r["line"],
                           "status": r["status"], "reason": r["reason"],
                           "checks": [c for c in r["checks"] if c.get("status") == "failed"]}
                          for r in result["rows"] if r["status"] in ("failed", "warned", "unverified")]
        print(json.dumps(rows[-1]), flush=True)
        for f in failures[name]:
            print("  not passed:", json.dumps(f)[:1500], flush=True)
        if result["returncode"] not in (0, 1):
            print(result["stderr"], file=sys.stderr)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        if not args.no_plant:
            planted += plant(name, args.sources, args.jobs, args.keep)
    print(markdown(rows, planted))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "planted": planted, "not passed": failures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
