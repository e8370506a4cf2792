"""Label every eval case by running it on real JAX, the way users call it.

    python eval/oracle.py                 # all cases -> eval/labels.json
    python eval/oracle.py eval/cases/x/y.py --print   # one case, print its checks

Each case runs in its own subprocess (a fresh JAX, a timeout) and goes through eager, `jit`,
`vmap`, `grad`, `jit(grad)`, `vmap(grad)` plus the extras it names (`grad_jit`, `jvp`,
`jacfwd`, `hessian`, `value_and_grad`) and its own `eval_custom()` checks. A check is `ok`,
`raises` (exception type and first line kept) or `wrong` (differs from an independent float64
reference: the case's numpy `eval_reference`, central finite differences of it, or the case's
analytic `eval_grad_reference`). A case is a hazard when any check is not `ok`. A case whose
caller lived in another module names a `driver` file (`_*.py` beside it, not a case itself) that
defines the eval_* functions and sees the case module as `case`.

A case whose construct is a statement that JAX ignores (a dead configuration flag) says
`"claim": "no-op"`. Its span lines are then run a second time replaced by `pass`: when every check
is `ok` both times and the jaxpr of `grad` is the same text, JAX has shown that the statement
changes nothing, and the case is labelled `no-op` (neither a hazard nor a look-alike: a finding
that says "this does nothing, remove it" is right, and silence is not wrong).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

EVAL_DIR = Path(__file__).resolve().parent
CASES = EVAL_DIR / "cases"
LABELS = EVAL_DIR / "labels.json"
STANDARD = ("eager", "jit", "vmap", "grad", "jit_grad", "vmap_grad")
EXTRAS = ("grad_jit", "jvp", "jacfwd", "hessian", "value_and_grad")
VALUE_CHECKS = ("eager", "jit", "vmap")  # checks of the function's value, not of a derivative
RTOL, ATOL = 2e-3, 2e-4


def case_files(root: Path = CASES) -> List[Path]:
    return sorted(p for p in root.rglob("*.py") if not p.name.startswith("_"))


def read_meta(path: Path) -> Dict[str, Any]:
    """The module-level EVAL dict, read without importing the case."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EVAL" for t in node.targets):
            return ast.literal_eval(node.value)
    raise ValueError(f"{path}: no module-level EVAL dict")


# ----------------------------------------------------------------------------- in the child


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = re.sub(r" at 0x[0-9a-f]+", "", text[0] if text else "")  # addresses change every run
    return f"{type(exc).__name__}: {line}"[:300]


def _close(got: Any, expected: Any, require_float: bool = True) -> Optional[str]:
    """None when `got` matches `expected` (a pytree of arrays), else why not. Derivatives must be
    floats (an int32 or bool cotangent is a silent bug); values may have any dtype."""
    import jax
    import numpy as np

    g_leaves, g_tree = jax.tree_util.tree_flatten(got)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    if len(g_leaves) != len(e_leaves):
        return f"structure {g_tree} != {e_tree}"
    for g, e in zip(g_leaves, e_leaves):
        g_arr, e_arr = np.asarray(g), np.asarray(e, dtype=np.float64)
        if g_arr.shape != e_arr.shape:
            return f"shape {g_arr.shape} != {e_arr.shape}"
        if require_float and not np.issubdtype(g_arr.dtype, np.inexact):
            return f"dtype {g_arr.dtype} (expected a float result)"
        if not np.allclose(g_arr.astype(np.float64), e_arr, rtol=RTOL, atol=ATOL):
            return f"value {np.round(g_arr.ravel()[:4], 4).tolist()} != {np.round(e_arr.ravel()[:4], 4).tolist()}"
    return None


def _fd_grad(ref: Callable[..., Any], args: Sequence[Any], argnums: Sequence[int]) -> Tuple[Any, ...]:
    """Central differences of sum(ref(*args)) in float64."""
    import numpy as np

    def total(a: Sequence[Any]) -> float:
        return float(np.sum(np.asarray(ref(*a), dtype=np.float64)))

    out = []
    for k in argnums:
        x = np.asarray(args[k], dtype=np.float64)
        grad = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            h = 1e-6 * max(1.0, abs(float(x[i])))
            hi, lo = x.copy(), x.copy()
            hi[i] += h
            lo[i] -= h
            a_hi, a_lo = list(args), list(args)
            a_hi[k], a_lo[k] = hi, lo
            grad[i] = (total(a_hi) - total(a_lo)) / (2 * h)
        out.append(grad)
    return tuple(out)


