"""nonlinear-jvp hazard: a custom_jvp rule whose tangent output is not linear in the input tangent (abs of it).

Report: jax-ml/jax#12158 https://github.com/jax-ml/jax/issues/12158 ("backpropagation for operation
with custom jvp cannot use"): a subgradient rule for |x| used `jnp.abs(d)` at x == 0; jvp works,
grad cannot transpose the rule.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/jax12158_abs_of_tangent", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#12158", "url": "https://github.com/jax-ml/jax/issues/12158",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def my_abs(x):
    return jnp.abs(x)


@my_abs.defjvp
def my_abs_jvp(primals, tangents):
    (x,), (d,) = primals, tangents
    return jnp.abs(x), jnp.where(x == 0, jnp.abs(d), jnp.sign(x) * d)  # eval: span


def eval_fn(x):
    return my_abs(x)


def eval_inputs():
    return (np.array([-1.0, 2.0], np.float32),)


def eval_reference(x):
    return np.abs(np.asarray(x, np.float64))
