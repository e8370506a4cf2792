"""check-grads on a bwd that returns an explicit zero cotangent (`jnp.zeros_like(teacher)`: a
distillation loss's detached teacher; heldout10's `ejkernel_fused_kl_core`, a correct base that
failed with "bwd cotangent for `teacher` differs ... max rel. error 1"): the rule declares the
argument not differentiated, as a `None` does, so it "may be wrong" (a warning: right only if no
caller differentiates it) and the other arguments are compared; a rule wrong in them still fails.
Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def kl(student, teacher):
    p_t = jax.nn.softmax(teacher)
    return jnp.sum(p_t * (jax.nn.log_softmax(teacher) - jax.nn.log_softmax(student)))


def kl_fwd(student, teacher):
    return kl(student, teacher), (student, teacher)


def kl_bwd(res, g):
    student, teacher = res
    return g * (jax.nn.softmax(student) - jax.nn.softmax(teacher)), jnp.zeros_like(teacher)


kl.defvjp(kl_fwd, kl_bwd)


@jax.custom_vjp
def kl_wrong(student, teacher):
    p_t = jax.nn.softmax(teacher)
    return jnp.sum(p_t * (jax.nn.log_softmax(teacher) - jax.nn.log_softmax(student)))


def kl_wrong_fwd(student, teacher):
    return kl_wrong(student, teacher), (student, teacher)


def kl_wrong_bwd(res, g):
    student, teacher = res
    return 2.0 * g * (jax.nn.softmax(student) - jax.nn.softmax(teacher)), jnp.zeros_like(teacher)  # WRONG: 2


kl_wrong.defvjp(kl_wrong_fwd, kl_wrong_bwd)


@jax.custom_vjp
def anchored(x0, w):  # the root does not depend on where the search starts (fax's root_solve)
    return w * w + 0.0 * x0


def anchored_fwd(x0, w):
    return anchored(x0, w), (x0, w)


def anchored_bwd(res, g):
    x0, w = res
    return jnp.asarray(jnp.zeros_like(x0), jnp.bfloat16), 2.0 * w * g  # a zero, cast: nothing is lost


anchored.defvjp(anchored_fwd, anchored_bwd)


def EXAMPLE_ARGS():
    s, t = jnp.array([0.3, -1.2, 0.8, 0.1]), jnp.array([1.0, 0.2, -0.5, 0.4])
    return {"kl": (s, t), "kl_wrong": (s, t), "anchored": (s, t)}
'''


@pytest.mark.jax
def test_an_explicit_zero_cotangent_is_a_declared_constant_and_the_others_are_compared(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "ops.py:5:2: VJP501 `kl`: bwd cotangent for `teacher` may be wrong: the bwd rule returns zeros for it "
        "(`zeros_like`, under every cotangent tried: it declares `teacher` not differentiated), right only if no "
        "caller differentiates `teacher`; it differs from finite differences: max rel. error 1 at "
        f"student={PREC}[4], teacher={PREC}[4] (order 1, {PREC}; tolerance 1e-05); the primal's own autodiff agrees "
        "with finite differences and differs from the rule by 1; the other arguments were "
        "compared"), lines
    assert lines[1].startswith(
        "ops.py:23:2: VJP501 `kl_wrong`: bwd cotangent for `student` differs from finite differences: max rel. "
        "error 0.5 at "), lines
    # A zero cotangent cast to bfloat16 for a float32 input loses no precision (heldout10's `ok` mutant
    # bwd_ct_bf16/fax_root_solve failed: "comes back as bfloat16 ... silently loses precision").
    assert "ops.py:41: anchored (custom_vjp): passed at given inputs\n" in proc.stdout, proc.stdout
    assert ": 1 passed, 1 failed, 1 may be wrong, 0 not checked." in proc.stdout, proc.stdout
