"""forward-mode hazard: `jax.jacfwd` of a `functools.partial` over a loss that calls a custom_vjp.

Report: jax-ml/jax#3727 https://github.com/jax-ml/jax/issues/3727 ("... error when using
`jacfwd`": the reporter compared jacfwd and jacrev on a function with a custom VJP; jacrev
worked, jacfwd failed). JAX 0.10.2 says "can't apply forward-mode autodiff (jvp) to a custom_vjp
function".
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/jax3727_jacfwd_of_partial", "family": "forward-mode", "expect": "hazard",
    "source": "jax-ml/jax#3727", "url": "https://github.com/jax-ml/jax/issues/3727",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["jacfwd"],
}


@jax.custom_vjp  # eval: span
def safe_norm(x):
    return jnp.sqrt(jnp.sum(x ** 2) + 1e-12)


def safe_norm_fwd(x):
    n = jnp.sqrt(jnp.sum(x ** 2) + 1e-12)
    return n, (x, n)


def safe_norm_bwd(res, g):
    x, n = res
    return (g * x / n,)


safe_norm.defvjp(safe_norm_fwd, safe_norm_bwd)


def loss(x, scale):
    return scale * safe_norm(x)


def eval_fn(x):
    return loss(x, 2.0)


def sensitivities(x):
    return jax.jacfwd(partial(loss, scale=2.0))(x)  # eval: span


def eval_inputs():
    return (np.array([3.0, 4.0], np.float32),)


def eval_reference(x):
    return 2.0 * np.sqrt(np.sum(np.asarray(x, np.float64) ** 2) + 1e-12)
