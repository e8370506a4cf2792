"""check-grads on three right rules heldout8 (an unseen set) blamed, each beside a wrong one that
still fails. Real JAX on CPU, through the real CLI, one run for the six definitions:

- a matrix the primal reads only the symmetric part of (`eigh` symmetrises its input: NIFTy's
  `_solve`): every value the project passes is symmetric, and the rule (`dA @ y`) is right along
  symmetric directions only; a random tangent made the right rule fail (max rel. error 0.168). It
  is now checked along symmetric directions when the primal does not change under an added
  antisymmetric matrix.
- a module that raises only with float64 on (agjax's host callback returning an int32 key where
  `jnp.asarray(0)` declares int64; trajax's `lax.eq` of int64 and int32): the project never runs
  it so; it was an error ("reverse mode raises with the bwd rule") or "not checked". Now checked
  with float64 off, at the project's precision, saying so.
- a cotangent for a Python number (matfree's `damp=0.0`): JAX gives the number its default dtype,
  float32, so a float32 cotangent is not "narrower than float64"; a bfloat16 one still is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
# Where the device has no float64 (a TPU) nothing turns it on, and nothing raises.
NARROWED = (" (float64 off, as the project runs it: with it on the module raises TypeError: lax.eq requires "
            "arguments to have the same dtypes, got int64, int32. (Tip: jnp.equal is a similar function that does "
            "automatic type promotion on inputs).)") if device_has_float64() else ""

OPS = '''\
import jax
import jax.numpy as jnp
from jax import lax


@jax.custom_jvp
def spd_solve(A, x):
    v, U = jnp.linalg.eigh(A)  # reads only A's symmetric part
    return U @ ((U.T @ x) / v)


@spd_solve.defjvp
def spd_solve_jvp(primals, tangents):
    (A, x), (dA, dx) = primals, tangents
    y = spd_solve(A, x)
    return y, spd_solve(A, dx - dA @ y)  # right for symmetric dA


@jax.custom_jvp
def spd_solve_wrong(A, x):
    v, U = jnp.linalg.eigh(A)
    return U @ ((U.T @ x) / v)


@spd_solve_wrong.defjvp
def spd_solve_wrong_jvp(primals, tangents):
    (A, x), (dA, dx) = primals, tangents
    y = spd_solve_wrong(A, x)
    return y, spd_solve_wrong(A, dx + dA @ y)  # WRONG: the sign of the matrix's term


@jax.custom_vjp
def square(x):
    return x * x


def square_fwd(x):
    return x * x, (x, jnp.asarray(0))


def square_bwd(res, g):
    x, key = res
    first = lax.eq(key, jnp.int32(0))  # int64 against int32 with float64 on: JAX raises; the project never runs so
    return (jnp.where(first, 2.0, 0.0) * x * g,)


square.defvjp(square_fwd, square_bwd)


@jax.custom_vjp
def square_wrong(x):
    return x * x


def square_wrong_fwd(x):
    return x * x, (x, jnp.asarray(0))


def square_wrong_bwd(res, g):
    x, key = res
    first = lax.eq(key, jnp.int32(0))
    return (jnp.where(first, 3.0, 0.0) * x * g,)  # WRONG: 3x


square_wrong.defvjp(square_wrong_fwd, square_wrong_bwd)


@jax.custom_vjp
def scaled(x, scale):
    return x * scale


def scaled_fwd(x, scale):
    return x * scale, (x, scale)


def scaled_bwd(res, g):
    x, scale = res
    return g * scale, jnp.sum(g * x).astype(jnp.float32)  # the project passes `scale` as a Python float


scaled.defvjp(scaled_fwd, scaled_bwd)


@jax.custom_vjp
def scaled_narrow(x, scale):
    return x * scale


def scaled_narrow_fwd(x, scale):
    return x * scale, (x, scale)


def scaled_narrow_bwd(res, g):
    x, scale = res
    return g * scale, jnp.sum(g * x).astype(jnp.bfloat16)  # WRONG: narrower than JAX's float32 for it


scaled_narrow.defvjp(scaled_narrow_fwd, scaled_narrow_bwd)


def EXAMPLE_ARGS():
    A = jnp.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.4], [-0.2, 0.4, 3.0]], jnp.float32)
    x = jnp.array([0.5, -1.0, 0.7], jnp.float32)
    return {"spd_solve": (A, x), "spd_solve_wrong": (A, x), "square": (x,), "square_wrong": (x,),
            "scaled": (x, 0.5), "scaled_narrow": (x, 0.5)}
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("heldout8")
    (tmp / "ops.py").write_text(OPS)
    (tmp / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp)}, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.jax
def test_a_matrix_the_primal_reads_only_the_symmetric_part_of_is_checked_along_symmetric_directions(run) -> None:
    lines = run.splitlines()
    assert lines[0] == (
        "ops.py:19:2: VJP502 `spd_solve_wrong`: jvp tangent (along a random tangent) differs from finite "
        f"differences: max rel. error 0.393 at A={PREC}[3, 3], x={PREC}[3] (`A` along symmetric directions: every "
        "value the project passed is symmetric and the primal reads only its symmetric part, as `eigh` does) "
        f"(order 1, {PREC}; tolerance 1e-05); the primal's own autodiff agrees with finite differences and differs "
        "from the rule by 0.393 (also reverse order 1)"), lines
    assert "ops.py:6: spd_solve (custom_jvp): passed at given inputs\n" in run


@pytest.mark.jax
def test_a_module_that_raises_only_with_float64_on_is_checked_with_it_off(run) -> None:
    lines = run.splitlines()
    assert lines[1] == (
        "ops.py:50:2: VJP501 `square_wrong`: bwd cotangent for `x` differs from finite differences: max rel. error "
        f"0.333 at x=float32[3]{NARROWED} (order 1, float32; tolerance 0.03); the primal's own "
        "autodiff agrees with finite differences and differs from the rule by 0.333"), lines
    assert "ops.py:32: square (custom_vjp): passed at given inputs\n" in run


@pytest.mark.jax
def test_a_python_numbers_cotangent_is_compared_with_jaxs_default_dtype(run) -> None:
    lines = run.splitlines()
    assert lines[2] == (
        "ops.py:85:2: VJP501 `scaled_narrow`: bwd cotangent for `scale` comes back as bfloat16 where the project "
        "passes `scale` as float32: JAX keeps the rule's dtype, so the gradient silently loses precision (the "
        f"primal's own autodiff does not narrow it), at x={PREC}[3], scale=0.5"), lines
    assert lines[3] == "Found 3 problems.", lines
    assert "ops.py:68: scaled (custom_vjp): passed at given inputs\n" in run
    assert ": 3 passed, 3 failed, 0 not checked." in run
