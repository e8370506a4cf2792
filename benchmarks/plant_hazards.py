"""Plant custom_vjp hazards into a copy of a real code base, run `vjplint --fix --unsafe-fixes
--verify` over the whole copy, and check the outcome: every rewrite written is proven on JAX,
every planted hazard left alone says why.

    python benchmarks/plant_hazards.py /tmp/trees/optax /tmp/planted-optax --package optax/contrib

The copy (DEST, replaced if it exists) gets one module per hazard in PACKAGE (a package
directory of the tree, so the modules are imported as part of it, with its `__init__` files):

| module | hazard | expected outcome |
|---|---|---|
| planted_clip | arrays in nondiff_argnums, rules beside it | rewritten (safe), verified |
| planted_scale + planted_scale_rules | the same, fwd/bwd in a sibling module | both files rewritten together (unsafe), verified |
| planted_direct | fwd also called through `functools.partial` | refused: the caller would get a tuple |
| planted_static | the moved parameter is `jax.jit`-static | refused: a string cannot be differentiable |
| planted_tile | the array is used as a Python int by a helper | rewrite not proven (fails or unverified), left unchanged |

Prints a JSON report (also written to DEST.json): per module, changed or not, and the lines of
vjplint's output about it; exit 1 when an outcome differs from the table.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

HEADER = "from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n"

PLANTS: Dict[str, str] = {
    "planted_clip": HEADER + '''

@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo: jax.Array, hi: jax.Array, x: jax.Array) -> jax.Array:
    """Identity whose gradient is clipped to [lo, hi]."""
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
''',
    "planted_scale_rules": '''"""fwd/bwd of planted_scale.scaled_sin."""

import jax.numpy as jnp


def scaled_sin_fwd(w, x):
    return w * jnp.sin(x), x


def scaled_sin_bwd(w, x, g):
    return (w * jnp.cos(x) * g,)
''',
    "planted_scale": HEADER + '''
from .planted_scale_rules import scaled_sin_bwd, scaled_sin_fwd


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scaled_sin(w: jax.Array, x: jax.Array) -> jax.Array:
    return w * jnp.sin(x)


scaled_sin.defvjp(scaled_sin_fwd, scaled_sin_bwd)
''',
    "planted_direct": HEADER + '''

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scaled_tanh(scale: jax.Array, x: jax.Array) -> jax.Array:
    return scale * jnp.tanh(x)


def scaled_tanh_fwd(scale, x):
    y = scale * jnp.tanh(x)
    return y, y


def scaled_tanh_bwd(scale, y, g):
    return (g * (scale - y * y / scale),)


scaled_tanh.defvjp(scaled_tanh_fwd, scaled_tanh_bwd)


def activations(scale, x):
    forward = partial(scaled_tanh_fwd, scale)
    out, _ = forward(x)
    return out
''',
    "planted_static": HEADER + '''

@partial(jax.jit, static_argnames="mode")
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def reduce_grad(mode: jax.Array, x: jax.Array) -> jax.Array:
    return x


def reduce_grad_fwd(mode, x):
    return x, None


def reduce_grad_bwd(mode, _, g):
    return (g if mode == "sum" else g / g.size,)


reduce_grad.defvjp(reduce_grad_fwd, reduce_grad_bwd)
''',
    "planted_tile": HEADER + '''

def _count(n):
    return int(n)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def tiled(reps: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.tile(x, _count(reps))


def tiled_fwd(reps, x):
    return jnp.tile(x, _count(reps)), None


def tiled_bwd(reps, _, g):
    return (g.reshape(_count(reps), -1).sum(0),)


tiled.defvjp(tiled_fwd, tiled_bwd)
''',
}

EXPECTED = {"planted_clip": "rewritten", "planted_scale": "rewritten", "planted_scale_rules": "rewritten",
            "planted_direct": "unchanged", "planted_static": "unchanged", "planted_tile": "unchanged"}


def _copy(tree: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(tree, dest, symlinks=True)
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--package", required=True, help="package directory inside the tree, e.g. optax/contrib")
    args = parser.parse_args()
    _copy(args.tree, args.dest)
    package = args.dest / args.package
    assert (package / "__init__.py").is_file(), f"{package} is not a package"
    for name, text in PLANTS.items():
        (package / f"{name}.py").write_text(text, encoding="utf-8")
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "vjplint", "--fix", "--unsafe-fixes", "--verify", "--show-fixes",
                           "--no-cache", "--output-format", "concise", str(args.dest)],
                          capture_output=True, text=True, env=env)
    changed = subprocess.run(["diff", "-rq", str(args.tree), str(args.dest)], capture_output=True, text=True).stdout
    report: Dict[str, object] = {"exit": proc.returncode, "modules": {}}
    ok = True
    for name, text in PLANTS.items():
        path = package / f"{name}.py"
        now = path.read_text(encoding="utf-8")
        ast.parse(now)
        outcome = "rewritten" if now != text else "unchanged"
        lines: List[str] = [line for line in (proc.stderr + proc.stdout).splitlines()
                            if re.search(rf"\b{name}\.py\b", line)]
        report["modules"][name] = {"outcome": outcome, "expected": EXPECTED[name], "output": lines}  # type: ignore[index]
        ok &= outcome == EXPECTED[name]
    others = [line for line in changed.splitlines() if "planted_" not in line and not line.startswith("Only in")]
    report["other_files_changed"] = others
    ok &= not others
    verified = [line for line in proc.stderr.splitlines() if ": verified on " in line]
    report["verified"] = verified
    text = json.dumps(report, indent=1)
    print(text)
    Path(str(args.dest) + ".json").write_text(text, encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
