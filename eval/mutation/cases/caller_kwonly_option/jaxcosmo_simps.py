"""jax-cosmo: Simpson's rule as a custom_jvp over `*args`, with the integrand, the grid and the step
in `nondiff_argnums=(0, 1, 2)`. The primal sums the integrand along the grid in a `lax.scan` (each
step `jax.remat`-ed); the rule (`_custom_simps_jvp(func, x, dx, primals, tangents)`) runs the same
scan over the pairs `jax.jvp` returns, so the tangent is Simpson's rule applied to the integrand's
tangent in its parameters.

Adapted from DifferentiableUniverseInitiative/jax_cosmo:jax_cosmo/scipy/integrate.py:68 (commit
02528f4, "Adds attempt at custom jvp"; `import jax.numpy as np` kept as the library spells it).
The attempt's rule is completed here: `jax.tree_multimap` (removed from JAX) becomes
`jax.tree_util.tree_map`, its scan starts from the first point and subtracts the last one as the
primal does, and the grid is built with numpy so that the nondiff grid stays a constant. The
caller integrates the inverse Hubble rate of a wCDM cosmology, 1/E(z), from z = 0 to 1.5
(a comoving distance in units of c/H0), differentiated in Omega_m and w0.
"""
import functools
from functools import partial
import jax
import jax.numpy as np
import numpy as onp
from jax import custom_jvp
EVAL = {'id': 'mutation/caller_kwonly_option/jaxcosmo_simps', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-cosmo', 'source': 'DifferentiableUniverseInitiative/jax_cosmo:jax_cosmo/scipy/integrate.py:68', 'argnums': (0, 1), 'extra': ['jvp'], 'operator': 'caller_kwonly_option', 'base': 'jaxcosmo_simps'}

def my_simps(func, a, b, *args, N=128):
    if N % 2 == 1:
        raise ValueError('N must be an even integer.')
    dx = (b - a) / N
    x = onp.linspace(a, b, N + 1).astype(onp.float32)
    return _custom_simps(func, x, dx, *args, eps=1e-06)

@partial(custom_jvp, nondiff_argnums=(0, 1, 2))
def _custom_simps(func, x, dx, *args, eps=1e-06):
    f = lambda x: func(x, *args)

    @jax.remat
    def loop_fn(carry, x):
        s = 4 * f(x[0]) + 2 * f(x[1])
        return (carry + s, 0)
    r, _ = jax.lax.scan(loop_fn, f(x[0]), x[1:].reshape((-1, 2)))
    S = dx / 3 * (r - f(x[-1]))
    return S

@_custom_simps.defjvp
def _custom_simps_jvp(func, x, dx, primals, tangents):
    f = lambda x: jax.jvp(lambda *args: func(x, *args), primals, tangents)

    def loop_fn(carry, x):
        s1 = f(x[0])
        s2 = f(x[1])
        return (jax.tree_util.tree_map(lambda a, b, c: a + 4 * b + 2 * c, carry, s1, s2), 0)
    r, _ = jax.lax.scan(loop_fn, f(x[0]), x[1:].reshape((-1, 2)))
    S = jax.tree_util.tree_map(lambda a, b: dx / 3 * (a - b), r, f(x[-1]))
    return S

def _inv_efunc(z, Omega_m, w0):
    a3 = (1.0 + z) ** 3
    return 1.0 / np.sqrt(Omega_m * a3 + (1.0 - Omega_m) * a3 ** (1.0 + w0))

def eval_fn(Omega_m, w0):
    return my_simps(_inv_efunc, 0.0, 1.5, Omega_m, w0)

def eval_inputs():
    return (onp.float32(0.3), onp.float32(-0.9))

def eval_reference(Omega_m, w0):
    t, wt = onp.polynomial.legendre.leggauss(40)
    z = 0.75 * t + 0.75
    om, w = (onp.asarray(Omega_m, onp.float64)[..., None], onp.asarray(w0, onp.float64)[..., None])
    a3 = (1.0 + z) ** 3
    return 0.75 * onp.sum(wt / onp.sqrt(om * a3 + (1.0 - om) * a3 ** (1.0 + w)), axis=-1)
