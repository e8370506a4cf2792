"""Tiny runner for the fact scripts: `check(label, thunk, ref=None)` prints one line per case.

OK lines show the value (and `== ref` or `!= ref (WRONG)` against an analytic reference);
RAISE lines show the exception's module.class and the first line of its message.
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAX_TRACEBACK_FILTERING", "off")

from typing import Any, Callable, Optional  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402


def versions() -> str:
    parts = [f"jax {jax.__version__}"]
    for name in ("jaxlib", "flax", "equinox"):
        try:
            parts.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            pass
    return ", ".join(parts)


def _fmt(value: Any) -> str:
    leaves = jax.tree_util.tree_leaves(value)
    shown = []
    for leaf in leaves[:6]:
        try:
            shown.append(np.array2string(np.asarray(leaf), precision=4, separator=",").replace("\n", ""))
        except Exception:  # a non-array leaf
            shown.append(repr(leaf)[:60])
    return "[" + "; ".join(shown) + "]"


def first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[0][:300] if lines else "(empty message)"


def check(label: str, thunk: Callable[[], Any], ref: Optional[Any] = None) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = jax.block_until_ready(thunk())
        except Exception as exc:  # noqa: BLE001 - the exception is the measurement
            print(f"{label:52s} RAISE {type(exc).__module__}.{type(exc).__name__}: {first_line(exc)}{_warned(caught)}")
            return exc
    verdict = ""
    if ref is not None:
        same = all(np.allclose(np.asarray(a), np.asarray(b), atol=1e-5)
                   for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)))
        same = same and len(jax.tree_util.tree_leaves(out)) == len(jax.tree_util.tree_leaves(ref))
        verdict = " == ref" if same else f" != ref {_fmt(ref)} (WRONG)"
    print(f"{label:52s} OK {_fmt(out)}{verdict}{_warned(caught)}")
    return out


def _warned(caught: list) -> str:
    return "".join(f" [warns {w.category.__name__}: {str(w.message).splitlines()[0][:120]}]" for w in caught
                   if not issubclass(w.category, DeprecationWarning) or "equinox" in str(w.message).lower())


def header(title: str) -> None:
    print(f"# {title} ({versions()})")
