"""structure hazard: `defvjp(..., symbolic_zeros=True)` but fwd computes on its inputs as if they were arrays.

Source: the `jax.custom_vjp.defvjp` API page (https://docs.jax.dev/en/latest/_autosummary/jax.custom_vjp.defvjp.html):
with `symbolic_zeros=True` fwd receives `CustomVJPPrimal` records (`.value`, `.perturbed`), not arrays;
the flag is typically copied from code that uses it, without the `.value` reads (jax-ml/jax#17496
discusses symbolic zeros in bwd).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/docs_symbolic_zeros_fwd_raw_primal", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#17496", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.custom_vjp.defvjp.html",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@jax.custom_vjp
def log1p_exp(x):
    return jnp.logaddexp(x, 0.0)


def log1p_exp_fwd(x):
    y = jnp.logaddexp(x, 0.0)  # eval: span
    return y, jax.nn.sigmoid(x)


def log1p_exp_bwd(s, g):
    return (g * s,)


log1p_exp.defvjp(log1p_exp_fwd, log1p_exp_bwd, symbolic_zeros=True)  # eval: span


def eval_fn(x):
    return log1p_exp(x)


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    return np.logaddexp(np.asarray(x, np.float64), 0.0)
