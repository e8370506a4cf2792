"""structure look-alike: a masked softmax custom_jvp with the axis in nondiff_argnums; the rule unpacks three primals and ignores the mask's and fill's tangents.

Source: jax-ml/jax jax/_src/nn/functions.py, `_softmax` and `_softmax_jvp`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/nn/functions.py#L615-L633
(read at commit cec06d1): `partial(custom_jvp, nondiff_argnums=(1,))` over `(x, axis, where, initial)`
with defaults for the last three; the rule takes `(axis, primals, tangents)`, unpacks
`(x, where, initial), (x_dot, _, _)` and returns `y, y * (x_dot - sum(y * x_dot))`. Here the same
structure with a boolean mask passed by the caller and the fill value left to its default.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxnn_softmax_custom_jvp_nondiff_axis_with_mask", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/_src/nn/functions.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/nn/functions.py#L615-L633",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}

WEIGHTS = np.array([[1.0, -2.0, 0.5, 3.0], [0.3, 1.2, -0.7, 2.0]], np.float32)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def masked_softmax(x, axis=-1, mask=None, fill=-jnp.inf):  # eval: span
    top = jnp.max(x, axis, where=mask, initial=fill, keepdims=True)
    shifted = jnp.where(mask, x, fill) - top
    e = jnp.exp(shifted)
    return e / jnp.sum(e, axis, where=mask, keepdims=True)


@masked_softmax.defjvp  # eval: span
def _masked_softmax_jvp(axis, primals, tangents):  # eval: span
    (x, mask, fill), (x_dot, _, _) = primals, tangents  # eval: span
    y = masked_softmax(x, axis, mask, fill)
    return y, y * (x_dot - jnp.sum(y * x_dot, axis, where=mask, keepdims=True))  # eval: span


def eval_fn(x, mask):
    return jnp.sum(masked_softmax(x, -1, mask) * WEIGHTS, axis=-1)


def eval_inputs():
    x = np.array([[0.5, -1.0, 2.0, 0.1], [1.5, 0.2, -0.3, 0.8]], np.float32)
    mask = np.array([[True, True, False, True], [False, True, True, True]])
    return (x, mask)


def eval_reference(x, mask):
    x = np.asarray(x, np.float64)
    e = np.where(mask, np.exp(x - np.max(np.where(mask, x, -np.inf), -1, keepdims=True)), 0.0)
    y = e / e.sum(-1, keepdims=True)
    return np.sum(y * WEIGHTS, axis=-1)
