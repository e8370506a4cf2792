"""jaxoplanet: the solution of Kepler's equation as a decorated custom_jvp with a tuple output
(sin f, cos f of the true anomaly f); the rule, registered with `@_kepler.defjvp` on a function
named `_`, turns a symbolic-zero tangent into zeros (`ad.Zero`) and propagates df = dM (1 + e cos f)^2
/ (1 - e^2)^1.5 + de (2 + e cos f) sin f / (1 - e^2) to both outputs.

Adapted from exoplanet-dev/jaxoplanet:src/jaxoplanet/core/kepler.py:28 (the library's `starter` and
`refine` solver is a fixed number of Newton steps on E - e sin E = M here; the outer `jax.jit`
wrapper `kepler` is kept).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.interpreters import ad
EVAL = {'id': 'mutation/nondiff_move/jaxoplanet_kepler', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxoplanet', 'source': 'exoplanet-dev/jaxoplanet:src/jaxoplanet/core/kepler.py:28', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'jaxoplanet_kepler'}

def _solve(M, ecc):
    E = M + ecc * jnp.sin(M)
    for _ in range(30):
        E = E - (E - ecc * jnp.sin(E) - M) / (1 - ecc * jnp.cos(E))
    return E

@jax.jit
def kepler(M, ecc):
    return _kepler(M, ecc)

@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _kepler(M, ecc):
    M = M % (2 * jnp.pi)
    high = M > jnp.pi
    M = jnp.where(high, 2 * jnp.pi - M, M)
    E = _solve(M, ecc)
    E = jnp.where(high, 2 * jnp.pi - E, E)
    tan_half_f = jnp.sqrt((1 + ecc) / (1 - ecc)) * jnp.tan(0.5 * E)
    tan2_half_f = jnp.square(tan_half_f)
    denom = 1 / (1 + tan2_half_f)
    sinf = 2 * tan_half_f * denom
    cosf = (1 - tan2_half_f) * denom
    return (sinf, cosf)

@_kepler.defjvp
def _(e, primals, tangents):
    M, = primals
    M_dot, = tangents
    e_dot = jnp.zeros_like(e)
    sinf, cosf = _kepler(M, e)
    ecosf = e * cosf
    ome2 = 1 - e ** 2

    def make_zero(tan):
        if type(tan) is ad.Zero:
            return ad.zeros_like_aval(tan.aval)
        else:
            return tan
    f_dot = make_zero(M_dot) * (1 + ecosf) ** 2 / ome2 ** 1.5
    f_dot += make_zero(e_dot) * (2 + ecosf) * sinf / ome2
    return ((sinf, cosf), (cosf * f_dot, -sinf * f_dot))

def eval_fn(M, ecc):
    sinf, cosf = kepler(M, ecc)
    return sinf + 2.0 * cosf

def eval_inputs():
    return (np.array([0.4, 2.5, 4.0], np.float32), np.array([0.1, 0.3, 0.5], np.float32))

def eval_reference(M, ecc):
    M, ecc = (np.asarray(M, np.float64), np.asarray(ecc, np.float64))
    E = M.copy()
    for _ in range(100):
        E = E - (E - ecc * np.sin(E) - M) / (1 - ecc * np.cos(E))
    f = 2 * np.arctan2(np.sqrt(1 + ecc) * np.sin(E / 2), np.sqrt(1 - ecc) * np.cos(E / 2))
    return np.sin(f) + 2.0 * np.cos(f)
