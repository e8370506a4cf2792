"""structure look-alike: defvjp given two lambdas; nondiff axis first in bwd, a (array, axis) residual, None for gamma.

Source: ott-jax/ott src/ott/math/utils.py
https://github.com/ott-jax/ott/blob/main/src/ott/math/utils.py (`softmin`:
`functools.partial(jax.custom_vjp, nondiff_argnums=(2,))` on `(x, gamma, axis)`, registered with
`softmin.defvjp(lambda x, gamma, axis: (..., (x / -gamma, axis)), lambda axis, res, g: (..., None))`:
the fwd keeps the Python axis in its residual tuple, the bwd gets the axis first and returns a
softmax-weighted cotangent for x and None for the smoothing parameter). Here a row-wise soft minimum.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_ott_softmin_lambda_rules_nondiff_axis", "family": "structure",
    "expect": "ok", "source": "ott-jax/ott src/ott/math/utils.py",
    "url": "https://github.com/ott-jax/ott/blob/main/src/ott/math/utils.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))  # eval: span
def soft_minimum(x, gamma, axis=None):
    return -gamma * jax.scipy.special.logsumexp(x / -gamma, axis=axis)


soft_minimum.defvjp(  # eval: span
    lambda x, gamma, axis: (soft_minimum(x, gamma, axis), (x / -gamma, axis)),  # eval: span
    lambda axis, res, g: (  # eval: span
        jax.nn.softmax(res[0], axis=axis) * (g if axis is None else jnp.expand_dims(g, axis=axis)),
        None,
    ),
)


def eval_fn(x, gamma):
    return soft_minimum(x, gamma, 1)


def eval_inputs():
    return (np.array([[0.3, -1.2, 2.0], [1.5, 0.4, 0.9]], np.float32), np.float32(0.7))


def eval_reference(x, gamma):
    z = np.asarray(x, np.float64) / -float(gamma)
    m = z.max(axis=1, keepdims=True)
    return -float(gamma) * (np.log(np.exp(z - m).sum(axis=1)) + m[:, 0])
