"""check-grads on custom derivatives whose primal takes `*args` (and `**kwargs`, which JAX allows
when every call passes positionally): the recorded calls (or an example) give the arity, one
parameter per extra argument (`ys[0]`, `ys[1]`); without them, "not checked" says how to give
them. Real JAX on CPU, through the real CLI (issue #44: heldout3's `netket_expect`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply_sum(f, x, *ys):
    return f(x) + sum(y * y for y in ys)


def apply_sum_fwd(f, x, *ys):
    return apply_sum(f, x, *ys), (x, ys)


def apply_sum_bwd(f, res, g):
    x, ys = res
    _, pull = jax.vjp(f, x)
    return (pull(g)[0], *(g * y for y in ys))  # WRONG: the derivative of y * y is 2 * y


apply_sum.defvjp(apply_sum_fwd, apply_sum_bwd)


@jax.custom_vjp
def scaled(x, *factors, **options):
    out = x
    for c in factors:
        out = out * c
    return out


def scaled_fwd(x, *factors, **options):
    return scaled(x, *factors), (x, factors)


def scaled_bwd(res, g):
    x, factors = res
    grads = []
    for k in range(len(factors)):
        other = x
        for j, c in enumerate(factors):
            if j != k:
                other = other * c
        grads.append(g * other)
    total = g
    for c in factors:
        total = total * c
    return (total, *grads)


scaled.defvjp(scaled_fwd, scaled_bwd)
'''
RUN = '''\
import jax.numpy as jnp

from pkg.ops import apply_sum, scaled

print(apply_sum(jnp.sin, jnp.array([0.3, 0.7]), jnp.array([1.5, -0.5]), jnp.array([0.25, 2.0])))
print(scaled(jnp.array([0.5, 1.5]), jnp.array([2.0, 0.5]), jnp.array([3.0, -1.0])))
'''
EXAMPLE = '''

def EXAMPLE_ARGS():
    return {"scaled": (jnp.array([0.5, 1.5]), jnp.array([2.0, 0.5]), jnp.array([3.0, -1.0]))}
'''


def _project(root: Path, extra: str = "") -> dict:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text(OPS + extra)
    (root / "run.py").write_text(RUN)
    (root / "pyproject.toml").write_text("[tool.vjplint]\n")
    return {**JAX_ENV, "PYTHONPATH": pythonpath(root)}


@pytest.mark.jax
def test_a_varargs_primal_is_checked_at_the_recorded_calls(tmp_path: Path) -> None:
    env = _project(tmp_path)
    proc = run_cli("check-grads", "--output-format", "concise", "--show-checks", "pkg", "--record", "--",
                   sys.executable, "run.py", cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    # Firing: the rule is wrong for the `*ys` arguments, found at the arity the run called it with.
    assert f"pkg/ops.py:7:2: VJP501 `apply_sum`: bwd cotangent for `ys[0]` differs from finite differences: max " \
           f"rel. error 0.5 at f=callable sin, x={PREC}[2], ys[0]={PREC}[2], ys[1]={PREC}[2] (order 1, {PREC}; " in out
    assert "    inputs  f=callable sin (recorded: 1 call seen in the project's runs), x=float32[2] (recorded: 1 call " \
           "seen in the project's runs), ys[0]=float32[2] (recorded: 1 call seen in the project's runs), " \
           "ys[1]=float32[2] (recorded: 1 call seen in the project's runs)\n" in out
    # Silent: a right rule with `*factors` and `**options`, called positionally.
    assert "pkg/ops.py:25: scaled (custom_vjp): passed at 1 recorded call\n" in out
    assert "VJP509" not in out
    assert "\ncoverage: 2 under the paths, 2 called by the run, 2 checked, 1 passed (1 recorded call checked), " \
           "1 failed, 0 not checked, 0 never called\n" in out


@pytest.mark.jax
def test_without_a_recording_an_example_gives_the_arity_else_not_checked_says_how(tmp_path: Path) -> None:
    env = _project(tmp_path, EXAMPLE)
    proc = run_cli("check-grads", "--output-format", "concise", "pkg", cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == (
        "pkg/ops.py:7:2: VJP509 `apply_sum` not checked: `apply_sum` takes `*ys`: the number of arguments is not "
        "known, and no recorded call or example gives it; give inputs: a recorded run (`check-grads PATH --record "
        "-- CMD`), EXAMPLE_ARGS() or [tool.vjplint.verify] examples")
    assert ": 1 passed, 0 failed, 1 not checked." in proc.stdout
    (tmp_path / "pkg" / "ops.py").write_text(OPS)  # no EXAMPLE_ARGS: decided without importing the module
    proc = run_cli("check-grads", "--output-format", "concise", "pkg", cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pkg/ops.py:25:2: VJP509 `scaled` not checked: `scaled` takes `*factors`: the number of arguments is not " \
           "known (its calls give it: record a run that calls it, `check-grads PATH --record -- CMD`, or give inputs " \
           "in EXAMPLE_ARGS() or [tool.vjplint.verify] examples)\n" in proc.stdout
    assert ": 0 passed, 0 failed, 2 not checked." in proc.stdout
