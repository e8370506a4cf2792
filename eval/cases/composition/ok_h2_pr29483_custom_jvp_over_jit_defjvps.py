"""composition look-alike: jax.custom_jvp stacked on jax.jit, rule given with defjvps.

Report: jax-ml/jax#29483 https://github.com/jax-ml/jax/pull/29483 (a proposed custom_jvp for
softplus, written as custom_jvp over a jitted logaddexp with a one-argument defjvps rule; declined
as unnecessary, not as wrong). The order custom_jvp(jit(f)) differentiates in both modes and to
second order.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_h2_pr29483_custom_jvp_over_jit_defjvps", "family": "composition",
    "expect": "ok", "source": "jax-ml/jax#29483", "url": "https://github.com/jax-ml/jax/pull/29483",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp", "jacfwd", "hessian"], "heldout": True,
}


@jax.custom_jvp  # eval: span
@jax.jit
def softplus(x):
    return jnp.logaddexp(x, 0.0)


softplus.defjvps(lambda g, ans, x: g * jax.nn.sigmoid(x))


def eval_fn(x):
    return softplus(x) * 2.0


def eval_inputs():
    return (np.array([-3.0, 0.2, 4.0], np.float32),)


def eval_reference(x):
    return 2.0 * np.logaddexp(np.asarray(x, np.float64), 0.0)
