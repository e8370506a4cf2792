"""silent-wrong look-alike: a custom_jvp softmax subtracts a stop_gradient'ed max before exponentiating.

Report: jax-ml/jax#16094 https://github.com/jax-ml/jax/pull/16094 (a PR to put stop_gradient on the
maximum that JAX's custom-JVP softmax subtracts for stability; the shift cancels, so blocking its
gradient changes no derivative). Here a softmax with its own JVP rule does the same.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/ok_h6_pr16094_custom_jvp_softmax_stop_gradient_max", "family": "silent-wrong",
    "expect": "ok", "source": "jax-ml/jax#16094", "url": "https://github.com/jax-ml/jax/pull/16094",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "extra": ["jvp", "hessian"], "heldout": True,
}

W = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


@jax.custom_jvp
def softmax(z):
    shifted = z - jax.lax.stop_gradient(jnp.max(z))  # eval: span
    e = jnp.exp(shifted)
    return e / jnp.sum(e)


@softmax.defjvp
def _softmax_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    p = softmax(z)
    return p, p * (dz - jnp.sum(p * dz))  # eval: span


def eval_fn(z):
    return jnp.sum(softmax(z) * jnp.asarray(W))


def eval_inputs():
    return (np.array([0.3, 1.2, -0.4, 0.9], np.float32),)


def eval_reference(z):
    z = np.asarray(z, np.float64)
    e = np.exp(z - z.max())
    return np.asarray(np.sum(e / e.sum() * W.astype(np.float64)))
