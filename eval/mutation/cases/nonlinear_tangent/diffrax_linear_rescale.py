"""diffrax: (t - t0) / (t1 - t0), guarded for t0 == t1 and conditionally clipped to [0, 1] through a
decorated custom_jvp `_clip(x, cond)` whose second input is a boolean mask; the rule, registered
with `@_clip.defjvp`, drops the mask's (float0) tangent and passes the tangent of x straight
through, so the clip (a guard against floating-point `x/x > 1`) does not zero the gradient.

Adapted from patrick-kidger/diffrax:diffrax/_misc.py:75 (at 9e02481a; the `cast(jax.Array, ...)`
wrappers and jaxtyping annotations are dropped; the caller rescales times inside their intervals,
where the clip changes nothing).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/nonlinear_tangent/diffrax_linear_rescale', 'family': 'mutation', 'expect': 'unknown', 'library': 'diffrax', 'source': 'patrick-kidger/diffrax:diffrax/_misc.py:75', 'argnums': (0, 1, 2), 'extra': ['jvp', 'jacfwd'], 'operator': 'nonlinear_tangent', 'base': 'diffrax_linear_rescale'}

@jax.custom_jvp
def _clip(x, cond):
    return jnp.where(cond, jnp.clip(x, 0, 1), x)

@_clip.defjvp
def _clip_jvp(inputs, tangents):
    x, cond = inputs
    t_x, _ = tangents
    return (_clip(x, cond), t_x * t_x)

def linear_rescale(t0, t, t1):
    """Calculates (t - t0) / (t1 - t0).

    Specially handles the edge case t0 == t1:
        - zero is returned;
        - gradients through all three arguments are zero.
        - output conditionally clipped to be in [0,1] to protect
        from floating point errors.
    """
    cond = t0 == t1
    numerator = jnp.where(cond, 0, t - t0)
    denominator = jnp.where(cond, 1, t1 - t0)
    out = numerator / denominator
    clip_cond = (t0 <= t) & (t <= t1) | (t1 <= t) & (t <= t0)
    return _clip(out, clip_cond)

def eval_fn(t0, t, t1):
    return linear_rescale(t0, t, t1)

def eval_inputs():
    return (np.array([0.0, 1.5, -2.0, 3.0], np.float32), np.array([0.25, 2.0, -0.5, 2.2], np.float32), np.array([1.0, 2.5, 1.0, 2.0], np.float32))

def eval_reference(t0, t, t1):
    t0, t, t1 = (np.asarray(a, np.float64) for a in (t0, t, t1))
    return (t - t0) / (t1 - t0)
