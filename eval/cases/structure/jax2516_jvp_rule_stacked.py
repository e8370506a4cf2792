"""structure hazard: a custom_jvp rule stacks primal and tangent into one array instead of a pair.

Report: jax-ml/jax#2516 https://github.com/jax-ml/jax/issues/2516 ("better error when custom_jvp
jvp rule doesn't return a pair"). The rule builds its result in a variable with `jnp.stack`, which
is one array of leading size two, not a (primal_out, tangent_out) pair.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax2516_jvp_rule_stacked", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#2516", "url": "https://github.com/jax-ml/jax/issues/2516",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = softplus(x)
    both = jnp.stack([y, jax.nn.sigmoid(x) * t])
    return both  # eval: span


def eval_fn(x):
    return softplus(x)


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    return np.logaddexp(np.asarray(x, np.float64), 0.0)
