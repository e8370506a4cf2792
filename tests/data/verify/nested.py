"""Custom VJPs the harness reaches only through the module's own code (verify's drivers)."""
from functools import partial

import jax
import jax.numpy as jnp


def scaled_matmul(eqn, x, w):
    # Defined and called inside a function: verified with the arguments this call passes.
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def _mm(x, w):
        return jnp.einsum(eqn, x, w)

    def _mm_fwd(x, w):
        return jnp.einsum(eqn, x, w), x

    def _mm_bwd(w, x, g):
        return (jnp.einsum("bo,io->bi", g, w),)

    _mm.defvjp(_mm_fwd, _mm_bwd)
    return _mm(x, w)


def make_scaler(scale):
    # Defined in a factory whose result the module binds once: reached as `SCALER`.
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def inner(w, x):
        return x * w * scale

    def inner_fwd(w, x):
        return x * w * scale, None

    def inner_bwd(w, _, g):
        return (g * w * scale,)

    inner.defvjp(inner_fwd, inner_bwd)
    return inner


SCALER = make_scaler(2.0)


def use(x, w):
    return scaled_matmul("bi,io->bo", x, w)
