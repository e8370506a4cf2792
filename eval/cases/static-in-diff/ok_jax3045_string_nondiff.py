"""static-in-diff look-alike: the string mode argument in nondiff_argnums.

Report: jax-ml/jax#3045 https://github.com/jax-ml/jax/issues/3045 (the maintainers' answer: use
nondiff_argnums for a string argument of custom_vjp / custom_jvp).
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_jax3045_string_nondiff", "family": "static-in-diff", "expect": "ok",
    "source": "jax-ml/jax#3045", "url": "https://github.com/jax-ml/jax/issues/3045",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def activate(x, kind):
    return jnp.tanh(x) if kind == "tanh" else jnp.maximum(x, 0.0)


def activate_fwd(x, kind):
    return activate(x, kind), x


def activate_bwd(kind, x, g):
    return ((1 - jnp.tanh(x) ** 2) * g,)


activate.defvjp(activate_fwd, activate_bwd)


def eval_fn(x):
    return jnp.sum(activate(x, "tanh"))


def eval_inputs():
    return (np.array([0.3, -0.8], np.float32),)


def eval_reference(x):
    return np.sum(np.tanh(np.asarray(x, np.float64)))
