"""jvp-primal look-alike: the rule clamps only inside the tangent; its primal output is the function's value.

Report: lucidrains/flash-attention-jax#8 https://github.com/lucidrains/flash-attention-jax/pull/8
(the fix: the rule's primal output is exactly what the decorated function returns).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "jvp-primal/ok_flashattn8_primal_out_is_value", "family": "jvp-primal", "expect": "ok",
    "source": "lucidrains/flash-attention-jax#8", "url": "https://github.com/lucidrains/flash-attention-jax/pull/8",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["value_and_grad", "jvp"],
}


@jax.custom_jvp
def log_prob(p):
    return jnp.log(p)


@log_prob.defjvp
def log_prob_jvp(primals, tangents):
    (p,), (dp,) = primals, tangents
    p_safe = jnp.maximum(p, 1e-12)
    return log_prob(p), dp / p_safe


def eval_fn(p):
    return jnp.sum(log_prob(p) ** 2)


def eval_inputs():
    return (np.array([0.2, 0.9], np.float32),)


def eval_reference(p):
    return np.sum(np.log(np.asarray(p, np.float64)) ** 2)
