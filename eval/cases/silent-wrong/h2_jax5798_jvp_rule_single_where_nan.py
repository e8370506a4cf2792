"""silent-wrong hazard: a custom_jvp tangent guards a square root with one jnp.where.

Report: jax-ml/jax#5798 https://github.com/jax-ml/jax/issues/5798 (grad of a jnp.where whose
untaken branch is sqrt gave NaN at 0; the answer: the "double where" trick, FAQ "gradients contain
NaN where using where"). Here the user wrote a custom_jvp precisely to get a finite slope at 0, but
the tangent itself divides by sqrt(x) inside a single where: forward mode is fine, and grad
transposes the where and multiplies a zero cotangent by inf, so the gradient at 0 is NaN.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h2_jax5798_jvp_rule_single_where_nan", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#5798", "url": "https://github.com/jax-ml/jax/issues/5798",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def soft_root(x):  # eval: span
    return jnp.where(x < 1.0, x, jnp.sqrt(x))


@soft_root.defjvp
def _soft_root_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    slope = jnp.where(x < 1.0, dx, dx / (2.0 * jnp.sqrt(x)))  # eval: span
    return soft_root(x), slope


def eval_fn(x):
    return soft_root(x)


def eval_inputs():
    return (np.array([0.0, 0.5, 4.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.where(x < 1.0, x, np.sqrt(np.maximum(x, 0.0)))


def eval_grad_reference(x):
    x = np.asarray(x, np.float64)
    return (np.where(x < 1.0, 1.0, 0.5 / np.sqrt(np.maximum(x, 1.0))),)
