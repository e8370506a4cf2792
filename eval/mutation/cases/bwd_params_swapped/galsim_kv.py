"""JAX-GalSim: the modified Bessel function K_v(x) as a decorated custom_vjp whose fwd saves
K_{v-1}(x) and K_{v+1}(x) as residuals; the bwd gives dK_v/dx = -(K_{v-1} + K_{v+1}) / 2 and a
zero cotangent for the order v (the gradient in v is not supported; v is not differentiated here).

Adapted from GalSim-developers/JAX-GalSim:jax_galsim/bessel.py:539 (the library's Temme/Olver
`_kv_impl` is a jnp quadrature of K_v(x) = int_0^inf exp(-x cosh t) cosh(v t) dt here).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/galsim_kv', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-galsim', 'source': 'GalSim-developers/JAX-GalSim:jax_galsim/bessel.py:539', 'argnums': (1,), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'galsim_kv'}

def _kv_impl(nu, x):
    nu = jnp.asarray(1.0 * nu)[..., None]
    x = jnp.asarray(1.0 * x)[..., None]
    t = jnp.linspace(0.0, 8.0, 257)
    w = jnp.full(t.shape, t[1] - t[0]).at[0].multiply(0.5).at[-1].multiply(0.5)
    return jnp.sum(w * jnp.exp(-x * jnp.cosh(t)) * jnp.cosh(nu * t), axis=-1)

@jax.custom_vjp
def kv(nu, x):
    return _kv_impl(nu, x)

def _kv_fwd(nu, x):
    kv_val = _kv_impl(nu, x)
    kv_prev = _kv_impl(nu - 1.0, x)
    kv_next = _kv_impl(nu + 1.0, x)
    return (kv_val, (nu, x, kv_prev, kv_next))

def _kv_bwd(g, residuals):
    nu, x, kv_prev, kv_next = residuals
    grad_x = -0.5 * (kv_prev + kv_next) * g
    grad_nu = jnp.zeros_like(nu)
    return (grad_nu, grad_x)
kv.defvjp(_kv_fwd, _kv_bwd)

def eval_fn(nu, x):
    return kv(nu, x)

def eval_inputs():
    return (np.array([0.5, 1.25, 2.0], np.float32), np.array([0.8, 1.5, 2.5], np.float32))

def eval_reference(nu, x):
    nu, x = (np.asarray(nu, np.float64)[..., None], np.asarray(x, np.float64)[..., None])
    t = np.linspace(0.0, 12.0, 4001)
    w = np.full(t.shape, t[1] - t[0])
    w[0] *= 0.5
    w[-1] *= 0.5
    return np.sum(w * np.exp(-x * np.cosh(t)) * np.cosh(nu * t), axis=-1)
