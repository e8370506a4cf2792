"""composition hazard: a custom_jvp rule computes its tangent with a custom_vjp function.

Report: jax-ml/jax#19087 https://github.com/jax-ml/jax/issues/19087 (a custom_jvp whose jvp rule
builds the output tangent by calling another function decorated with custom_vjp; forward mode
works, but grad needs to transpose the tangent computation and raises NotImplementedError for the
custom_vjp call). Here a soft-threshold keeps a custom_vjp "scaled copy" helper for its tangent.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/h2_jax19087_jvp_tangent_via_custom_vjp", "family": "composition",
    "expect": "hazard", "source": "jax-ml/jax#19087", "url": "https://github.com/jax-ml/jax/issues/19087",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


@jax.custom_vjp  # eval: span
def gated(t, gate):  # eval: span
    return t * gate


def _gated_fwd(t, gate):
    return gated(t, gate), gate


def _gated_bwd(gate, ct):
    return ct * gate, None


gated.defvjp(_gated_fwd, _gated_bwd)


@jax.custom_jvp
def soft_threshold(x):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - 0.5, 0.0)


@soft_threshold.defjvp
def _soft_threshold_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    gate = (jnp.abs(x) > 0.5).astype(x.dtype)
    return soft_threshold(x), gated(dx, gate)  # eval: span


def eval_fn(x):
    return soft_threshold(x) * 2.0


def eval_inputs():
    return (np.array([1.3, -0.2, -2.0, 0.7], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return 2.0 * np.sign(x) * np.maximum(np.abs(x) - 0.5, 0.0)
