"""migration look-alike: the gradient-clipping identity ported to jax.custom_vjp.

Report: jax-ml/jax#2473 https://github.com/jax-ml/jax/issues/2473 (custom_transforms was replaced
by custom_jvp / custom_vjp in jax-ml/jax#2026). The same clipped-cotangent identity, written with
the current API: fwd returns (output, residuals), bwd returns a one-tuple.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "migration/ok_h2_jax2473_clip_gradient_custom_vjp", "family": "migration",
    "expect": "ok", "source": "jax-ml/jax#2473", "url": "https://github.com/jax-ml/jax/issues/2473",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp  # eval: span
def clipped_identity(x):  # eval: span
    return x


clipped_identity.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


def eval_fn(x):
    return clipped_identity(x) * 3.0


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    return 3.0 * np.asarray(x, np.float64)


def eval_grad_reference(x):
    return (np.clip(np.full(np.shape(x), 3.0), -1.0, 1.0),)
