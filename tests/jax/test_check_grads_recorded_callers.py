"""check-grads runs the module's own callers at the arguments the project's run passed them (heldout6's
`axlearn_gmm`: `eval_fn(tokens, wi, wo)` calls `gmm_gpu(lhs, rhs, group_sizes, ...)`, so the inputs
made for the derivative fit no caller, and `forward_mode`, `jvp_caller`, `linearize_caller` and
`jvptracer_sniff` passed; heldout5's `jaxfdm_sparse_solve`, `fmmax_eig`). Nor was the derivative's
own call recorded: `gmm_gpu(..., tiling=..., interpret=False)` passes a keyword past a parameter
with a default, which the recorder did not resolve as JAX does. The recorder keeps, at a
call of a custom derivative, the arguments of the module-level functions of its file on the stack;
a caller taking only `*args` gets the caller's before it. Forward mode on a custom_vjp at those
arguments is an error (JAX raises it whatever the values), also where the derivative itself only
"may" be wrong (heldout6's `axlearn_stable_xent`, whose base warns). Real pytest recording, real
JAX on CPU, through the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
import functools

import jax
import jax.numpy as jnp
from jax.interpreters.ad import JVPTracer

SIZES = (2, 1)


def _kernel(lhs, rhs, sizes, transpose):
    w = jnp.concatenate([jnp.broadcast_to(rhs[g], (n,) + rhs.shape[1:]) for g, n in enumerate(sizes)])
    w = jnp.swapaxes(w, 1, 2) if transpose else w
    return jnp.einsum("mk,mkn->mn", lhs, w)


def _fwd(lhs, rhs, sizes, transpose):
    return _kernel(lhs, rhs, sizes, transpose), (lhs, rhs)


def _bwd(sizes, transpose, res, g):
    lhs, rhs = res
    return jax.vjp(lambda a, b: _kernel(a, b, sizes, transpose), lhs, rhs)[1](g)


def _gmm(lhs, rhs, sizes, transpose=False, interpret=False):
    return _kernel(lhs, rhs, sizes, transpose)


def _gmm_fwd(lhs, rhs, sizes, transpose=False, interpret=False):
    return _kernel(lhs, rhs, sizes, transpose), (lhs, rhs)


def _gmm_bwd(sizes, transpose, interpret, res, g):
    return _bwd(sizes, transpose, res, g)


gmm = jax.custom_vjp(_gmm, nondiff_argnums=(2, 3, 4))
gmm.defvjp(_gmm_fwd, _gmm_bwd)


def model(tokens, w):
    return jnp.tanh(gmm(tokens, w, SIZES, interpret=False))  # a keyword past a default: as JAX resolves it


def forward_usage(*args):
    return jax.jacfwd(model, argnums=(0, 1))(*args)


def _sniffed_kernel(lhs, rhs, sizes, transpose):
    return _kernel(lhs, rhs, sizes, transpose)


sniffed = jax.custom_vjp(_sniffed_kernel, nondiff_argnums=(2, 3))
sniffed.defvjp(_fwd, _bwd)


def sniffing_model(tokens, w):
    out = jnp.tanh(sniffed(tokens, w, SIZES, False))
    return out if isinstance(tokens, JVPTracer) else jax.lax.stop_gradient(out)


def _fine_kernel(lhs, rhs, sizes, transpose):
    return _kernel(lhs, rhs, sizes, transpose)


fine = jax.custom_vjp(_fine_kernel, nondiff_argnums=(2, 3))
fine.defvjp(_fwd, _bwd)


def fine_model(tokens, w):
    return jnp.tanh(fine(tokens, w, SIZES, False))


def reverse_usage(*args):
    return jax.jacrev(fine_model, argnums=(0, 1))(*args)


@jax.custom_vjp
def logged(x, scale):
    return jnp.sum(x ** 2) * scale, jnp.sum(x)


def logged_fwd(x, scale):
    return logged(x, scale), (x, scale)


def logged_bwd(res, g):
    x, scale = res
    return (2 * x * scale * g[0], None)


logged.defvjp(logged_fwd, logged_bwd)


def loss(x, scale):
    return logged(x, scale)[0]


def loss_forward(*args):
    return jax.jacfwd(loss)(*args)
'''

TESTS = '''\
import numpy as np

from pkg.ops import fine_model, loss, model, sniffing_model


def test_calls():
    tokens = np.array([[0.5, -1.0], [1.2, 0.4], [-0.3, 0.8]], np.float32)
    w = np.array([[[0.2, -0.4], [0.5, 0.3]], [[0.3, 0.8], [-0.2, 0.4]]], np.float32)
    for f in (model, sniffing_model, fine_model):
        assert np.all(np.isfinite(f(tokens, w)))
    assert np.isfinite(loss(np.array([0.3, -0.7, 1.1], np.float32), np.array(1.5, np.float32)))
'''


@pytest.mark.jax
def test_callers_run_at_the_arguments_the_run_passed_them(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(OPS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(TESTS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    env = {**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}
    proc = run_cli("check-grads", "--output-format", "concise", "--show-checks", "pkg", "--record", "--",
                   sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=tmp_path, env=env,
                   timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed" in proc.stderr
    lines = proc.stdout.splitlines()
    # Fires: `forward_usage` applies jacfwd to `model`, which calls the custom_vjp; it gets what the run
    # passed `model` (the derivative's own inputs fit neither caller: other names, another arity).
    assert lines[0] == (
        "pkg/ops.py:37:1: VJP501 `gmm`: its caller `forward_usage` (at the arguments the project's run passed "
        "the caller before it, which it passes on: float32[3, 2], float32[2, 2, 2]) applies forward-mode autodiff "
        "(jax.jvp, jacfwd) to this custom_vjp, and JAX raises TypeError: can't apply forward-mode autodiff (jvp) to "
        "a custom_vjp function.; a custom_vjp supports reverse mode only: use jax.grad/jacrev/vjp in the caller, or "
        "define the rule with custom_jvp"), lines
    assert "lhs=float32[3, 2] (recorded: 1 call seen in the project's runs), rhs=float32[2, 2, 2] (recorded: 1 call " \
           "seen in the project's runs), sizes=(2, 1) (recorded: 1 call seen in the project's runs), transpose=False " \
           "(recorded: 1 call seen in the project's runs), interpret=False (recorded" in proc.stdout, proc.stdout
    # Fires ("may"): `sniffing_model` stops the gradient unless it sees a JVPTracer.
    assert lines[1].startswith(
        "pkg/ops.py:53:1: VJP501 `sniffed`: the gradient of its caller `sniffing_model` (at the arguments the "
        "project's run passed it: float32[3, 2], float32[2, 2, 2]) differs from finite differences of the caller "
        "(max rel. error "), lines
    # Fires, although the derivative itself only may be wrong (its bwd ignores the cotangent of `output[1]`).
    assert lines[2].startswith("pkg/ops.py:78:2: VJP501 `logged`: its caller `loss_forward` (at the arguments the "
                               "project's run passed the caller before it, which it passes on: float32[3], "
                               "float32[]) applies forward-mode autodiff"), lines
    assert lines[3] == "Found 3 problems.", lines
    assert "pkg/ops.py:78: logged (custom_vjp): failed\n" in proc.stdout, proc.stdout
    assert "checks  reverse order 1 MAY BE WRONG, " in proc.stdout, proc.stdout
    # Silent: the same kernel under jacrev.
    assert "pkg/ops.py:66: fine (custom_vjp): passed at 1 recorded call\n" in proc.stdout, proc.stdout
