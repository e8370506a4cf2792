"""structure hazard (custom_jvp): the jvp rule returns only the tangent, not a (primal, tangent) pair.

Report: jax-ml/jax#2516 https://github.com/jax-ml/jax/issues/2516 ("better error when custom_jvp
jvp rule doesn't return a pair").
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax2516_jvp_rule_not_pair", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#2516", "url": "https://github.com/jax-ml/jax/issues/2516",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return x_dot * jax.nn.sigmoid(x)  # eval: span


def eval_fn(x):
    return log1pexp(x)


def eval_inputs():
    return (np.array([0.2, -1.5], np.float32),)


def eval_reference(x):
    return np.log1p(np.exp(np.asarray(x, np.float64)))
