"""check-grads runs the module's own callers of a custom derivative after its checks pass (issue
#44, heldout3/4's `forward_mode` and `hessian_caller` misses): also for one made inside a
module-level function on every call (maxtext's `a2a_ragged_sort`), where that function and the
module's functions that call it are the callers; and a caller that raises inside the rule itself
while the module's other callers run at the same inputs (`jax.hessian` through a bwd whose
`pure_callback` has no JVP, scico's projector) is reported, as a "may" (at arguments a caller taking
`*args` borrows from the caller before it; forward mode on a custom_vjp there is an error). Real pytest recording, real
JAX on CPU, through the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
import jax
import jax.numpy as jnp
import numpy as np


def gather_sorted(x, w):
    @jax.custom_vjp
    def _gather(x, w):
        return jnp.sin(x) * w

    def _fwd(x, w):
        return _gather(x, w), (x, w)

    def _bwd(res, g):
        x, w = res
        return (g * w * jnp.cos(x), g * jnp.sin(x))

    _gather.defvjp(_fwd, _bwd)
    return _gather(x, w)


def model(x, w):
    return jnp.sum(gather_sorted(x, w))


def sensitivities(*args):
    return jax.jacfwd(model, argnums=(0,))(*args)


def gather_sorted_ok(x, w):
    @jax.custom_vjp
    def _gather(x, w):
        return jnp.sin(x) * w

    def _fwd(x, w):
        return _gather(x, w), (x, w)

    def _bwd(res, g):
        x, w = res
        return (g * w * jnp.cos(x), g * jnp.sin(x))

    _gather.defvjp(_fwd, _bwd)
    return _gather(x, w)


def model_ok(x, w):
    return jnp.sum(gather_sorted_ok(x, w))


def sensitivities_ok(*args):
    return jax.jacrev(model_ok, argnums=(0,))(*args)


def _host_double(y):
    return jax.pure_callback(lambda v: np.asarray(v) * 2.0, jax.ShapeDtypeStruct(y.shape, y.dtype), y,
                             vmap_method="sequential")


project = jax.custom_vjp(_host_double)
project.defvjp(lambda x: (_host_double(x), None), lambda _, g: (_host_double(g),))


def data_term(x):
    return 0.5 * jnp.sum(project(x) ** 2)


def curvature(*args):
    return jax.hessian(data_term)(*args)


def _host_double_ok(y):
    return jax.pure_callback(lambda v: np.asarray(v) * 2.0, jax.ShapeDtypeStruct(y.shape, y.dtype), y,
                             vmap_method="sequential")


project_ok = jax.custom_vjp(_host_double_ok)
project_ok.defvjp(lambda x: (_host_double_ok(x), None), lambda _, g: (_host_double_ok(g),))


def data_term_ok(x):
    return 0.5 * jnp.sum(project_ok(x) ** 2)


def residual_ok(*args):
    return project_ok(*args) - 1.0
'''

TESTS = '''\
import jax.numpy as jnp

from pkg.ops import data_term, data_term_ok, model, model_ok


def test_calls():
    x, w = jnp.array([0.1, 0.4, 0.7]), jnp.array([1.5, -0.5, 2.0])
    assert jnp.isfinite(model(x, w)) and jnp.isfinite(model_ok(x, w))
    assert jnp.isfinite(data_term(x)) and jnp.isfinite(data_term_ok(x))
'''


@pytest.mark.jax
def test_callers_of_a_derivative_made_in_a_function_and_a_caller_raising_in_the_rule(tmp_path: Path) -> None:
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
    # Forward mode on a custom_vjp, at the arguments the run passed the callers: an error (JAX raises it
    # whatever the values; tests/jax/test_check_grads_recorded_callers.py).
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed" in proc.stderr
    lines = proc.stdout.splitlines()
    # Fires: `sensitivities` applies jacfwd to `model`, which reaches the custom_vjp made in `gather_sorted`;
    # it takes `*args`, and gets what the run passed `model`.
    assert lines[0].startswith(
        "pkg/ops.py:7:6: VJP501 `_gather`: its caller `sensitivities` (at the arguments the project's run passed "
        "the caller before it, which it passes on: float32[3], float32[3]) ")
    assert lines[0].endswith(
        "applies forward-mode autodiff (jax.jvp, jacfwd) to this custom_vjp, and JAX raises TypeError: can't apply "
        "forward-mode autodiff (jvp) to a custom_vjp function.; a custom_vjp supports reverse mode only: use "
        "jax.grad/jacrev/vjp in the caller, or define the rule with custom_jvp"), lines[0]
    # Fires: `curvature` differentiates the bwd again (jax.hessian); its pure_callback has no JVP.
    assert lines[1].startswith("pkg/ops.py:59:1: VJP501 `project`: its caller `curvature` (at the arguments the "
                               "project's run passed the caller before it, which it passes on: float32[3]) "), lines
    assert "raises inside the bwd rule `<lambda>` (line 60) where the module's other callers run: ValueError: Pure " \
           "callbacks do not support JVP." in lines[1], lines[1]
    assert lines[2] == "Found 2 problems.", lines
    # Silent: the same definitions under jacrev and grad.
    assert "pkg/ops.py:31: _gather (custom_vjp): passed at 1 recorded call\n" in proc.stdout
    assert "pkg/ops.py:76: project_ok (custom_vjp): passed at 1 recorded call\n" in proc.stdout
    assert "pkg/ops.py:7: _gather (custom_vjp): failed\n" in proc.stdout  # forward mode on it: an error
    assert "pkg/ops.py:59: project (custom_vjp): may be wrong\n" in proc.stdout  # borrowed arguments: a "may"
    assert ": 2 passed, 1 failed, 1 may be wrong, 0 not checked." in proc.stdout
