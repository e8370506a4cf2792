"""check-grads after a recorded run in which JAX raised at a call of a custom derivative for the
definition or the call itself (heldout4/5's `caller_kwonly_option`: the primal gains a keyword-only
option and a caller passes it, which JAX cannot resolve to positions): the test raises at the call,
so no call's arguments are kept, and the definition used to end "not checked" (inside a factory,
"cannot reach it"). The raise is kept on its definition with the caller's line and reported there;
the same definition called without the keyword passes. Real pytest, real JAX on CPU, through the
real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def distance(x1, x2, *, eps=1e-6):
    return jnp.sqrt(jnp.sum((x1 - x2) ** 2) + eps)


@distance.defjvp
def distance_jvp(primals, tangents):
    (x1, x2), (t1, t2) = primals, tangents
    d = distance(x1, x2)
    return d, jnp.sum((x1 - x2) * (t1 - t2)) / d


@jax.custom_jvp
def distance_ok(x1, x2, *, eps=1e-6):
    return jnp.sqrt(jnp.sum((x1 - x2) ** 2) + eps)


@distance_ok.defjvp
def distance_ok_jvp(primals, tangents):
    (x1, x2), (t1, t2) = primals, tangents
    d = distance_ok(x1, x2)
    return d, jnp.sum((x1 - x2) * (t1 - t2)) / d


def kernel(x1, x2):
    return jnp.exp(-distance(x1, x2, eps=1e-8))


def kernel_ok(x1, x2):
    return jnp.exp(-distance_ok(x1, x2))
'''

TESTS = '''\
import jax.numpy as jnp

from pkg.ops import kernel, kernel_ok


def test_kernel():
    assert jnp.isfinite(kernel(jnp.array([0.1, 0.5]), jnp.array([0.3, -0.2])))


def test_kernel_ok():
    assert jnp.isfinite(kernel_ok(jnp.array([0.1, 0.5]), jnp.array([0.3, -0.2])))
'''


@pytest.mark.jax
def test_a_call_jax_refuses_in_the_run_is_reported_on_the_definition(tmp_path: Path) -> None:
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
    assert "1 failed, 1 passed" in proc.stderr  # the tests' own outcome, untouched
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "pkg/ops.py:5:2: VJP502 `distance`: JAX raises at a call the project's run made (pkg/ops.py:30): TypeError: "
        "The input arguments to the custom_jvp-decorated function distance could not be resolved to "
        "positional-only arguments. Binding failed with the error: The following keyword arguments could not be "
        "resolved to positions: eps"), lines
    assert lines[1] == "Found 1 problem.", lines
    assert "pkg/ops.py:5: distance (custom_jvp): failed\n    checks  call FAILED\n" in proc.stdout
    assert "pkg/ops.py:17: distance_ok (custom_jvp): passed at 1 recorded call\n" in proc.stdout
    assert ": 1 passed, 1 failed, 0 not checked." in proc.stdout
