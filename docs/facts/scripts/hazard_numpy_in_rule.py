"""VJP332: NumPy applied to a traced value inside a custom_vjp's fwd or bwd (jax-ml/jax#1142):
eager grad sees concrete arrays and works; jit and vmap trace the rule and the conversion raises.
Python values fwd saves as residuals stay Python values in bwd, and NumPy in a host callback is fine."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from harness import check, header

header("NumPy on traced values inside custom_vjp rules")
X = jnp.array([0.3, -1.1, 2.4])


@jax.custom_vjp
def ext_sin(x):
    return jnp.sin(x)


def ext_sin_fwd(x):
    return ext_sin(x), x


def ext_sin_bwd(x, g):
    return (g * np.cos(x),)


ext_sin.defvjp(ext_sin_fwd, ext_sin_bwd)
loss = lambda x: jnp.sum(ext_sin(x))  # noqa: E731
print("## bwd: np.cos of the residual")
check("grad", lambda: jax.grad(loss)(X), jnp.cos(X))
check("jit(grad)", lambda: jax.jit(jax.grad(loss))(X), jnp.cos(X))
check("vmap(grad) of the elementwise sine", lambda: jax.vmap(jax.grad(ext_sin))(X), jnp.cos(X))


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return softplus(x), np.asarray(jax.nn.sigmoid(x))


def softplus_bwd(sig, g):
    return (g * sig,)


softplus.defvjp(softplus_fwd, softplus_bwd)
print("## fwd: np.asarray of a value computed from the input")
check("grad", lambda: jax.grad(lambda x: jnp.sum(softplus(x)))(X), jax.nn.sigmoid(X))
check("jit(grad)", lambda: jax.jit(jax.grad(lambda x: jnp.sum(softplus(x))))(X), jax.nn.sigmoid(X))


@jax.custom_vjp
def scaled_sin(x):
    return jnp.sin(x)


def scaled_sin_fwd(x):
    return scaled_sin(x), (x, 2.0, x.shape)


def scaled_sin_bwd(res, g):
    x, base, shape = res
    return (g * jnp.cos(x) * np.log(base) / np.log(2.0) * np.prod(shape) / np.prod(np.shape(x)),)


scaled_sin.defvjp(scaled_sin_fwd, scaled_sin_bwd)
print("## look-alike: NumPy on a float and a shape saved as residuals, and on np.shape")
check("jit(grad)", lambda: jax.jit(jax.grad(lambda x: jnp.sum(scaled_sin(x))))(X), jnp.cos(X))


@jax.custom_vjp
def host_sin(x):
    return jax.pure_callback(lambda v: np.sin(v).astype(v.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def host_sin_fwd(x):
    return host_sin(x), x


def host_sin_bwd(x, g):
    slope = jax.pure_callback(lambda v: np.cos(v).astype(v.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return (g * slope,)


host_sin.defvjp(host_sin_fwd, host_sin_bwd)
print("## look-alike: NumPy inside jax.pure_callback")
check("jit(grad)", lambda: jax.jit(jax.grad(lambda x: jnp.sum(host_sin(x))))(X), jnp.cos(X))
