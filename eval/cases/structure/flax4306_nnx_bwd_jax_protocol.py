"""structure hazard: an `nnx.custom_vjp` bwd written with JAX's protocol, `g` used as the output cotangent.

Report: google/flax#4306 https://github.com/google/flax/pull/4306 (a user points out that the
nnx docs showed a `jax.custom_vjp`-style example while nnx's default mode calls
`bwd(res, (input_updates_g, out_g))`; the maintainer confirms and the docs were expanded). Written
from that report before vjplint had a rule for it: in the default mode `g` is a pair, and
arithmetic on it fails under grad.
"""
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "structure/flax4306_nnx_bwd_jax_protocol", "family": "structure", "expect": "hazard",
    "source": "google/flax#4306", "url": "https://github.com/google/flax/pull/4306",
    "written_at": "2026-12-01", "written_at_commit": "e2a137d029ddcbb8436424a6ad687e0efac63eeb",
    "argnums": (0,),
}


@nnx.custom_vjp  # eval: span
def softclip(x):
    return jnp.tanh(x)


def softclip_fwd(x):
    t = jnp.tanh(x)
    return t, t


def softclip_bwd(t, g):  # eval: span
    return ((1 - t ** 2) * g,)  # eval: span


softclip.defvjp(softclip_fwd, softclip_bwd)


def eval_fn(x):
    return softclip(x)


def eval_inputs():
    return (np.array([0.3, -1.2], np.float32),)


def eval_reference(x):
    return np.tanh(np.asarray(x, np.float64))
