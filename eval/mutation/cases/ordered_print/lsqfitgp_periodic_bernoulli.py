"""lsqfitgp: the periodic Bernoulli polynomial scaled so that B_n(0) = zeta(n), a custom_jvp made
with `functools.partial(jax.custom_jvp, nondiff_argnums=(0,))`; the order n is static and the rule,
which takes n first, gives the derivative through the polynomial of order n - 1
(d/dx B_n = n B_{n-1}, so the scaled derivative is 2 pi times the scaled B_{n-1}).

Adapted from Gattocrucco/lsqfitgp:src/lsqfitgp/_special/_bernoulli.py:42 (the helper
`periodic_bernoulli` is kept; the n -> infinity branch is kept as the library writes it).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy import special as jspecial
from scipy import special

def periodic_bernoulli(n, x):
    n = int(n)
    bernoulli = special.bernoulli(n)
    k = np.arange(n + 1)
    binom = special.binom(n, k)
    coeffs = binom[::-1] * bernoulli
    x = x % 1
    cond = x < 0.5
    x = jnp.where(cond, x, 1 - x)
    out = jnp.polyval(coeffs, x)
    if n % 2 == 1:
        out = out * jnp.where(cond, 1, -1)
    return out
EVAL = {'id': 'mutation/ordered_print/lsqfitgp_periodic_bernoulli', 'family': 'mutation', 'expect': 'unknown', 'library': 'lsqfitgp', 'source': 'Gattocrucco/lsqfitgp:src/lsqfitgp/_special/_bernoulli.py:42', 'argnums': (1,), 'static': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'ordered_print', 'base': 'lsqfitgp_periodic_bernoulli'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def scaled_periodic_bernoulli(n, x):
    """ periodic Bernoulli polynomial scaled such that B_n(0) = zeta(n) """
    jax.debug.print('n = {}', n, ordered=True)
    tau = 2 * jnp.pi
    lognorm = n * jnp.log(tau) - jspecial.gammaln(n + 1)
    norm = jnp.exp(lognorm) / 2
    cond = n < 60
    smalls = norm * periodic_bernoulli(n if cond else 1, x)
    arg = tau * x
    sign = jnp.where(n // 2 % 2, 1, -1)
    larges = sign * jnp.where(n % 2, jnp.sin(arg), jnp.cos(arg))
    return jnp.where(cond, smalls, larges)

@scaled_periodic_bernoulli.defjvp
def _scaled_periodic_bernoulli_jvp(n, primals, tangents):
    x, = primals
    xt, = tangents
    primal = scaled_periodic_bernoulli(n, x)
    tangent = 2 * jnp.pi * scaled_periodic_bernoulli(n - 1, x) * xt
    return (primal, tangent)

def eval_fn(n, x):
    return scaled_periodic_bernoulli(n, x)

def eval_inputs():
    return (3, np.array([0.15, 0.4, 0.72, 1.3], np.float32))

def eval_reference(n, x):
    t = np.asarray(x, np.float64) % 1.0
    b3 = t ** 3 - 1.5 * t ** 2 + 0.5 * t
    return (2 * np.pi) ** 3 / 6.0 / 2.0 * b3
