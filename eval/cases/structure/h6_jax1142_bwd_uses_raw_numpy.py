"""structure hazard: a custom_vjp bwd computes its cotangent with raw numpy on a residual.

Report: jax-ml/jax#1142 https://github.com/jax-ml/jax/issues/1142 (custom VJPs for external
functions: a user's VJP called onp.cos on its input and failed as soon as JAX traced it, since a
tracer cannot be handed to numpy). Eager grad happens to see concrete residuals; under jit the
residual is a tracer. Here a custom sine computes its derivative with numpy.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h6_jax1142_bwd_uses_raw_numpy", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#1142", "url": "https://github.com/jax-ml/jax/issues/1142",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def ext_sin(x):
    return jnp.sin(x)


def _ext_sin_fwd(x):
    return ext_sin(x), x


def _ext_sin_bwd(x, g):
    return (g * np.cos(x),)  # eval: span


ext_sin.defvjp(_ext_sin_fwd, _ext_sin_bwd)


def eval_fn(x):
    return jnp.sum(ext_sin(x) * 2.0)


def eval_inputs():
    return (np.array([0.3, -1.1, 2.4], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(2.0 * np.sin(np.asarray(x, np.float64))))
