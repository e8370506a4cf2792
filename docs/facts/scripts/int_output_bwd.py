"""A custom_vjp whose output is an integer array (indices from a host matcher) has a float0
cotangent, a symbolic zero, so no gradient of a real-valued caller runs its bwd: a bwd that
returns a generator (not a tuple) is never reached by grad, jit(grad) or vmap(grad). Only an
explicit `jax.vjp` pulled back with a float0 cotangent runs it and raises the pytree TypeError.

Run: JAX_PLATFORMS=cpu python docs/facts/scripts/int_output_bwd.py (JAX 0.10.2: three `ok`
lines, then `vjp(float0): TypeError`)."""
import jax
import jax.numpy as jnp
import numpy as np


@jax.custom_vjp
def order(x):
    return jnp.argsort(x)


def order_fwd(x):
    return order(x), None


def order_bwd(_, g):
    return (c for c in (None,))  # not a tuple


order.defvjp(order_fwd, order_bwd)


def loss(x):
    return jnp.sum(x[order(x)] * jnp.arange(3.0))


x = jnp.array([0.3, -1.0, 2.0])
for name, f in [("grad", jax.grad(loss)), ("jit(grad)", jax.jit(jax.grad(loss))),
                ("vmap(grad)", lambda v: jax.vmap(jax.grad(loss))(jnp.stack([v, v])))]:
    f(x)
    print(name, "ok")
y, pull = jax.vjp(order, x)
try:
    pull(np.zeros(y.shape, jax.dtypes.float0))
    print("vjp(float0): ok")
except TypeError:
    print("vjp(float0): TypeError")
