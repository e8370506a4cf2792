"""Inputs from the project's own runs (vjplint.record): `pytest -p vjplint.record` and
`vjplint check-grads --record -- CMD` save the arguments each custom derivative receives into
the cache directory, and check-grads uses them before call sites and probing, saying so. Real
pytest, real Python, real JAX on CPU, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, ROOT, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
TOL = {"float64": "1e-05", "float32": "0.03"}[PREC]

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def log_excess(x):  # defined above 7 only: outside every domain check-grads tries
    return jnp.log(x - 7.0)


def log_excess_fwd(x):
    return log_excess(x), x


def log_excess_bwd(x, g):
    return (g / (x - 7.0),)


log_excess.defvjp(log_excess_fwd, log_excess_bwd)


@jax.custom_jvp
def log_shift(x):
    return jnp.log(x - 2.0)


@log_shift.defjvp
def log_shift_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log_shift(x), t / (x - 2.0)
'''
TESTS = '''\
import jax
import jax.numpy as jnp

from pkg.ops import log_excess, log_shift


def test_log_excess():
    for n in (3, 3, 5):
        x = jnp.linspace(8.0, 9.0, n)
        assert jax.grad(lambda x: log_excess(x).sum())(x).shape == (n,)


def test_log_shift_under_jit():
    assert jax.jit(log_shift)(jnp.array([3.0, 4.0])).shape == (2,)
'''


def _project(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text(OPS)
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text(TESTS)
    (root / "pyproject.toml").write_text("[tool.vjplint]\n")


def _inputs(report: Path) -> dict:
    return {r["function"]: (r["status"], [(i["name"], i["value"], i["source"]) for i in r["inputs"]])
            for r in json.loads(report.read_text())}


@pytest.mark.jax
def test_pytest_plugin_records_and_check_grads_uses_the_recording(tmp_path: Path) -> None:
    _project(tmp_path)
    before = run_cli("check-grads", "--output-format", "concise", "pkg", cwd=tmp_path, env=JAX_ENV, timeout=600)
    assert f"pkg/ops.py:5:2: VJP509 `log_excess` not checked: no input domain tried decides: the primal returns NaN " \
           f"or inf at x={PREC}[3] (and 5 other domains: in (0, 1), of unit norm, in rows that sum to one, above 2, " \
           "below 0); give real inputs: `vjplint check-grads --record -- pytest ...`, EXAMPLE_ARGS() in the module, " \
           "or [tool.vjplint.verify] examples" in before.stdout, before.stdout + before.stderr
    env = {**os.environ, **JAX_ENV, "PYTHONPATH": pythonpath(tmp_path, ROOT)}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "vjplint.record", "-p", "no:cacheprovider",
                            "tests"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert len(list((tmp_path / ".vjplint_cache" / "recorded").glob("*.pkl"))) == 1
    report = tmp_path / "report.json"
    proc = run_cli("check-grads", "--report", str(report), "pkg", cwd=tmp_path, env=JAX_ENV, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _inputs(report) == {
        # Concrete values under grad (the tracers' values), at the signature seen most: float32[3], by two
        # grads, each calling it twice (the traced call, and fwd's own call).
        "log_excess": ("passed", [("x", "float32[3]", "recorded: 4 calls seen in the project's runs")]),
        # Under jit only the shape is known: made-up values at it, moved above 2 for the log: a pass at
        # assumed inputs only, not counted as one.
        "log_shift": ("assumed", [("x", "float32[2]", "assumed: values at a recorded shape (1 call seen in the "
                                  "project's runs); values above 2")])}
    assert ": 1 passed, 0 failed, 1 at assumed inputs only (not counted as passed), 0 not checked." in proc.stdout
    # Checked in the pytest process, at its distinct recorded calls: the two grads at float32[3] pass the same
    # values (one kept: a sample, not copies).
    assert "\ncoverage: 2 under the paths, 2 called by the run, 2 checked, 1 passed (1 recorded call checked), " \
           "0 failed, 0 not checked, 0 never called\n" in proc.stdout, proc.stdout
    again = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "pkg", cwd=tmp_path, env=JAX_ENV,
                    timeout=600)
    assert "VJP509 `log_excess` not checked: no input domain tried decides" in again.stdout


@pytest.mark.jax
def test_record_runs_any_command_and_finds_a_rule_wrong_at_the_recorded_inputs(tmp_path: Path) -> None:
    _project(tmp_path)
    ops = tmp_path / "pkg" / "ops.py"
    ops.write_text(OPS.replace("return (g / (x - 7.0),)", "return (g / (x - 6.0),)  # WRONG"))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp

        from pkg.ops import log_excess

        print("trained", jax.grad(lambda x: log_excess(x).sum())(jnp.full(4, 8.0)).shape)
        """))
    env = {**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}
    proc = run_cli("check-grads", "--output-format", "concise", "pkg", "--record", "--", sys.executable, "train.py",
                   cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vjplint: recorded 1 custom derivative while running" in proc.stderr
    assert "train.py` (exit status 0)" in proc.stderr
    assert "trained (4,)" in proc.stderr  # the command's own output goes to stderr: stdout is the report's
    assert f"pkg/ops.py:5:2: VJP501 `log_excess`: bwd cotangent for `x` differs from finite differences: max rel. " \
           f"error 0.5 at x={PREC}[4] (order 1, {PREC}; tolerance {TOL}); the primal's own autodiff agrees with " \
           "finite differences and differs from the rule by 0.5" in proc.stdout, proc.stdout
    usage = run_cli("check-grads", "--record", "pkg", cwd=tmp_path)
    assert usage.returncode == 2 and "--record needs the command to run after `--`" in usage.stderr


WRAPPED = '''\
import equinox as eqx
import jax.numpy as jnp
from flax import nnx


@eqx.filter_custom_vjp
def eqx_scale(vjp_arg, k):
    return vjp_arg * k


@eqx_scale.def_fwd
def eqx_scale_fwd(perturbed, vjp_arg, k):
    return vjp_arg * k, None


@eqx_scale.def_bwd
def eqx_scale_bwd(residuals, grad_obj, perturbed, vjp_arg, k):
    return grad_obj * k


@eqx.filter_custom_jvp
def eqx_square(x):
    return x * x


@eqx_square.def_jvp
def eqx_square_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x * x, 2 * x * t


@nnx.custom_vjp
def nnx_sin_mul(x, y):
    return jnp.sin(x) * y


def nnx_sin_mul_fwd(x, y):
    return nnx_sin_mul(x, y), (x, y)


def nnx_sin_mul_bwd(res, g):
    x, y = res
    _, g = g  # nnx passes the input updates' cotangents first
    return jnp.cos(x) * y * g, jnp.sin(x) * g


nnx_sin_mul.defvjp(nnx_sin_mul_fwd, nnx_sin_mul_bwd)
'''
WRAPPED_TESTS = '''\
import jax
import jax.numpy as jnp

from pkg.wrapped import eqx_scale, eqx_square, nnx_sin_mul


def test_calls():
    x = jnp.array([0.5, 1.5, 2.5])
    assert jax.grad(lambda x: eqx_scale(x, 3.0).sum())(x).shape == (3,)
    assert jax.grad(lambda x: eqx_square(x).sum())(x).shape == (3,)
    assert jax.grad(lambda x: nnx_sin_mul(x, x + 1.0).sum())(x).shape == (3,)
'''


@pytest.mark.jax
def test_library_wrappers_are_recorded_under_the_users_function(tmp_path: Path) -> None:
    """equinox's filter_custom_vjp/jvp and flax's nnx.custom_vjp wrap an internal function in
    jax.custom_vjp/jvp with rearranged arguments: their calls are recorded under the decorated
    function, with the arguments its callers passed, and check-grads uses them."""
    pytest.importorskip("equinox")
    pytest.importorskip("flax.nnx")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "wrapped.py").write_text(WRAPPED)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_wrapped.py").write_text(WRAPPED_TESTS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    env = {**os.environ, **JAX_ENV, "PYTHONPATH": pythonpath(tmp_path, ROOT)}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "vjplint.record", "-p", "no:cacheprovider",
                            "tests"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    report = tmp_path / "report.json"
    proc = run_cli("check-grads", "--report", str(report), "pkg", cwd=tmp_path, env=JAX_ENV, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _inputs(report) == {
        # equinox differentiates `vjp_arg` only (it raises for the others): `k` is not compared.
        "eqx_scale": ("passed", [("vjp_arg", "float32[3]", "recorded: 1 call seen in the project's runs"),
                                 ("k", "3.0", "recorded: 1 call seen in the project's runs")]),
        "eqx_square": ("passed", [("x", "float32[3]", "recorded: 1 call seen in the project's runs")]),
        "nnx_sin_mul": ("passed", [("x", "float32[3]", "recorded: 2 calls seen in the project's runs"),
                                   ("y", "float32[3]", "recorded: 2 calls seen in the project's runs")])}


@pytest.mark.jax
def test_importing_the_plugin_does_not_import_jax() -> None:
    proc = subprocess.run([sys.executable, "-c", "import sys, vjplint.record; print('jax' in sys.modules)"],
                          env={**os.environ, "PYTHONPATH": pythonpath(ROOT)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
