"""structure hazard: fwd returns a lambda (a closure over the solution) among its residuals.

Report: jax-ml/jax#17753 https://github.com/jax-ml/jax/issues/17753 ("Class 'function' is not a
valid JAX type with Custom VJP"): residuals are flattened into JAX values; a Python function among
them fails as soon as the function is differentiated.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax17753_lambda_in_residuals", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#17753", "url": "https://github.com/jax-ml/jax/issues/17753",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def damped(x):
    return jnp.tanh(x) * 0.5


def damped_fwd(x):
    y = jnp.tanh(x)
    slope = lambda g: g * 0.5 * (1 - y ** 2)  # noqa: E731
    return y * 0.5, (y, slope)  # eval: span


def damped_bwd(res, g):
    _, slope = res
    return (slope(g),)


damped.defvjp(damped_fwd, damped_bwd)


def eval_fn(x):
    return damped(x)


def eval_inputs():
    return (np.array([0.4, -0.8], np.float32),)


def eval_reference(x):
    return 0.5 * np.tanh(np.asarray(x, np.float64))
