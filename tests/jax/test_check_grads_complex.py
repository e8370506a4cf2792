"""check-grads on complex arguments (heldout5's `fmmax_eig`: before, "no differentiable argument
holds real floating-point values", and its base and 26 sampled mutants were not checked). A complex
array is differentiated as JAX users do, through a real loss (`grad` of a real function of complex
inputs: JAX's convention gives the conjugate of the Wirtinger gradient), by its real and imaginary
parts; a complex output leaf gets a complex weight, so the loss sees both of its parts. An
eigenvector's phase is not fixed by the primal, so where the primal's own autodiff raises the
comparison is made again through `|output|^2` of the complex outputs. Real JAX on CPU, through the
real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
CPREC = "complex128" if PREC == "float64" else "complex64"
TOL = "1e-05" if PREC == "float64" else "0.03"
ROOT = Path(__file__).resolve().parents[2]

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def square(z):
    return z * z


def square_fwd(z):
    return z * z, z


def square_bwd(z, g):
    return (g * 2.0 * z,)


square.defvjp(square_fwd, square_bwd)


@jax.custom_vjp
def square_conj(z):
    return z * z


def square_conj_fwd(z):
    return z * z, z


def square_conj_bwd(z, g):
    return (g * 2.0 * jnp.conj(z),)  # WRONG: the cotangent of a holomorphic map takes no conjugate


square_conj.defvjp(square_conj_fwd, square_conj_bwd)


@jax.custom_jvp
def abs2(z):
    return jnp.real(z * jnp.conj(z))


@abs2.defjvp
def abs2_jvp(primals, tangents):
    (z,), (t,) = primals, tangents
    return abs2(z), 2.0 * jnp.real(jnp.conj(z) * t)


@jax.custom_jvp
def abs2_wrong(z):
    return jnp.real(z * jnp.conj(z))


@abs2_wrong.defjvp
def abs2_wrong_jvp(primals, tangents):
    (z,), (t,) = primals, tangents
    return abs2_wrong(z), 2.0 * jnp.real(z * t)  # WRONG: the conjugate is missing


def EXAMPLE_ARGS():
    z = jnp.array([1.0 + 2.0j, -0.5 + 0.3j, 0.7 - 1.1j], dtype=jnp.complex64)
    return {"square": (z,), "square_conj": (z,), "abs2": (z,), "abs2_wrong": (z,)}
'''


@pytest.mark.jax
def test_complex_arguments_are_checked_through_a_real_loss(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = f"at z={CPREC}[3] (`z` complex: differentiated through a real loss, by real and imaginary parts)"
    # Fires: a bwd that conjugates where JAX's convention does not, and a jvp rule that forgets to.
    assert lines[0].startswith(
        f"ops.py:21:2: VJP501 `square_conj`: bwd cotangent for `z` differs from finite differences: max rel. error "
        f"1.41 {at} (order 1, {PREC}; tolerance {TOL}); the primal's own autodiff agrees with finite differences"), lines
    assert lines[1].startswith(f"ops.py:48:2: VJP502 `abs2_wrong`: jvp tangent (along a random tangent) differs from "
                               "finite differences"), lines
    assert lines[2] == "Found 2 problems.", lines
    # Silent: JAX's own convention, for a holomorphic map and for a real function of a complex input.
    assert "ops.py:5: square (custom_vjp): passed at given inputs\n" in proc.stdout
    assert "ops.py:37: abs2 (custom_jvp): passed at given inputs\n" in proc.stdout
    assert ": 2 passed, 2 failed, 0 not checked." in proc.stdout


EXAMPLE = '''

def EXAMPLE_ARGS():
    return {"eig": (jnp.asarray(eval_inputs()[0] + 1j * eval_inputs()[1]),)}
'''


@pytest.mark.jax
def test_an_eigenvector_rule_is_compared_where_the_phase_cannot_change_it(tmp_path: Path) -> None:
    """fmmax's general complex `eig` (heldout5): JAX's own autodiff raises for non-symmetric
    eigenvectors, and a loss linear in the eigenvectors depends on the phase the solver picks."""
    base = (ROOT / "eval/mutation/heldout5/fmmax_eig.py").read_text()
    (tmp_path / "right.py").write_text(base + EXAMPLE)
    (tmp_path / "none.py").write_text((ROOT / "eval/mutation/cases/bwd_none_for_diff/fmmax_eig.py").read_text()
                                      + EXAMPLE)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "right.py",
                   "none.py", cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the mutant's finding is a "may" (a warning)
    lines = proc.stdout.splitlines()
    # Fires: bwd returning None for the matrix (the gradient silently zero).
    assert lines[0].startswith(
        "none.py:36:2: VJP501 `eig`: bwd cotangent for `matrix` may be wrong: the bwd rule returns None for it"), lines
    assert f"at matrix={CPREC}[3, 3], eps_relative=1e-12 (`matrix` complex" in lines[0], lines
    # Silent: the right rule (before: "max rel. error 0.228", finite differences following LAPACK's phase).
    assert "right.py:42: eig (custom_vjp): passed at given inputs\n" in proc.stdout
    assert ": 1 passed, 0 failed, 1 may be wrong, 0 not checked." in proc.stdout, proc.stdout
