"""s2fft: the latitudinal step of an inverse spherical-harmonic transform as a `@custom_vjp`
(`from jax import custom_vjp`) defined inside the transform function on each call, closing over
the sample colatitudes and the band limit. Its arguments are the harmonic coefficients, the spin
(a Python int, passed as an ordinary argument, not as a nondiff one) and the precomputed kernels
(None here). fwd returns `([], spin, [])` as its residuals (empty lists for what bwd does not
need) and bwd, reading `res[1]`, runs the adjoint step (the forward transform's latitudinal step)
on the cotangent and returns `glm, None, None`.

Adapted from astro-informatics/s2fft:s2fft/transforms/spherical.py:291 (`flm_to_ftm` inside
`inverse_transform_jax`; the on-the-fly Wigner-d recursions of `otf.inverse_latitudinal_step_jax`
and `forward_latitudinal_step_jax` are replaced by one real kernel d[t, l, m] that vanishes for
|m| > l, and the longitudinal FFT by a cosine sum).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp
EVAL = {'id': 'mutation/optimize_remat/s2fft_flm_to_ftm', 'family': 'mutation', 'expect': 'unknown', 'library': 's2fft', 'source': 'astro-informatics/s2fft:s2fft/transforms/spherical.py:291', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'optimize_remat', 'base': 's2fft_flm_to_ftm'}
L = 4

def _thetas(L):
    return np.pi * (2 * np.arange(L) + 1) / (2 * L - 1)

def _kernel(xp, thetas, L, spin):
    """d[t, l, m]: a real stand-in for Wigner-d_{m,-spin}^l(theta_t), zero where |m| > l."""
    t = xp.asarray(thetas)[:, None, None]
    ell = xp.arange(L)[None, :, None]
    m = xp.arange(2 * L - 1)[None, None, :] - (L - 1)
    d = xp.cos((ell + 0.5 * spin) * t) * xp.sin(t) ** xp.abs(m)
    return xp.where(xp.abs(m) <= ell, d, 0.0)

def inverse_latitudinal_step(flm, thetas, L, spin):
    return jnp.einsum('tlm,lm->tm', _kernel(jnp, thetas, L, spin), flm)

def forward_latitudinal_step(ftm, thetas, L, spin):
    return jnp.einsum('tlm,tm->lm', _kernel(jnp, thetas, L, spin), ftm)

def inverse_transform(flm, L, spin=0, precomps=None, L_lower=0):
    thetas = _thetas(L)
    flm = jnp.asarray(flm)
    flm = flm.at[L_lower:].set(jnp.einsum('lm,l->lm', flm[L_lower:], jnp.sqrt((2 * jnp.arange(L_lower, L) + 1) / (4 * jnp.pi))))

    @custom_vjp
    def flm_to_ftm(flm, spin, precomps):
        return inverse_latitudinal_step(flm, thetas, L, spin)

    def f_fwd(flm, spin, precomps):
        return (flm_to_ftm(flm, spin, precomps), ([], spin, []))

    def f_bwd(res, gtm):
        spin = res[1]
        glm = forward_latitudinal_step(gtm, thetas, L, spin)
        return (glm, None, None)
    flm_to_ftm.defvjp(f_fwd, f_bwd, optimize_remat=True)
    ftm = flm_to_ftm(flm, spin, precomps)
    phis = 2 * np.pi * np.arange(2 * L - 1) / (2 * L - 1)
    m = np.arange(2 * L - 1) - (L - 1)
    return ftm @ jnp.asarray(np.cos(np.outer(m, phis)), ftm.dtype)

def eval_fn(flm, spin):
    return jnp.sin(inverse_transform(flm, L, spin))

def eval_inputs():
    rng = np.random.default_rng(5)
    flm = rng.normal(size=(L, 2 * L - 1)).astype(np.float32) * 0.4
    return (flm, 1)

def eval_reference(flm, spin):
    flm = np.asarray(flm, np.float64) * np.sqrt((2 * np.arange(L) + 1) / (4 * np.pi))[:, None]
    ftm = np.einsum('tlm,lm->tm', _kernel(np, _thetas(L), L, spin), flm)
    phis = 2 * np.pi * np.arange(2 * L - 1) / (2 * L - 1)
    m = np.arange(2 * L - 1) - (L - 1)
    return np.sin(ftm @ np.cos(np.outer(m, phis)))
