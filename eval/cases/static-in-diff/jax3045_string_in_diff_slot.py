"""static-in-diff hazard: a string passed to a custom_vjp in a differentiable position.

Report: jax-ml/jax#3045 https://github.com/jax-ml/jax/issues/3045 ("Allow str to be a valid JAX
type"): a string mode argument to a custom-derivative function is rejected as "not a valid JAX
type"; the maintainers' answer is nondiff_argnums.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/jax3045_string_in_diff_slot", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#3045", "url": "https://github.com/jax-ml/jax/issues/3045",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def activate(x, kind):
    return jnp.tanh(x) if kind == "tanh" else jnp.maximum(x, 0.0)


def activate_fwd(x, kind):
    return activate(x, kind), x


def activate_bwd(x, g):
    return ((1 - jnp.tanh(x) ** 2) * g, None)


activate.defvjp(activate_fwd, activate_bwd)


def eval_fn(x):
    return jnp.sum(activate(x, "tanh"))  # eval: span


def eval_inputs():
    return (np.array([0.3, -0.8], np.float32),)


def eval_reference(x):
    return np.sum(np.tanh(np.asarray(x, np.float64)))
