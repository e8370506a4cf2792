"""structure look-alike: a custom_jvp with three nondiff arguments returns (lse, sign) and the tangent pair (sign * t, zeros_like(sign)).

Source: ott-jax/ott src/ott/math/utils.py
https://github.com/ott-jax/ott/blob/main/src/ott/math/utils.py (`logsumexp`:
`functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 4))` over
`(mat, axis, keepdims, b, return_sign)`; the rule receives `(axis, keepdims, return_sign, primals,
tangents)`, unpacks `mat, b = primals` and, with `return_sign`, returns `(lse, sign)` with the
tangent `(sign * res, jnp.zeros_like(sign))`). Here weights with mixed signs, row-wise.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_ott_logsumexp_sign_pair_tangent", "family": "structure",
    "expect": "ok", "source": "ott-jax/ott src/ott/math/utils.py",
    "url": "https://github.com/ott-jax/ott/blob/main/src/ott/math/utils.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 4))  # eval: span
def weighted_lse(mat, axis=None, keepdims=False, b=None, return_sign=False):
    return jax.scipy.special.logsumexp(mat, axis=axis, keepdims=keepdims, b=b, return_sign=return_sign)


@weighted_lse.defjvp  # eval: span
def _weighted_lse_jvp(axis, keepdims, return_sign, primals, tangents):  # eval: span
    mat, b = primals  # eval: span
    mat_dot, b_dot = tangents  # eval: span
    out = weighted_lse(mat, axis, keepdims, b, return_sign)
    lse, sign = out if return_sign else (out, None)
    safe = jnp.where(jnp.isfinite(lse), lse, 0.0)
    centered = jnp.exp(mat - (safe if keepdims else jnp.expand_dims(safe, axis)))
    t = jnp.sum(b * centered * mat_dot + b_dot * centered, axis=axis, keepdims=keepdims)
    if return_sign:
        return (lse, sign), (sign * t, jnp.zeros_like(sign))  # eval: span
    return lse, t


def eval_fn(mat, b):
    lse, sign = weighted_lse(mat, 1, False, b, True)
    return sign * lse


def eval_inputs():
    return (np.array([[0.2, -0.5, 1.0], [0.7, 0.1, -0.4]], np.float32),
            np.array([[1.0, 0.5, 2.0], [-1.5, 0.3, -0.2]], np.float32))


def eval_reference(mat, b):
    s = np.sum(np.asarray(b, np.float64) * np.exp(np.asarray(mat, np.float64)), axis=1)
    return np.sign(s) * np.log(np.abs(s))
