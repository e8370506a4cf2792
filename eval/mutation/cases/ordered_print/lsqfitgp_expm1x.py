"""lsqfitgp: e^x - 1 - x as a custom_jvp stacked on `jax.jit` (`@jax.custom_jvp` over `@jax.jit`),
accurate for small x through a Taylor polynomial; the rule, registered with `@expm1x.defjvp` and
taking its primals and tangents as `p, t`, gives the derivative e^x - 1 = expm1(x).

Adapted from Gattocrucco/lsqfitgp:src/lsqfitgp/_special/_exp.py:23.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/ordered_print/lsqfitgp_expm1x', 'family': 'mutation', 'expect': 'unknown', 'library': 'lsqfitgp', 'source': 'Gattocrucco/lsqfitgp:src/lsqfitgp/_special/_exp.py:23', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'ordered_print', 'base': 'lsqfitgp_expm1x'}

@jax.custom_jvp
@jax.jit
def expm1x(x):
    """Compute accurately e^x - 1 - x = x^2/2 1F1(1, 3, x)."""
    jax.debug.print('x = {}', x, ordered=True)
    n = 10 if x.dtype == jnp.float32 else 17
    k = jnp.arange(2, n + 1)
    f = jnp.cumprod(k)
    coef = jnp.array(1, x.dtype) / f[::-1]
    smallx = x * x * jnp.polyval(coef, x, unroll=n)
    return jnp.where(jnp.abs(x) < 1, smallx, jnp.expm1(x) - x)

@expm1x.defjvp
def _expm1x_jvp(p, t):
    x, = p
    xt, = t
    return (expm1x(x), jnp.expm1(x) * xt)

def eval_fn(x):
    return expm1x(x)

def eval_inputs():
    return (np.array([0.003, -0.4, 0.9, 1.7, -2.5], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.expm1(x) - x
