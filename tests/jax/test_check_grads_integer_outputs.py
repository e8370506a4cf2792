"""check-grads on a custom_vjp with an integer output (a step count a while_loop carries, as in
fdtdx's reversible FDTD, heldout4): to see which arguments the bwd rule declares not differentiated
(a literal None) it calls fwd and bwd directly, with a cotangent of ones for each floating-point
output and, as JAX passes it, float0 zeros for an integer one. With ones there, a bwd whose loop
carries the cotangent raised, its None went unseen, and a correct rule was reported as an error
(heldout4's `fdtdx_reversible_fdtd` base, issue #44). Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
TOL = {"float64": "1e-05", "float32": "0.03"}[PREC]  # check-grads' relative tolerance at each precision

OPS = '''\
import jax
import jax.numpy as jnp


def _step(k, y, w):
    return k + 1, y * w, w


def _run(y, w):
    return jax.lax.while_loop(lambda s: s[0] < 3, lambda s: _step(*s), (jnp.asarray(0, jnp.int32), y, w))


@jax.custom_vjp
def cubed(y, w):
    return _run(y, w)


def cubed_fwd(y, w):
    return _run(y, w), (y, w)


def cubed_bwd(res, cot):
    y, w = res

    def body(i, ct):  # back through the steps: the loop carries the cotangent of (step count, y, w)
        k = 2 - i
        _, pullback = jax.vjp(_step, k, y * w ** k, w)
        return pullback(ct)
    ct = jax.lax.fori_loop(0, 3, body, cot)
    return None, ct[2]  # `y` declared not differentiated


cubed.defvjp(cubed_fwd, cubed_bwd)


@jax.custom_vjp
def cubed_wrong(y, w):
    return _run(y, w)


def cubed_wrong_fwd(y, w):
    return _run(y, w), (y, w)


def cubed_wrong_bwd(res, cot):
    y, w = res

    def body(i, ct):  # back through the steps: the loop carries the cotangent of (step count, y, w)
        k = 2 - i
        _, pullback = jax.vjp(_step, k, y * w ** k, w)
        return pullback(ct)
    ct = jax.lax.fori_loop(0, 3, body, cot)
    return None, 2.0 * ct[2]  # WRONG: a factor 2 for `w`


cubed_wrong.defvjp(cubed_wrong_fwd, cubed_wrong_bwd)


def EXAMPLE_ARGS():
    y, w = jnp.array([0.3, -1.2, 0.8]), jnp.array([0.5, 1.5, -1.0])
    return {"cubed": (y, w), "cubed_wrong": (y, w)}
'''


@pytest.mark.jax
def test_a_none_beside_an_integer_output_is_a_may_and_a_wrong_rule_still_fails(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "ops.py", cwd=tmp_path,
                   env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Silent as an error: `y`'s None is the rule's declaration, a "may" (right if no caller differentiates y).
    assert lines[0] == (
        "ops.py:13:2: VJP501 `cubed`: bwd cotangent for `y` may be wrong: the bwd rule returns None for it (a zero "
        "cotangent: it declares `y` not differentiated), right only if no caller differentiates `y`; it differs from "
        f"finite differences: max rel. error 1 at y={PREC}[3], w={PREC}[3] (order 1, {PREC}; tolerance {TOL}); the "
        "other arguments were compared")
    # Fires: the same None, and a factor 2 for `w`.
    assert lines[1] == (
        "ops.py:36:2: VJP501 `cubed_wrong`: bwd cotangent for `w` differs from finite differences: max rel. error 0.5 "
        f"at y={PREC}[3], w={PREC}[3] (order 1, {PREC}; tolerance {TOL}) (also reverse order 1)")
    assert ": 0 passed, 1 failed, 1 may be wrong, 0 not checked." in proc.stdout
