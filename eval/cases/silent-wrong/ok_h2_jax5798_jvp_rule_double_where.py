"""silent-wrong look-alike: the custom_jvp tangent uses the "double where" guard.

Report: jax-ml/jax#5798 https://github.com/jax-ml/jax/issues/5798 (the maintainers' fix: feed the
dangerous branch a safe input first, then select). The square root inside the tangent only ever
sees values >= 1, so its transpose has no inf to multiply by zero.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/ok_h2_jax5798_jvp_rule_double_where", "family": "silent-wrong",
    "expect": "ok", "source": "jax-ml/jax#5798", "url": "https://github.com/jax-ml/jax/issues/5798",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp
def soft_root(x):
    safe = jnp.where(x < 1.0, 1.0, x)
    return jnp.where(x < 1.0, x, jnp.sqrt(safe))


@soft_root.defjvp
def _soft_root_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    safe = jnp.where(x < 1.0, 1.0, x)
    slope = jnp.where(x < 1.0, dx, dx / (2.0 * jnp.sqrt(safe)))  # eval: span
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
