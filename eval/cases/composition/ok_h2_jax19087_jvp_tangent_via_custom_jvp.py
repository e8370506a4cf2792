"""composition look-alike: a custom_jvp rule computes its tangent with another custom_jvp function.

Report: jax-ml/jax#19087 https://github.com/jax-ml/jax/issues/19087 (the failing form used a
custom_vjp helper in the jvp rule). A custom_jvp helper that is linear in the tangent transposes
through its primal function, so reverse mode works.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_h2_jax19087_jvp_tangent_via_custom_jvp", "family": "composition",
    "expect": "ok", "source": "jax-ml/jax#19087", "url": "https://github.com/jax-ml/jax/issues/19087",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp
def gated(t, gate):
    return t * gate


@gated.defjvp
def _gated_jvp(primals, tangents):
    (t, gate), (dt, dgate) = primals, tangents
    return t * gate, dt * gate + t * dgate


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
