"""structure hazard (custom_jvp): the primal drops the last axis, the tangent keeps it.

Report: jax-ml/jax#2502 https://github.com/jax-ml/jax/issues/2502 (a custom_jvp whose primal
indexes its input while the tangent has the input's shape; "It's actually a shape error").
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax2502_jvp_tangent_keeps_axis", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#2502", "url": "https://github.com/jax-ml/jax/issues/2502",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def first_softplus(z):
    return jax.nn.softplus(z[..., 0])


@first_softplus.defjvp
def first_softplus_jvp(primals, tangents):
    z, = primals
    z_dot, = tangents
    out = first_softplus(z)
    out_dot = jax.nn.sigmoid(z) * z_dot
    return out, out_dot  # eval: span


def eval_fn(z):
    return first_softplus(z)


def eval_inputs():
    return (np.array([[0.3, 1.0], [-0.5, 2.0]], np.float32),)


def eval_reference(z):
    return np.logaddexp(np.asarray(z, np.float64)[..., 0], 0.0)
