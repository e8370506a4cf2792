"""`@partial(f.defjvp, symbolic_zeros=True)` is a registration the model does not list as one;
the jvp rule exists and the function is called."""
from functools import partial

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero


@jax.custom_jvp
def add(a, b):
    return a + b


@partial(add.defjvp, symbolic_zeros=True)
def _add_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    if isinstance(ta, SymbolicZero):
        return add(a, b), tb
    return add(a, b), ta if isinstance(tb, SymbolicZero) else ta + tb


def f(x):
    return add(x, jnp.ones_like(x))
