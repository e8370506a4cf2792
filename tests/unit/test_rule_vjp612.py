"""VJP612 through the core API: look-alikes that no fixture can hold (another rule reports them,
or JAX cannot run them) and the edges of its numerical test."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import lint

HEAD = """
import jax
import jax.numpy as jnp
from functools import partial

EPS = 0.0
"""


def codes(body: str) -> list:
    return [(d.location.row, d.location.column) for d in lint(textwrap.dedent(HEAD + body), select=["VJP612"])]


@pytest.mark.parametrize("body", [
    # a guard on the tangent (VJP601 reports the nonlinear tangent)
    """
@jax.custom_jvp
def passthrough(x):
    return x

@passthrough.defjvp
def passthrough_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    scaled = 2.0 * dx
    return x, jnp.where(scaled == 0, 0.0, scaled / 2.0)
""",
    # a guard on a name derived from two arguments: pinning it alone does not approach the limit
    """
@jax.custom_jvp
def norm2(x, y):
    return jnp.sqrt(x * x + y * y)

@norm2.defjvp
def norm2_jvp(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    r = jnp.sqrt(x * x + y * y)
    safe = jnp.where(r == 0, 1.0, r)
    return r, jnp.where(r == 0, 0.0, (x * dx + y * dy) / safe)
""",
    # a kink: min(x, 1) has slopes 0 and 1 on either side of 1
    """
@jax.custom_jvp
def clipped(x):
    return jnp.minimum(x, 1.0)

@clipped.defjvp
def clipped_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return clipped(x), jnp.where(x == 1.0, 1.0, jnp.minimum(x, 1.0)) * dx
""",
    # a slope that diverges at the guard (x log x)
    """
@jax.custom_vjp
def xlogx(x):
    return x * jnp.log(x)

def xlogx_fwd(x):
    return xlogx(x), x

def xlogx_bwd(x, g):
    return (jnp.where(x == 0, 0.0, jnp.log(x) + 1.0) * g,)

xlogx.defvjp(xlogx_fwd, xlogx_bwd)
""",
    # a where outside any rule
    """
def slope(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 0.0, (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)
""",
])
def test_silent(body):
    assert codes(body) == []


def test_a_guard_that_was_not_needed_still_loses_the_slope():
    # grad(grad(square))(0.0) is 0.0 on JAX 0.10.2, for 2.0
    assert codes("""
@jax.custom_jvp
def square(x):
    return x * x

@square.defjvp
def square_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return square(x), jnp.where(x == EPS, 0.0, 2.0 * x) * dx
""") == [(15, 23)]
