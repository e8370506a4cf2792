"""nondiff-array hazard: flax nnx's custom_vjp with an array in nondiff_argnums, called under `nnx.jit`.

Source: the `nnx.custom_vjp` API (flax, "Reference aware version of jax.custom_vjp"), which
takes `nondiff_argnums` as jax.custom_vjp does, and jax-ml/jax#20889
https://github.com/jax-ml/jax/issues/20889 (array-valued nondiff arguments leak tracers). Here a
temperature array computed in the jitted caller is passed in the nondiff position of an
`@nnx.custom_vjp(nondiff_argnums=(0,))` function; the rules only forward it to a helper.
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "nondiff-array/flax_nnx_custom_vjp_nondiff_array", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#20889", "url": "https://github.com/jax-ml/jax/issues/20889",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _divide(x, t):
    return x / t


@nnx.custom_vjp(nondiff_argnums=(0,))  # eval: span
def cool(temperature, x):  # eval: span
    return _divide(x, temperature)


def cool_fwd(temperature, x):
    return cool(temperature, x), None


def cool_bwd(temperature, res, g):
    return (_divide(g, temperature),)


cool.defvjp(cool_fwd, cool_bwd)


@jax.jit
def logits(x, t):
    temperature = jnp.maximum(t, 0.5)
    return cool(temperature, x)  # eval: span


def eval_fn(x, t):
    return logits(x, t)


def eval_inputs():
    return (np.float32(3.0), np.float32(2.0))


def eval_reference(x, t):
    return np.float64(x) / max(np.float64(t), 0.5)


def eval_grad_reference(x, t):
    return (1.0 / max(np.float64(t), 0.5),)
