"""aqt: a downcast of float32 to a narrow floating-point format (saturating, flushing denormals to
zero) as a custom_jvp made with `functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))`; the
format's three integers are static, and the rule, which takes them first, is a straight-through
estimator: the tangent of the clip to the saturation bound, through `jax.jvp`.

Adapted from google/aqt:aqt/jax_legacy/jax/fp_cast.py:61 (`FloatingPointBounds` is a tuple here;
the rule's length checks are dropped; the library rounds the significand by adding and subtracting
`2**(23 - sig_bits)`, which XLA on CPU folds away under jit, so it is a `jnp.round` here). The rule is deliberately not the derivative of the
(piecewise constant) downcast: the module gives the gradient it means (`eval_grad_reference`).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/jvp_pair_wrapped/aqt_downcast_sat_ftz', 'family': 'mutation', 'expect': 'unknown', 'library': 'aqt', 'source': 'google/aqt:aqt/jax_legacy/jax/fp_cast.py:61', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_pair_wrapped', 'base': 'aqt_downcast_sat_ftz'}

def get_bounds(exp_min, exp_max, sig_bits):
    return (2 ** exp_min, 2 ** exp_max * (2 - 2 ** (-sig_bits)))

@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
def downcast_sat_ftz(x, exp_min, exp_max, sig_bits):
    if x.dtype not in (jnp.float32, jnp.bfloat16):
        raise ValueError('Argument is expected to be of type jnp.float32 or jnp.bfloat16')
    exp_mask = 2139095040
    specials_bound = 2139095040
    one = 1065353216
    mant_mask = 8388607
    xf = x.astype(jnp.float32)
    xi = xf.view(jnp.int32)
    exp = xi & exp_mask
    xi_one = xi & mant_mask | one
    xf_one_rnd = jnp.round(xi_one.view(jnp.float32) * 2 ** sig_bits) / 2 ** sig_bits
    xf_rnd = xf_one_rnd * exp.view(jnp.float32)
    flush_to_zero_bound, saturation_bound = get_bounds(exp_min=exp_min, exp_max=exp_max, sig_bits=sig_bits)
    xf_rnd_sat = jnp.minimum(xf_rnd, saturation_bound)
    xf_rnd_sat_ftz = jnp.sign(xf) * xf_rnd_sat * (xf_rnd_sat >= flush_to_zero_bound)
    xf_rnd_sat_ftz = jnp.where(exp >= specials_bound, xf, xf_rnd_sat_ftz)
    return xf_rnd_sat_ftz.astype(x.dtype)

@downcast_sat_ftz.defjvp
def _downcast_sat_ftz_jvp(exp_min, exp_max, sig_bits, primals, tangents):
    """Computes the straight-through-estimator gradient of downcast_sat_ftz."""
    (x,), (x_dot,) = (primals, tangents)
    y = downcast_sat_ftz(x, exp_min=exp_min, exp_max=exp_max, sig_bits=sig_bits)

    def differentiable_downcast(x):
        _, saturation_bound = get_bounds(exp_min, exp_max, sig_bits)
        return jnp.clip(x, -saturation_bound, saturation_bound)
    _, y_tangent = jax.jvp(differentiable_downcast, (x,), (x_dot,))
    return ((y,), (y_tangent,))

def eval_fn(x):
    return downcast_sat_ftz(x, -6, 3, 2)

def eval_inputs():
    return (np.array([0.3, -1.7, 5.2, 17.0, -30.0, 0.001], np.float32),)

def _downcast_np(x, exp_min, exp_max, sig_bits):
    x = np.asarray(x, np.float64)
    sat = 2.0 ** exp_max * (2 - 2.0 ** (-sig_bits))
    mag = np.abs(x)
    e = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    step = 2.0 ** (e - sig_bits)
    rounded = np.round(mag / step) * step
    rounded = np.minimum(rounded, sat)
    rounded = np.where(rounded >= 2.0 ** exp_min, rounded, 0.0)
    return np.sign(x) * rounded

def eval_reference(x):
    return _downcast_np(x, -6, 3, 2)

def eval_grad_reference(x):
    x = np.asarray(x, np.float64)
    sat = 2.0 ** 3 * (2 - 2.0 ** (-2))
    return (np.where(np.abs(x) <= sat, 1.0, 0.0),)
