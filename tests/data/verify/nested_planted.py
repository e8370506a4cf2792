"""Custom VJPs the harness reaches only through the module's own code (verify's drivers)."""

import jax
import jax.numpy as jnp


def scaled_matmul(eqn, x, w):
    # Defined and called inside a function: verified with the arguments this call passes.
    @jax.custom_vjp
    def _mm(x, w):
        return jnp.einsum(eqn, x, w)

    def _mm_fwd(x, w):
        return jnp.einsum(eqn, x, w), (x, w)

    def _mm_bwd(res, g):
        x, w = res
        return (None, jnp.einsum("bo,io->bi", g, w))  # noqa: VJP602

    _mm.defvjp(_mm_fwd, _mm_bwd)
    return _mm(x, w)


def make_scaler(scale):
    # Defined in a factory whose result the module binds once: reached as `SCALER`.
    @jax.custom_vjp
    def inner(w, x):
        return x * w * scale

    def inner_fwd(w, x):
        return x * w * scale, w

    def inner_bwd(w, g):
        return (g * w * scale, None)  # noqa: VJP602

    inner.defvjp(inner_fwd, inner_bwd)
    return inner


SCALER = make_scaler(2.0)


def use(x, w):
    return scaled_matmul("bi,io->bo", x, w)
