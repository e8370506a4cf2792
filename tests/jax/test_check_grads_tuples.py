"""check-grads at recorded values that hold a tuple of three arrays (pmwd's particle state
`(pos, vel, acc)`, heldout5): the marker of a shape-only recorded value is a 3-tuple too, and
comparing an array with its tag made "the checker failed: is_leaf predicate returned a
non-boolean value" for every such definition. Now the tuple is data: a right rule passes, a
wrong one fails. Real JAX on CPU, in process."""

from __future__ import annotations

import importlib.util
import sys

import pytest

jax = pytest.importorskip("jax")
numpy = pytest.importorskip("numpy")

from vjplint.record.live import _load_child, live_plan  # noqa: E402

SOURCE = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def kick(state, dt):
    pos, vel, acc = state
    return pos + dt * jnp.sin(vel) + acc


def kick_fwd(state, dt):
    return kick(state, dt), (state, dt)


def kick_bwd(res, g):
    (pos, vel, acc), dt = res
    return ((g, g * dt * jnp.cos(vel), g), jnp.sum(g * jnp.sin(vel)))


kick.defvjp(kick_fwd, kick_bwd)


@jax.custom_vjp
def kick_wrong(state, dt):
    pos, vel, acc = state
    return pos + dt * jnp.sin(vel) + acc


def kick_wrong_fwd(state, dt):
    return kick_wrong(state, dt), (state, dt)


def kick_wrong_bwd(res, g):
    (pos, vel, acc), dt = res
    return ((g, g * dt * jnp.sin(vel), g), jnp.sum(g * jnp.sin(vel)))  # WRONG: sin for cos


kick_wrong.defvjp(kick_wrong_fwd, kick_wrong_bwd)
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("tuples") / "ops_tuples.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("ops_tuples", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ops_tuples"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("ops_tuples", None)


def _check(module, name):
    child = _load_child()
    fun = getattr(module, name)
    plan, _row, _digest = live_plan(fun.fun, "vjp", module.__file__, fun.fun.__code__.co_firstlineno, ())
    plan.update(kind="vjp", key=f"ops_tuples.{name}")
    state = tuple(numpy.array(v, numpy.float32) for v in ([0.1, 0.2, 0.3], [0.5, -0.4, 1.1], [0.0, 0.3, -0.2]))
    calls = [[state, numpy.float32(0.25)]]
    return child.check_live(jax, numpy, fun, plan, calls, 1, False, module)


def test_a_right_rule_at_a_tuple_of_three_arrays_passes(module):
    result = _check(module, "kick")
    assert result["status"] == "verified", result
    assert {c["name"]: c["status"] for c in result["checks"]}["reverse order 1"] == "passed"


def test_a_wrong_rule_at_a_tuple_of_three_arrays_fails(module):
    result = _check(module, "kick_wrong")
    assert result["status"] == "failed", result
    assert result["reason"].startswith("bwd cotangent for `state` differs from finite differences"), result["reason"]
