"""migration hazard: pre-2020 custom derivative API (jax.custom_transforms + jax.defvjp_all).

Report: jax-ml/jax#2473 https://github.com/jax-ml/jax/issues/2473 (custom_transforms could not
decorate a method; the answer: custom_transforms was about to be deleted by jax-ml/jax#2026 in
favour of custom_jvp / custom_vjp). Code still written against the old API fails at import in
JAX 0.10.2: neither name exists any more.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "migration/h2_jax2473_custom_transforms_defvjp_all", "family": "migration",
    "expect": "hazard", "source": "jax-ml/jax#2473", "url": "https://github.com/jax-ml/jax/issues/2473",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}


@jax.custom_transforms  # eval: span
def clipped_identity(x):  # eval: span
    return x


jax.defvjp_all(clipped_identity, lambda x: (x, lambda g: (jnp.clip(g, -1.0, 1.0),)))  # eval: span


def eval_fn(x):
    return clipped_identity(x) * 3.0


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    return 3.0 * np.asarray(x, np.float64)


def eval_grad_reference(x):
    return (np.clip(np.full(np.shape(x), 3.0), -1.0, 1.0),)
