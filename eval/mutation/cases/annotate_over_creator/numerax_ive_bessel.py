"""numerax (juehang): `ive(v, z) = exp(-z) I_v(z)`, the exponentially scaled modified Bessel
function of the first kind for real order, a bare `@jax.custom_jvp` whose primal evaluates
regimes in parallel and selects per element with `jnp.where` (a log-space power series for z <
30, Hankel's large-argument expansion beyond), with the `z == 0` edge (`ive(0, 0) = 1`). The
rule, registered by the decorator `@ive.defjvp` on `_ive_jvp(primals, tangents)`, unpacks `v, z =
primals` and `_, z_dot = tangents` -- the order's tangent is ignored on purpose (differentiable
in `z` only) -- and calls the custom function three times, at `v`, `v + 1` and `v - 1`, using
the recurrence `d/dz ive(v, z) = (ive(v - 1, z) + ive(v + 1, z)) / 2 - ive(v, z)`, with
`ive(-1, z)` replaced by `ive(1, z)` at `v == 0` (a `where` on the order); it returns `out,
dive_dz * z_dot`. The caller is a von Mises likelihood on the circle: the log-density
`kappa * cos(x - mu) - log(2 pi) - log(ive(0, kappa)) - kappa` summed over observations of
several concentrations, differentiated in the concentrations and the mean directions.

Adapted from juehang/numerax:src/numerax/special/_bessel.py:190 (`ive`, and `_ive_jvp` at :275;
commit 464dc96), with `_ive_series` (:41) and `_ive_hankel` (:82) of the same file. Changed: the
Olver uniform expansion for large orders (z >= 30 and v >= 10; its U_k polynomials) is left
out, so the Hankel branch covers every order at large z (the caller's order is 0); the long
docstrings are shortened and the `jaxtyping` annotations dropped.
"""
import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
import jax.profiler
EVAL = {'id': 'mutation/annotate_over_creator/numerax_ive_bessel', 'family': 'mutation', 'expect': 'unknown', 'library': 'numerax', 'source': 'juehang/numerax:src/numerax/special/_bessel.py:190', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'annotate_over_creator', 'base': 'numerax_ive_bessel'}
_SERIES_N_TERMS = 75
_HANKEL_N_TERMS = 15
_SERIES_Z_THRESHOLD = 30.0

def _ive_series(v, z):
    """Power series for ive(v, z) in log-space (DLMF 10.25.2)."""
    v = jnp.asarray(v)
    z = jnp.asarray(z)
    out_shape = jnp.broadcast_shapes(v.shape, z.shape)
    v = jnp.broadcast_to(v, out_shape)
    z = jnp.broadcast_to(z, out_shape)
    z_safe = jnp.where(z > 0, z, 1.0)
    half_z_sq = z_safe * z_safe / 4.0
    ks = jnp.arange(1, _SERIES_N_TERMS, dtype=z_safe.dtype)
    log_half_z_sq = jnp.log(half_z_sq)[..., None]
    log_ratios = log_half_z_sq - jnp.log(ks) - jnp.log(v[..., None] + ks)
    log_r_tail = jnp.cumsum(log_ratios, axis=-1)
    zero = jnp.zeros((*out_shape, 1), dtype=log_r_tail.dtype)
    log_r = jnp.concatenate([zero, log_r_tail], axis=-1)
    log_sum = jax.scipy.special.logsumexp(log_r, axis=-1)
    log_ive = -z_safe + v * jnp.log(z_safe / 2.0) - jax.scipy.special.gammaln(v + 1.0) + log_sum
    return jnp.exp(log_ive)

def _ive_hankel(v, z):
    """Hankel large-argument asymptotic for ive(v, z) (DLMF 10.40.1)."""
    v = jnp.asarray(v)
    z = jnp.asarray(z)
    out_shape = jnp.broadcast_shapes(v.shape, z.shape)
    v = jnp.broadcast_to(v, out_shape)
    z = jnp.broadcast_to(z, out_shape)
    z_safe = jnp.where(z > 0, z, 1.0)
    four_vsq = 4.0 * v * v
    ks = jnp.arange(1, _HANKEL_N_TERMS + 1, dtype=z_safe.dtype)
    numerators = four_vsq[..., None] - (2.0 * ks - 1.0) ** 2
    signed_factors = -numerators / (8.0 * ks * z_safe[..., None])
    cum_factors = jnp.cumprod(signed_factors, axis=-1)
    ones = jnp.ones((*out_shape, 1), dtype=cum_factors.dtype)
    terms = jnp.concatenate([ones, cum_factors], axis=-1)
    return jnp.sum(terms, axis=-1) / jnp.sqrt(2.0 * jnp.pi * z_safe)

@jax.profiler.annotate_function
@jax.custom_jvp
def ive(v, z):
    """Exponentially scaled modified Bessel function of the first kind, real order, z >= 0."""
    v = jnp.asarray(v)
    z = jnp.asarray(z)
    out_shape = jnp.broadcast_shapes(v.shape, z.shape)
    v = jnp.broadcast_to(v, out_shape)
    z = jnp.broadcast_to(z, out_shape)
    series_val = _ive_series(v, z)
    hankel_val = _ive_hankel(v, z)
    result = jnp.where(z < _SERIES_Z_THRESHOLD, series_val, hankel_val)
    z_zero = z <= 0
    z_zero_val = jnp.where(v == 0.0, 1.0, 0.0)
    return jnp.where(z_zero, z_zero_val, result)

@ive.defjvp
def _ive_jvp(primals, tangents):
    """d/dz ive(v, z) = (ive(v-1, z) + ive(v+1, z)) / 2 - ive(v, z) (DLMF 10.29.1); the v
    tangent is ignored."""
    v, z = primals
    _, z_dot = tangents
    v = jnp.asarray(v)
    z = jnp.asarray(z)
    out = ive(v, z)
    out_plus = ive(v + 1.0, z)
    out_minus_direct = ive(v - 1.0, z)
    out_minus = jnp.where(v == 0.0, out_plus, out_minus_direct)
    dive_dz = 0.5 * (out_minus + out_plus) - out
    return (out, dive_dz * z_dot)
OBSERVATIONS = np.array([[0.3, -0.2, 0.9, 0.1], [2.8, -2.9, 3.1, 2.5], [1.0, 1.4, 0.7, 1.2], [-1.5, -1.3, -1.6, -1.45]], np.float32)

def von_mises_log_likelihood(kappa, mu, x):
    """Sum over observations of the von Mises log-density, one (kappa, mu) per row."""
    log_norm = jnp.log(2 * jnp.pi) + jnp.log(ive(0.0, kappa)) + kappa
    return jnp.sum(kappa[:, None] * jnp.cos(x - mu[:, None]), axis=-1) - x.shape[-1] * log_norm

def eval_fn(kappa, mu):
    return von_mises_log_likelihood(kappa, mu, OBSERVATIONS)

def eval_inputs():
    return (np.array([0.7, 2.5, 9.0, 36.0], np.float32), np.array([0.2, 3.0, 1.1, -1.4], np.float32))

def eval_reference(kappa, mu):
    k = np.asarray(kappa, np.float64)
    m = np.asarray(mu, np.float64)
    x = OBSERVATIONS.astype(np.float64)
    log_norm = np.log(2 * np.pi) + np.log(scipy.special.ive(0.0, k)) + k
    return np.sum(k[:, None] * np.cos(x - m[:, None]), axis=-1) - x.shape[-1] * log_norm
