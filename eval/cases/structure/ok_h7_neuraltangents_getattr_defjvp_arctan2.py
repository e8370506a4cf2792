"""structure look-alike: a custom_jvp rule registered through `@getattr(f, "defjvp", lambda f: f)`, nondiff fill value first.

Source: google/neural-tangents neural_tangents/_src/stax/elementwise.py
https://github.com/google/neural-tangents/blob/main/neural_tangents/_src/stax/elementwise.py
(`_arctan2`: `functools.partial(custom_jvp, nondiff_argnums=(2,))` on `(x, y, fill_zero=None)`;
the rule is attached with `@getattr(_arctan2, 'defjvp', lambda f: f)` so that documentation builds
with a mocked JAX still import, takes `(fill_zero, primals, tangents)` and returns the arctan2
derivative with a clamped denominator). Here the angle of a few points, zero filled at the origin.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_neuraltangents_getattr_defjvp_arctan2", "family": "structure",
    "expect": "ok", "source": "google/neural-tangents neural_tangents/_src/stax/elementwise.py",
    "url": "https://github.com/google/neural-tangents/blob/main/neural_tangents/_src/stax/elementwise.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))  # eval: span
def filled_arctan2(x, y, fill_zero=None):
    if fill_zero is not None:
        return jnp.where((x == 0.0) & (y == 0.0), fill_zero, jnp.arctan2(x, y))
    return jnp.arctan2(x, y)


@getattr(filled_arctan2, "defjvp", lambda f: f)  # eval: span
def _filled_arctan2_jvp(fill_zero, primals, tangents):  # eval: span
    x, y = primals  # eval: span
    x_dot, y_dot = tangents  # eval: span
    angle = filled_arctan2(x, y, fill_zero)
    denom = jnp.maximum(x ** 2 + y ** 2, 1e-30)
    return angle, x_dot * (y / denom) - y_dot * (x / denom)  # eval: span


def eval_fn(x, y):
    return filled_arctan2(x, y, 0.0)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0, 0.3], np.float32), np.array([1.0, 0.4, -0.7, -2.0], np.float32))


def eval_reference(x, y):
    return np.arctan2(np.asarray(x, np.float64), np.asarray(y, np.float64))
