"""jvp-primal hazard: a custom_jvp rule returns the value at a "cleaned" input, not the function's value.

Report: lucidrains/flash-attention-jax#7 https://github.com/lucidrains/flash-attention-jax/issues/7
(with the fix lucidrains/flash-attention-jax#8: the rule's primal output must equal the output of
the decorated function, or "interesting behavior" follows). Here the custom_jvp analogue: the rule
clamps x before taking the log, the primal does not, so every differentiated caller sees another value.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "jvp-primal/flashattn7_clamped_primal_out", "family": "jvp-primal", "expect": "hazard",
    "source": "lucidrains/flash-attention-jax#7", "url": "https://github.com/lucidrains/flash-attention-jax/issues/7",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["value_and_grad", "jvp"],
}


@jax.custom_jvp
def log_prob(p):
    return jnp.log(p)


@log_prob.defjvp
def log_prob_jvp(primals, tangents):
    (p,), (dp,) = primals, tangents
    p_safe = jnp.maximum(p, 0.5)
    return jnp.log(p_safe), dp / p  # eval: span


def eval_fn(p):
    return jnp.sum(log_prob(p) ** 2)


def eval_inputs():
    return (np.array([0.2, 0.9], np.float32),)


def eval_reference(p):
    return np.sum(np.log(np.asarray(p, np.float64)) ** 2)