def _batch(x: Any) -> Any:
    import numpy as np

    arr = np.asarray(x, dtype=np.float64) if not hasattr(x, "dtype") else np.asarray(x)
    return np.stack([arr, (arr * 0.8 + 0.05).astype(arr.dtype)])


def without_span(source: str) -> str:
    """The case's source with each `# eval: span` line replaced by `pass` at its indentation."""
    out = []
    for line in source.splitlines():
        if "# eval: span" in line:
            line = line[: len(line) - len(line.lstrip())] + "pass  # eval: removed"
        out.append(line)
    text = "\n".join(out) + "\n"
    ast.parse(text)  # a span that is not one whole statement per line cannot be removed this way
    return text


def run_case(path: Path, remove_span: bool = False) -> Dict[str, Any]:
    """All checks of one case, in this process, and the jaxpr of its `grad` when it has one."""
    import importlib.util

    checks: Dict[str, Dict[str, str]] = {}
    meta = read_meta(path)
    spec = importlib.util.spec_from_file_location("eval_case_" + path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    try:
        source = path.read_text(encoding="utf-8")
        exec(compile(without_span(source) if remove_span else source, str(path), "exec"), mod.__dict__)
        if meta.get("driver"):  # the caller lives in another file, as in the report
            driver = path.parent / meta["driver"]
            namespace: Dict[str, Any] = {"case": mod, "__file__": str(driver), "__name__": "eval_driver"}
            exec(compile(driver.read_text(encoding="utf-8"), str(driver), "exec"), namespace)
            for name in ("eval_fn", "eval_inputs", "eval_reference", "eval_grad_reference", "eval_custom"):
                if name in namespace:
                    setattr(mod, name, namespace[name])
    except Exception as exc:  # the case's definitions themselves fail (e.g. defvjp as decorator)
        return {"checks": {"import": {"status": "raises", "detail": _first_line(exc)}}, "grad_jaxpr": None}
    checks["import"] = {"status": "ok", "detail": ""}
    plan = _plan(mod, meta)
    for name, fn in plan.items():
        try:
            result = fn()
        except Exception as exc:
            checks[name] = {"status": "raises", "detail": _first_line(exc)}
            continue
        if result is None:
            checks[name] = {"status": "ok", "detail": "(no reference)"}
            continue
        got, expected = result
        why = _close(got, expected, require_float=name not in VALUE_CHECKS)
        checks[name] = {"status": "wrong", "detail": why} if why else {"status": "ok", "detail": ""}
    return {"checks": checks, "grad_jaxpr": _grad_jaxpr(mod, meta)}


def _grad_jaxpr(mod: Any, meta: Dict[str, Any]) -> Optional[str]:
    """The text of `make_jaxpr(grad(sum of eval_fn))`: what the case asks JAX to compute."""
    import jax
    import jax.numpy as jnp

    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    args = tuple(mod.eval_inputs())
    try:
        return str(jax.make_jaxpr(jax.grad(lambda *a: jnp.sum(mod.eval_fn(*a)), argnums=argnums))(*args))
    except Exception as exc:
        return f"raises {_first_line(exc)}"


def _plan(mod: Any, meta: Dict[str, Any]) -> Dict[str, Callable[[], Any]]:
    """name -> thunk returning (got, expected) or None."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    args = tuple(mod.eval_inputs())
    static = tuple(meta.get("static", ()))
    argnums = tuple(meta.get("argnums", ()))
    dyn_idx = [i for i in range(len(args)) if i not in static]
    dyn = [args[i] for i in dyn_idx]
    diff_pos = tuple(dyn_idx.index(i) for i in argnums)
    ref = getattr(mod, "eval_reference", None)
    grad_ref = getattr(mod, "eval_grad_reference", None)
    axes = meta.get("vmap_in_axes")
    dyn_axes = tuple(axes[i] for i in dyn_idx) if axes is not None else tuple(
        0 if i in argnums else None for i in dyn_idx)

    def full(dyn_vals: Sequence[Any]) -> Tuple[Any, ...]:
        out = list(args)
        for i, v in zip(dyn_idx, dyn_vals):
            out[i] = v
        return tuple(out)

    def f(*d: Any) -> Any:
        return mod.eval_fn(*full(d))

    def loss(*d: Any) -> Any:
        return jnp.sum(mod.eval_fn(*full(d)))

    def value_ref(d: Sequence[Any]) -> Any:
        return None if ref is None else np.asarray(ref(*full(d)), dtype=np.float64)

    def grads_ref(d: Sequence[Any]) -> Any:
        a = full(d)
        if grad_ref is not None:
            g = grad_ref(*a)
            return tuple(g) if isinstance(g, (tuple, list)) else (g,)
        return None if ref is None else _fd_grad(ref, a, argnums)

    def pair(got: Any, exp: Any) -> Any:
        return None if exp is None else (got, exp)

    def batched() -> List[Any]:
        return [_batch(v) if ax == 0 else v for v, ax in zip(dyn, dyn_axes)]

    def rows(b: Sequence[Any], fn: Callable[[Sequence[Any]], Any]) -> Any:
        per = [fn([v[r] if ax == 0 else v for v, ax in zip(b, dyn_axes)]) for r in range(2)]
        if any(p is None for p in per):
            return None
        return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *per)

    def vmap_check() -> Any:
        b = batched()
        return pair(jax.vmap(f, in_axes=dyn_axes)(*b), rows(b, value_ref))

    def vmap_grad_check() -> Any:
        b = batched()
        return pair(tuple(jax.vmap(jax.grad(loss, argnums=diff_pos), in_axes=dyn_axes)(*b)), rows(b, grads_ref))

    def jvp_check() -> Any:
        def along(*x: Any) -> Any:
            d = list(dyn)
            for p, v in zip(diff_pos, x):
                d[p] = v
            return loss(*d)
        prim = tuple(jnp.asarray(dyn[p], jnp.float32) for p in diff_pos)
        tang = tuple(jnp.full_like(p, 0.5) for p in prim)  # not 1: a tangent squared would pass
        _, out = jax.jvp(along, prim, tang)
        g = grads_ref(dyn)
        return pair(out, None if g is None else 0.5 * sum(float(np.sum(x)) for x in g))

    def hessian_check() -> Any:
        got = jax.hessian(loss, argnums=diff_pos[0])(*dyn)
        if ref is None or grad_ref is not None:
            return None
        k = argnums[0]
        x = np.asarray(args[k], dtype=np.float64)
        cols = []
        for i in np.ndindex(x.shape if x.shape else ()):
            h = 1e-4 * max(1.0, abs(float(x[i])))
            hi, lo = x.copy(), x.copy()
            hi[i] += h
            lo[i] -= h
            a_hi, a_lo = list(args), list(args)
            a_hi[k], a_lo[k] = hi, lo
            cols.append((_fd_grad(ref, a_hi, (k,))[0] - _fd_grad(ref, a_lo, (k,))[0]) / (2 * h))
        exp = np.stack(cols, axis=-1).reshape(x.shape + x.shape) if x.shape else np.asarray(cols[0])
        return got, exp

    plan: Dict[str, Callable[[], Any]] = {
        "eager": lambda: pair(f(*dyn), value_ref(dyn)),
        "jit": lambda: pair(jax.jit(f)(*dyn), value_ref(dyn)),
        "vmap": vmap_check,
        "grad": lambda: pair(tuple(jax.grad(loss, argnums=diff_pos)(*dyn)), grads_ref(dyn)),
        "jit_grad": lambda: pair(tuple(jax.jit(jax.grad(loss, argnums=diff_pos))(*dyn)), grads_ref(dyn)),
        "vmap_grad": vmap_grad_check,
        "grad_jit": lambda: pair(tuple(jax.grad(jax.jit(loss), argnums=diff_pos)(*dyn)), grads_ref(dyn)),
        "jvp": jvp_check,
        "jacfwd": lambda: pair(tuple(jax.jacfwd(loss, argnums=diff_pos)(*dyn)), grads_ref(dyn)),
        "hessian": hessian_check,
        "value_and_grad": lambda: pair(jax.value_and_grad(loss, argnums=diff_pos)(*dyn),
                                       (None if ref is None else float(np.sum(value_ref(dyn))), grads_ref(dyn))),
    }
    skip = set(meta.get("skip", ()))
    if not argnums:
        skip |= {"grad", "jit_grad", "vmap_grad", "vmap"}
    chosen = {k: plan[k] for k in STANDARD if k not in skip}
    chosen.update({k: plan[k] for k in meta.get("extra", ()) if k not in skip})
    custom = getattr(mod, "eval_custom", None)
    if custom is not None:
        chosen.update(custom())
    return chosen


# ----------------------------------------------------------------------------- the parent


def label_case(path: Path, timeout: float, remove_span: bool = False) -> Dict[str, Any]:
    """{"checks": ..., "grad_jaxpr": ...} from a child process."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(path)]
    try:
        proc = subprocess.run(cmd + (["--remove-span"] if remove_span else []),
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"checks": {"timeout": {"status": "raises", "detail": f"timed out after {timeout:.0f}s"}},
                "grad_jaxpr": None}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"checks": {"crash": {"status": "raises", "detail": f"child exited {proc.returncode}: {tail}"[:300]}},
                "grad_jaxpr": None}
    return json.loads(lines[-1])


