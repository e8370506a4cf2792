"""A custom_vjp over a function a `functools.wraps` decorator wraps (heldout8's recurrentgemma:
`@partial(jax.custom_vjp, nondiff_argnums=(1,))` over `@typed`, the library's type checker; here a
`jax.named_scope`): the recorder keyed the call by the wrapper's code (`scoped`, inside `typed`),
so check-grads said "never called" and checked at assumed inputs only. It now follows
`__wrapped__` to the decorated `def`, as the static model does: a rule wrong only above 2, which
the made-up inputs never reach, fails at the project's 3.0; the right one passes at its
recorded call. A wrapper with parameters of its own that the creator is applied to (logbesselk's
`custom_vjp(wrapped_func)` in a factory) stays the definition. Real JAX on CPU, a real command, through the real CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

OPS = '''\
import functools

import jax
import jax.numpy as jnp


def typed(function):
    @functools.wraps(function)
    def scoped(*args, **kwargs):
        with jax.named_scope(function.__name__):
            return function(*args, **kwargs)

    return scoped


@jax.custom_vjp
@typed
def square(x):
    return x * x


@typed
def square_fwd(x):
    return x * x, x


@typed
def square_bwd(x, g):
    return (2.0 * x * g,)


square.defvjp(square_fwd, square_bwd)


@jax.custom_vjp
@typed
def square_far(x):
    return x * x


@typed
def square_far_fwd(x):
    return x * x, x


@typed
def square_far_bwd(x, g):
    return (jnp.where(x > 2.0, 1.0, 2.0) * x * g,)  # WRONG above 2 only


square_far.defvjp(square_far_fwd, square_far_bwd)


def wrap(func):  # logbesselk's factory: the creator over a wrapper with parameters of its own
    @functools.wraps(func)
    def wrapped(x):
        return func(x)

    def fwd(x):
        return func(x), x

    def bwd(x, g):
        return (2.0 * x * g,)

    custom = jax.custom_vjp(wrapped)
    custom.defvjp(fwd, bwd)
    return custom


@wrap
def square_made(x):
    return x * x
'''

TRAIN = '''\
import jax.numpy as jnp

from pkg.ops import square, square_far, square_made

xs = jnp.array([0.5, 3.0])
print("ran", square(xs).shape, square_far(xs).shape, square_made(xs).shape)
'''


@pytest.mark.jax
def test_a_creator_over_a_wraps_decorator_is_recorded_under_the_decorated_def(tmp_path: Path) -> None:
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
    assert "ran (2,) (2,) (2,)" in proc.stderr
    rows = {r["function"]: r for r in json.loads(report.read_text())}
    assert (rows["square"]["status"], rows["square"]["at"], rows["square"]["called"]) == (
        "passed", "at 1 recorded call", True)
    assert (rows["square_far"]["status"], rows["square_far"]["called"]) == ("failed", True)
    failed = [c for c in rows["square_far"]["checks"] if c["status"] == "failed"]
    assert (failed[0]["code"], failed[0]["name"]) == ("VJP501", "reverse order 1"), failed
    assert failed[0]["detail"].startswith("bwd cotangent for `x` differs from finite differences: max rel. error "
                                          "0.5 at x="), failed[0]["detail"]
    # The wrapper with parameters of its own stays the definition (the static model's, in the factory).
    assert (rows["custom"]["status"], rows["custom"]["at"], rows["custom"]["called"]) == (
        "passed", "at 1 recorded call", True), rows["custom"]
    assert "3 under the paths, 3 called by the run, 3 checked, 2 passed (2 recorded calls checked), 1 failed, 0 not " \
        "checked, 0 never called" in proc.stdout, proc.stdout
