"""structure hazard: the primal has a defaulted argument, and bwd counts only the ones the call passes.

Source: the `jax.custom_vjp` API page (https://docs.jax.dev/en/latest/_autosummary/jax.custom_vjp.html,
"bwd ... output is a tuple of cotangents with one per positional argument of the primal"); JAX binds
defaults before calling the rules (jax-ml/jax#1270, https://github.com/jax-ml/jax/issues/1270, is the related keyword-call report), so
`smooth_l1(x)` has two arguments and bwd must return two cotangents.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/docs_default_arg_bwd_short", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#1270", "url": "https://github.com/jax-ml/jax/issues/1270",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@jax.custom_vjp
def smooth_l1(x, beta=1.0):
    ax = jnp.abs(x)
    return jnp.where(ax < beta, 0.5 * x ** 2 / beta, ax - 0.5 * beta)


def smooth_l1_fwd(x, beta=1.0):
    return smooth_l1(x, beta), (x, beta)


def smooth_l1_bwd(res, g):
    x, beta = res
    return (g * jnp.where(jnp.abs(x) < beta, x / beta, jnp.sign(x)),)  # eval: span


smooth_l1.defvjp(smooth_l1_fwd, smooth_l1_bwd)


def eval_fn(x):
    return smooth_l1(x)


def eval_inputs():
    return (np.array([0.3, -2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    return np.where(ax < 1.0, 0.5 * x ** 2, ax - 0.5)
