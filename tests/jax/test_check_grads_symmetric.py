"""check-grads on a rule written for symmetric matrices (pyscfad's generalized `eigh`, heldout5):
every call the module makes passes the matrix symmetrised (`0.5 * (a + a.T)`), so the rule's
first-order perturbation theory holds along symmetric directions only, and a random tangent made
the correct base fail (and every one of its mutants fail as it did). It is now checked through the
symmetrisation, as the module uses it, and a rule wrong there still fails. Real JAX on CPU, through
the real CLI; the static detection of the symmetrisation, unit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli
from vjplint.verify.synth import _is_symmetrisation

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def eigh_sym(a):
    w, v = jnp.linalg.eigh(a)
    return w, v


@eigh_sym.defjvp
def eigh_sym_jvp(primals, tangents):
    (a,), (at,) = primals, tangents
    w, v = eigh_sym(a)
    vt_at_v = v.T @ at @ v  # first-order perturbation theory: right for a symmetric tangent
    gap = w[None, :] - w[:, None]
    f = jnp.where(gap == 0, 0.0, 1.0 / jnp.where(gap == 0, 1.0, gap))
    return (w, v), (jnp.diag(vt_at_v), v @ (f * vt_at_v))


def spectrum(a):
    a = 0.5 * (a + a.T)
    return eigh_sym(a)


@jax.custom_jvp
def eigh_wrong(a):
    w, v = jnp.linalg.eigh(a)
    return w, v


@eigh_wrong.defjvp
def eigh_wrong_jvp(primals, tangents):
    (a,), (at,) = primals, tangents
    w, v = eigh_wrong(a)
    vt_at_v = v.T @ at @ v
    gap = w[None, :] - w[:, None]
    f = jnp.where(gap == 0, 0.0, 1.0 / jnp.where(gap == 0, 1.0, gap))
    return (w, v), (2.0 * jnp.diag(vt_at_v), v @ (f * vt_at_v))  # WRONG: a factor 2 on the eigenvalues


def spectrum_wrong(a):
    return eigh_wrong(0.5 * (a + a.T))


def EXAMPLE_ARGS():
    a = jnp.array([[1.2, 0.3, -0.2], [0.3, 2.1, 0.4], [-0.2, 0.4, 3.3]])
    return {"eigh_sym": (a,), "eigh_wrong": (a,)}
'''


@pytest.mark.jax
def test_a_rule_for_symmetric_matrices_is_checked_along_symmetric_directions(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Fires: a factor 2 on the eigenvalues' tangent, wrong along symmetric directions too.
    assert lines[0] == (
        "ops.py:26:2: VJP502 `eigh_wrong`: jvp tangent (along a random tangent) differs from finite differences: "
        f"max rel. error 0.5 at a={PREC}[3, 3] (`a` symmetrised as the module's caller does, line 43) (order 1, "
        f"{PREC}; tolerance 1e-05); the primal's own autodiff agrees with finite differences and differs from the "
        "rule by 0.5 (also reverse order 1)"), lines
    assert lines[1] == "Found 1 problem.", lines
    # Silent: right for the symmetric matrices its caller passes (before: max rel. error 0.205).
    assert "ops.py:5: eigh_sym (custom_jvp): passed at given inputs\n" in proc.stdout
    assert ": 1 passed, 1 failed, 0 not checked." in proc.stdout


@pytest.mark.unit
@pytest.mark.parametrize("source, expected", [
    ("0.5 * (a + a.T)", True), ("(a + a.T) / 2", True), ("a + a.T", True), ("0.5 * (a + a.T.conj())", True),
    ("0.5 * (a.conj().T + a)", True), ("(a + jnp.swapaxes(a, -1, -2)) / 2", True), ("0.5 * (a + a.mT)", True),
    ("0.5 * (a + b.T)", False), ("a @ a.T", False), ("0.5 * (a + a)", False), ("a + jnp.swapaxes(a, 0, 1)", False),
])
def test_what_counts_as_a_symmetrisation(source: str, expected: bool) -> None:
    assert _is_symmetrisation(ast.parse(source, mode="eval").body) is expected
