"""check-grads on a `jax.jit` between the creator and the function (heldout5's
`jit_under_creator/e3nn_einsum`: `@jax.custom_jvp` over `@jax.jit` over `einsum(eq, *xs)`). jit
traces the equation string the creator passes as it is, so every call raises; the primal without
its rule is the jitted function and raised too, so the module ended "not checked: the function
raises with the synthesised inputs" although the inputs were the project's. Now the Python function
under the jit is tried as well: where it runs, the definition is what raises, a failure. Real JAX
on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(0,))
@jax.jit
def contract(eq, x, y):
    return jnp.einsum(eq, x, y)


@contract.defjvp
def contract_jvp(eq, primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return contract(eq, x, y), contract(eq, x_dot, y) + contract(eq, x, y_dot)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def contract_plain(eq, x, y):
    return jnp.einsum(eq, x, y)


@contract_plain.defjvp
def contract_plain_jvp(eq, primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return contract_plain(eq, x, y), contract_plain(eq, x_dot, y) + contract_plain(eq, x, y_dot)


@jax.custom_jvp
@jax.jit
def broken(x, y):
    return jnp.dot(x, y[:, None, None])  # raises with or without its jit: the primal's own shapes


@broken.defjvp
def broken_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return broken(x, y), broken(x_dot, y) + broken(x, y_dot)


def EXAMPLE_ARGS():
    x, y = jnp.array([[1.0, 2.0], [0.5, -1.0]]), jnp.array([0.3, 0.7])
    return {"contract": ("ij,j->i", x, y), "contract_plain": ("ij,j->i", x, y), "broken": (x, jnp.ones((3,)))}
'''


@pytest.mark.jax
def test_a_jit_under_the_creator_that_raises_at_the_projects_inputs_fails(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Fires: jit traces the equation string.
    assert lines[0].startswith("ops.py:7:2: VJP502 `contract`: every call raises TypeError: Error interpreting "
                               "argument to"), lines
    assert lines[0].endswith("where the primal without its rule and without the `jax.jit` under the creator runs "
                             "(inputs the project gave)"), lines
    # Silent: a primal that raises on its own, jit or not, is not blamed on the definition (not checked) ...
    assert lines[1].startswith("ops.py:30:2: VJP509 `broken` not checked: the function raises with the "
                               "synthesised inputs"), lines
    assert lines[2] == "Found 2 problems.", lines
    # ... and the same rule without the jit passes.
    assert "ops.py:19: contract_plain (custom_jvp): passed at given inputs\n" in proc.stdout
