"""pmwd: the Laplace kernel of a particle-mesh gravity solver in Fourier space,
`pot = -src / k^2` (0 at k = 0), as a bare `@custom_vjp` (`from jax import custom_vjp`) whose
third parameter has a default (`cosmo=None`) and whose first is a list of broadcastable wave-vector
arrays. fwd saves `(kvec, cosmo)` only (the kernel is self-adjoint, so bwd applies it again to
the cotangent) and bwd returns `None, src_cot, None`: no cotangent for the wave vectors, nor for
the cosmology, which the kernel does not read (the caller still differentiates through the
cosmology by the density's scaling). The custom rule keeps the `where` at k = 0 from giving NaN
gradients.

Adapted from eelregit/pmwd:pmwd/gravity.py:9 (`laplace` and its caller `gravity`; the
complex rfft-space density is reduced to a real 2-D array of modes, and pmwd's `Cosmology`
dataclass to a NamedTuple).
"""
import functools
from functools import partial
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp
EVAL = {'id': 'mutation/bwd_ct_dict/pmwd_laplace', 'family': 'mutation', 'expect': 'unknown', 'library': 'pmwd', 'source': 'eelregit/pmwd:pmwd/gravity.py:9', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'bwd_ct_dict', 'base': 'pmwd_laplace'}

class Cosmology(NamedTuple):
    Omega_m: jnp.ndarray
    h: jnp.ndarray

@custom_vjp
def laplace(kvec, src, cosmo=None):
    """Laplace kernel in Fourier space."""
    k2 = sum((k ** 2 for k in kvec))
    pot = jnp.where(k2 != 0, -src / k2, 0)
    return pot

def laplace_fwd(kvec, src, cosmo):
    pot = laplace(kvec, src, cosmo)
    return (pot, (kvec, cosmo))

def laplace_bwd(res, pot_cot):
    """Self-adjoint: the cotangent goes through the same kernel (no NaN from the where)."""
    kvec, cosmo = res
    src_cot = laplace(kvec, pot_cot, cosmo)
    return {'kvec': None, 'src': src_cot, 'cosmo': None}
laplace.defvjp(laplace_fwd, laplace_bwd)

def _fftfreq(shape, spacing):
    kvec = []
    for axis, n in enumerate(shape):
        k = 2 * np.pi * np.fft.fftfreq(n, d=spacing)
        k = k.reshape((-1,) + (1,) * (len(shape) - axis - 1)).astype(np.float32)
        kvec.append(jnp.asarray(k))
    return kvec

def eval_fn(dens, omega_m):
    kvec = _fftfreq(dens.shape[-2:], 1.5)
    cosmo = Cosmology(Omega_m=omega_m, h=jnp.float32(0.7))
    dens = dens * 1.5 * cosmo.Omega_m
    pot = laplace(kvec, dens, cosmo)
    return pot * jnp.array([1.0, -0.5, 2.0, 0.25], jnp.float32)

def eval_inputs():
    dens = np.array([[0.3, -1.1, 0.7, 0.2], [1.4, 0.05, -0.6, 0.9], [-0.8, 0.45, 1.2, -0.35]], np.float32)
    return (dens, np.float32(0.31))

def eval_reference(dens, omega_m):
    dens = np.asarray(dens, np.float64)
    k2 = sum((np.asarray(k, np.float64) ** 2 for k in _fftfreq(dens.shape[-2:], 1.5)))
    src = dens * 1.5 * np.float64(omega_m)
    safe = np.where(k2 != 0, k2, 1.0)
    pot = np.where(k2 != 0, -src / safe, 0.0)
    return pot * np.array([1.0, -0.5, 2.0, 0.25])
