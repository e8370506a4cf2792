"""Calls under an eager `jax.vmap` are recorded as the calls they stand for (heldout8's logbesselk:
`jax.vmap(log_bessel_k)(v, x)`, checked "at assumed inputs only" before): the batch tracers hold
concrete batched values, so each example (sliced along its batch axis) is a recorded call, and
check-grads checks the rule there. A rule wrong only above 2.5, which the made-up inputs in
(0.25, 1.75) never reach, fails at the project's 3.0; the right one passes at the recorded
calls. Under `jit` around the `vmap` the values are not concrete: shapes only, as before. Real
JAX on CPU, a real command, through the real CLI; the slicing itself, unit, on real batch tracers."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def cube(x):
    return x ** 3


def cube_fwd(x):
    return x ** 3, x


def cube_bwd(x, g):
    return (3.0 * x * x * g,)


cube.defvjp(cube_fwd, cube_bwd)


@jax.custom_vjp
def cube_far(x):
    return x ** 3


def cube_far_fwd(x):
    return x ** 3, x


def cube_far_bwd(x, g):
    return (jnp.where(x > 2.5, 2.0, 3.0) * x * x * g,)  # WRONG above 2.5 only


cube_far.defvjp(cube_far_fwd, cube_far_bwd)
'''

TRAIN = '''\
import jax
import jax.numpy as jnp

from pkg.ops import cube, cube_far

xs = jnp.array([0.5, 1.0, 3.0])
print("ran", jax.vmap(cube)(xs).shape, jax.vmap(cube_far)(xs).shape)
'''


@pytest.mark.jax
def test_calls_under_an_eager_vmap_are_recorded_one_per_example(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(OPS)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    report = tmp_path / "report.json"
    proc = run_cli("check-grads", "--output-format", "concise", "--report", str(report), "pkg", "--record", "--",
                   sys.executable, "train.py", cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)},
                   timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ran (3,) (3,)" in proc.stderr
    rows = {r["function"]: r for r in json.loads(report.read_text())}
    assert (rows["cube"]["status"], rows["cube"]["at"]) == ("passed", "at 3 recorded calls")
    assert rows["cube_far"]["status"] == "failed"
    failed = [c for c in rows["cube_far"]["checks"] if c["status"] == "failed"]
    assert failed[0]["code"] == "VJP501" and failed[0]["name"] == "reverse order 1", failed
    assert failed[0]["detail"].startswith("bwd cotangent for `x` differs from finite differences: max rel. error "
                                          "0.333 at x="), failed[0]["detail"]
    # One batched call of float32[3] is three calls of a float32[] scalar.
    assert [(i["name"], i["value"], i["source"]) for i in rows["cube_far"]["inputs"]] == [
        ("x", "float32[]", "recorded: 3 calls seen in the project's runs")]


@pytest.mark.jax
def test_the_slicing_takes_each_example_and_gives_up_under_jit() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from vjplint.record.calls import _unbatched

    seen = []

    def f(x, y, z):
        seen.append(_unbatched([x, y, z], jax, np))
        return x

    jax.vmap(f, in_axes=(1, 0, None))(jnp.arange(6.0).reshape(2, 3), jnp.arange(3.0), 2.0)
    jax.jit(jax.vmap(f, in_axes=(1, 0, None)))(jnp.arange(6.0).reshape(2, 3), jnp.arange(3.0), 2.0)
    eager, under_jit = seen
    assert [[a.tolist(), b.tolist(), c] for a, b, c in eager] == [
        [[0.0, 3.0], 0.0, 2.0], [[1.0, 4.0], 1.0, 2.0], [[2.0, 5.0], 2.0, 2.0]]
    assert under_jit is None
    assert _unbatched([np.ones(2), 3.0], jax, np) is None  # no tracer: an ordinary call
