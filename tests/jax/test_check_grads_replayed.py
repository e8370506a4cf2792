"""Two ways a recorded run reached a rule and check-grads still did not see it used as the project
uses it (heldout8's squishyplanet and neuralpfaffian's `slog_pfaffian = jit(slog_pfaffian)`;
logbesselk's `hessian_usage`). Real JAX on CPU, a real pytest run under `--record`, the real CLI:

- **called only under `jit`**: the tracers hold no values, so the checks ran at made-up values of
  the recorded shapes ("at assumed inputs only"), where a rule wrong only above 2 passes. The
  module's caller outside the `jit` held concrete values: it is rerun at the arguments the run
  passed it with `jax.disable_jit()`, and the rule is checked at the values the project's `jit`
  traced it with.
- **a caller that raises with float64 on only** (a `lax.cond` whose branch computes in the default
  float dtype: float64 once the checks turn it on, float32 in the project): every caller then
  raised, so a `jax.hessian` caller of a custom_vjp (forward mode: JAX always raises) went
  unreported. Such a caller is checked with float64 off, as the project runs it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
import jax
import jax.numpy as jnp
from jax import lax


@jax.custom_jvp
def softlog(x):
    return jnp.log1p(jnp.exp(x))


@softlog.defjvp
def softlog_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softlog(x), jax.nn.sigmoid(x) * t


softlog = jax.jit(softlog)


@jax.custom_jvp
def softlog_far(x):
    return jnp.log1p(jnp.exp(x))


@softlog_far.defjvp
def softlog_far_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softlog_far(x), jnp.where(x > 2.0, 2.0, 1.0) * jax.nn.sigmoid(x) * t  # WRONG above 2 only


softlog_far = jax.jit(softlog_far)


def _guarded(f, x):
    # The branch taken computes in the default float dtype (`linspace`), the other in `x`'s: with
    # float64 on, float32 arguments make the branches differ and `lax.cond` raises; the project
    # runs with it off.
    return lax.cond(x[0] > 0, lambda: f(x) + 0.0 * jnp.sum(jnp.linspace(0.0, 1.0, 3)),
                    lambda: jnp.full(x.shape, jnp.nan, x.dtype))


@jax.custom_vjp
def cube(x):
    return _guarded(lambda v: v ** 3, x)


def cube_fwd(x):
    return cube(x), x


def cube_bwd(x, g):
    return (3.0 * x * x * g,)


cube.defvjp(cube_fwd, cube_bwd)


@jax.custom_vjp
def square(x):
    return _guarded(lambda v: v * v, x)


def square_fwd(x):
    return square(x), x


def square_bwd(x, g):
    return (2.0 * x * g,)


square.defvjp(square_fwd, square_bwd)


def eval_fn(x):
    return jnp.sum(softlog(x * 2.0)) + jnp.sum(softlog_far(x * 2.0)) + jnp.sum(cube(x)) + jnp.sum(square(x))


def hessian_usage(*args):
    return jax.hessian(lambda *a: jnp.sum(cube(*a)))(*args)  # forward mode over a custom_vjp
'''

TEST = '''\
import numpy as np

from pkg.ops import eval_fn


def test_usage():
    eval_fn(np.array([0.3, 0.9, 1.4], np.float32))
'''


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replayed")
    (tmp / "pkg").mkdir()
    (tmp / "pkg" / "__init__.py").write_text("")
    (tmp / "pkg" / "ops.py").write_text(OPS)
    (tmp / "test_usage.py").write_text(TEST)
    (tmp / "pyproject.toml").write_text("[tool.vjplint]\n")
    report = tmp / "report.json"
    proc = run_cli("check-grads", "--output-format", "concise", "--report", str(report), "pkg", "--record", "--",
                   sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "test_usage.py",
                   cwd=tmp, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp)}, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return {r["function"]: r for r in json.loads(report.read_text())}


REPLAYED = ("recorded: 1 call seen in the project's runs; the run called it only under `jit`: its values from the "
            "caller `eval_fn` rerun at the arguments the run passed it, with jit off")


@pytest.mark.jax
def test_a_rule_called_only_under_jit_is_checked_at_the_values_the_jit_traced(rows) -> None:
    right, wrong = rows["softlog"], rows["softlog_far"]
    assert (right["status"], right["at"]) == ("passed", "at 1 recorded call"), right
    assert [(i["name"], i["value"], i["source"]) for i in right["inputs"]] == [("x", "float32[3]", REPLAYED)]
    assert wrong["status"] == "failed", wrong
    failed = [c for c in wrong["checks"] if c["status"] == "failed"]
    assert (failed[0]["code"], failed[0]["name"]) == ("VJP502", "forward order 1"), failed
    assert failed[0]["detail"].startswith("jvp tangent (along a random tangent) differs from finite differences: "
                                          "max rel. error "), failed[0]["detail"]
    assert [i["source"] for i in wrong["inputs"]] == [REPLAYED]


@pytest.mark.jax
def test_a_caller_that_raises_only_with_float64_on_is_checked_with_it_off(rows) -> None:
    cube, square = rows["cube"], rows["square"]
    assert cube["status"] == "failed", cube
    failed = [c for c in cube["checks"] if c["status"] == "failed"]
    assert [(c["name"], c["code"], c.get("severity", "error")) for c in failed] == [("caller", "VJP501", "error")]
    assert failed[0]["detail"].startswith(
        "its caller `hessian_usage` (at the arguments the project's run passed the caller before it, which it "
        "passes on: float32[3]) (float64 off, as the project runs it: with it on the caller raises TypeError: "
        "cond branches must have equal output types"), failed[0]["detail"]
    assert failed[0]["detail"].endswith(
        "applies forward-mode autodiff (jax.jvp, jacfwd) to this custom_vjp, and JAX raises TypeError: can't apply "
        "forward-mode autodiff (jvp) to a custom_vjp function.; a custom_vjp supports reverse mode only: use "
        "jax.grad/jacrev/vjp in the caller, or define the rule with custom_jvp"), failed[0]["detail"]
    assert (square["status"], square["at"]) == ("passed", "at 1 recorded call"), square
