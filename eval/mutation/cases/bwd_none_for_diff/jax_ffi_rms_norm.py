"""jax: RMS normalization with a nondiff eps; fwd saves the reciprocal rms and x, bwd returns a
1-tuple (the FFI kernels of the example written in jnp here).

Adapted from jax-ml/jax:examples/ffi/src/jax_ffi_example/rms_norm.py:36.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_none_for_diff/jax_ffi_rms_norm', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:examples/ffi/src/jax_ffi_example/rms_norm.py:36', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_none_for_diff', 'base': 'jax_ffi_rms_norm'}

def _rms_scale(x, eps):
    return lax.rsqrt(jnp.mean(x * x, axis=-1) + eps)

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def rms_norm(x, eps=1e-05):
    return x * _rms_scale(x, eps)[..., None]

def rms_norm_fwd(x, eps=1e-05):
    res = _rms_scale(x, eps)
    y = x * res[..., None]
    return (y, (res, x))

def rms_norm_bwd(eps, res, ct):
    del eps
    res, x = res
    assert res.shape == ct.shape[:-1]
    assert x.shape == ct.shape
    r = res[..., None]
    return (None,)
rms_norm.defvjp(rms_norm_fwd, rms_norm_bwd)

def eval_fn(x):
    return rms_norm(x, 1e-05) * jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([[0.5, 1.5, -0.7], [2.0, -1.0, 0.25]], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-05) * np.array([1.0, 2.0, 3.0])
