"""VJP611: a custom_vjp bwd that uses the output cotangent only through its sum, times the gradient
of the summed output (pyro-ppl/numpyro#1668): right for `sum(f(x))`, silently wrong for other losses."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from harness import check, header

header("bwd using the cotangent only through its sum")

W = np.array([[1.0, 0.5, -0.5], [0.0, 2.0, 1.0]], np.float32)


def host_forward(z):
    return (W @ np.asarray(z)).astype(np.float32)


def host_grad_of_sum(z):
    return W.sum(axis=0).astype(np.float32)


@jax.custom_vjp
def layer(z):
    return jax.pure_callback(host_forward, jax.ShapeDtypeStruct((2,), z.dtype), z, vmap_method="sequential")


def layer_fwd(z):
    return layer(z), z


def layer_bwd(z, g):
    grad = jax.pure_callback(host_grad_of_sum, jax.ShapeDtypeStruct(z.shape, z.dtype), z, vmap_method="sequential")
    return (jnp.outer(grad, g).sum(axis=1),)


layer.defvjp(layer_fwd, layer_bwd)
Z = jnp.array([0.5, -1.0, 2.0])
ref = lambda z: jnp.asarray(W) @ z  # noqa: E731

print("## host layer, bwd = grad(sum(y)) * sum(g)")
check("grad of sum(y) (all-equal cotangent)", lambda: jax.grad(lambda z: jnp.sum(layer(z)))(Z),
      jax.grad(lambda z: jnp.sum(ref(z)))(Z))
check("grad of sum(y ** 2)", lambda: jax.grad(lambda z: jnp.sum(layer(z) ** 2))(Z),
      jax.grad(lambda z: jnp.sum(ref(z) ** 2))(Z))
check("jit(grad) of y[0]", lambda: jax.jit(jax.grad(lambda z: layer(z)[0]))(Z), jax.grad(lambda z: ref(z)[0])(Z))


@jax.custom_vjp
def row_energy(x):
    return jnp.sum(x ** 2, axis=-1, keepdims=True)


def row_energy_fwd(x):
    return row_energy(x), x


def row_energy_bwd(x, g):
    return (2.0 * x * jnp.sum(g),)


row_energy.defvjp(row_energy_fwd, row_energy_bwd)
X = jnp.array([[1.0, 2.0], [0.5, -1.0]])
ref_energy = lambda x: jnp.sum(x ** 2, axis=-1, keepdims=True)  # noqa: E731

print("## jnp primal with a batch axis, bwd = 2 x * sum(g)")
check("grad of sum(sqrt(energy)), 2-D input", lambda: jax.grad(lambda x: jnp.sum(jnp.sqrt(row_energy(x))))(X),
      jax.grad(lambda x: jnp.sum(jnp.sqrt(ref_energy(x))))(X))
check("grad of sum(sqrt(energy)), 1-D input (one output entry)",
      lambda: jax.grad(lambda x: jnp.sum(jnp.sqrt(row_energy(x))))(X[0]),
      jax.grad(lambda x: jnp.sum(jnp.sqrt(ref_energy(x))))(X[0]))
