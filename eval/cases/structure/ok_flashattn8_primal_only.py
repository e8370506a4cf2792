"""structure look-alike: the fix of flash-attention-jax PR #8, the custom_vjp wraps a function returning only the output.

Report: lucidrains/flash-attention-jax#8 https://github.com/lucidrains/flash-attention-jax/pull/8
(decorate the function whose output type matches fwd's first element; stats become residuals).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_flashattn8_primal_only", "family": "structure", "expect": "ok",
    "source": "lucidrains/flash-attention-jax#8",
    "url": "https://github.com/lucidrains/flash-attention-jax/pull/8",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


def _softmax_with_stats(s):
    row_max = jnp.max(s, axis=-1, keepdims=True)
    e = jnp.exp(s - row_max)
    row_sum = jnp.sum(e, axis=-1, keepdims=True)
    return e / row_sum, row_sum, row_max


@jax.custom_vjp
def softmax_rows(s):  # eval: span
    return _softmax_with_stats(s)[0]


def softmax_rows_fwd(s):
    out, _, _ = _softmax_with_stats(s)
    return out, (out,)


def softmax_rows_bwd(res, g):
    (p,) = res
    return (p * (g - jnp.sum(g * p, axis=-1, keepdims=True)),)


softmax_rows.defvjp(softmax_rows_fwd, softmax_rows_bwd)


def eval_fn(s):
    return softmax_rows(s) * jnp.arange(3.0)


def eval_inputs():
    return (np.array([[0.1, 0.7, -0.2], [1.0, 0.0, 0.5]], np.float32),)


def eval_reference(s):
    s = np.asarray(s, np.float64)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) * np.arange(3.0)