def summarise(path: Path, meta: Dict[str, Any], run: Dict[str, Any],
              without: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The label: `hazard` when a check fails; for a `no-op` claim whose checks pass with and
    without the span and whose grad jaxpr is unchanged, `no-op`; otherwise `ok`."""
    checks = run["checks"]
    bad = sorted(k for k, v in checks.items() if v["status"] != "ok")
    label = "hazard" if bad else "ok"
    entry: Dict[str, Any] = {"path": str(path.relative_to(EVAL_DIR.parent)), "family": meta["family"],
                             "expect": meta["expect"], "label": label, "failing": bad, "checks": checks}
    if without is not None:
        same_checks = all(v["status"] == "ok" for v in without["checks"].values())
        same_trace = run["grad_jaxpr"] is not None and run["grad_jaxpr"] == without["grad_jaxpr"]
        entry["without_span"] = {"checks_ok": same_checks, "same_grad_jaxpr": same_trace}
        if label == "ok" and same_checks and same_trace:
            entry["label"] = "no-op"
    return entry


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--remove-span", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--print", action="store_true", help="print the checks; do not write labels.json")
    ap.add_argument("--timeout", type=float, default=180.0)
    ns = ap.parse_args(argv)
    if ns.child:
        print(json.dumps(run_case(ns.child, ns.remove_span)))
        return 0
    import jax
    import jaxlib

    paths = [p.resolve() for p in ns.paths] or case_files()
    old = json.loads(LABELS.read_text()) if LABELS.exists() else {"cases": {}}
    cases = {} if not ns.paths else dict(old.get("cases", {}))
    for path in paths:
        meta = read_meta(path)
        without = label_case(path, ns.timeout, remove_span=True) if meta.get("claim") == "no-op" else None
        entry = summarise(path, meta, label_case(path, ns.timeout), without)
        cases[meta["id"]] = entry
        moved = " (was %s)" % old["cases"][meta["id"]]["label"] if (
            meta["id"] in old.get("cases", {}) and old["cases"][meta["id"]]["label"] != entry["label"]) else ""
        print(f"{entry['label']:6} {meta['id']:40} {', '.join(entry['failing'])}{moved}", flush=True)
        if ns.print:
            for k, v in entry["checks"].items():
                print(f"    {k:15} {v['status']:6} {v['detail']}")
    if ns.print:
        return 0
    out = {"jax_version": jax.__version__, "jaxlib_version": jaxlib.__version__,
           "platform": "cpu", "python": sys.version.split()[0],
           "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
           "cases": dict(sorted(cases.items()))}
    LABELS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {LABELS.relative_to(EVAL_DIR.parent)}: {sum(c['label'] == 'hazard' for c in cases.values())} "
          f"hazards, {sum(c['label'] == 'ok' for c in cases.values())} ok, "
          f"{sum(c['label'] == 'no-op' for c in cases.values())} no-op (JAX {jax.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
