"""structure hazard: a smooth absolute value whose jvp rule flattens its tangent
(`.ravel()`), called only on a scalar energy: the tangent has shape (1,) for a () output.

Source: census row E08 of docs/facts/jax-errors.md, written on branch rules8a as a realistic edit of a
correct rule through a route no fixture of the rule covered before (issue 45).
https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/census8a_jvp_scalar_call_raveled_tangent", "family": "structure", "expect": "hazard",
    "source": "census E08", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "5abea46c1fd00eda02b2669f98bc7f1223e4b9b6",
    "argnums": (0,),
}


@jax.custom_jvp
def softabs(x):
    return jnp.sqrt(x * x + 1e-6)


@softabs.defjvp
def softabs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = softabs(x)
    return y, (x / y * t).ravel()  # eval: span


def eval_fn(v):
    return softabs(jnp.sum(v * v) - 1.0)


def eval_inputs():
    return (np.array([0.3, 1.7, -0.4], np.float32),)


def eval_reference(v):
    v = np.asarray(v, np.float64)
    return np.sqrt((np.sum(v * v) - 1.0) ** 2 + 1e-6)
