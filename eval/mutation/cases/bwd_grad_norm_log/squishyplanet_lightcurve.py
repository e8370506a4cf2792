"""squishyplanet: a transit light curve whose reverse-mode gradient is forced through forward
mode. `OblateSystem._setup_lightcurve_func(self)` freezes the system's settings and state into
`frozen = jax.tree_util.Partial(_lightcurve, **constants)` and defines, inside the method, a
`@jax.custom_vjp` `lightcurve(params: dict)` over a dict of orbital parameters (a pytree of
scalars) that returns `frozen(params)`. The forward rule computes the output and the whole
Jacobian with `jax.jacfwd(frozen)(params)` (a dict, one column per parameter) and saves the
1-tuple `(jac,)`; the backward rule binds `jac = res` (the 1-tuple itself) and returns
`jax.tree.map(lambda x: x.T @ g, jac)`, which maps over that 1-tuple and so gives the cotangent
tuple `(dict,)` that JAX expects for the one argument. Registered with the statement
`lightcurve.defvjp(lightcurve_fwd, lightcurve_bwd)`, then rebound as `lightcurve =
jax.jit(lightcurve)` and returned; the public method `lightcurve(self, params={})` calls it.
`_lightcurve` is a module-level `@partial(jax.jit, static_argnums=(1, 2))` function that writes
the given parameters into (its copy of) the state dict and evaluates the transit.

Adapted from ben-cassese/squishyplanet:squishyplanet/oblate_system.py:412 (commit 9d68d3c), with
`OblateSystem.__init__` / `lightcurve` (:293, :833) and `_lightcurve` (:862) of the same file.
Changed: the oblate planet's polynomial-integral transit model (`poly_lightcurve`) is replaced
by a small spherical planet on a circular orbit in front of a quadratically limb-darkened star
(the flux drop `r**2 * I(mu) / <I>` at the planet's projected position), evaluated only inside
the transit so the model is smooth; the class keeps only the state handling this needs; no
oversampling (the library's `oversample > 1` branch kept). The caller fits the radius ratio,
the time of mid-transit and the impact parameter, passed in the params dict.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
_GRAD_NORMS = []
EVAL = {'id': 'mutation/bwd_grad_norm_log/squishyplanet_lightcurve', 'family': 'mutation', 'expect': 'unknown', 'library': 'squishyplanet', 'source': 'ben-cassese/squishyplanet:squishyplanet/oblate_system.py:412', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'bwd_grad_norm_log', 'base': 'squishyplanet_lightcurve'}

def transit_model(state):
    """Relative flux of a small spherical planet crossing a limb-darkened star (radius 1)."""
    phase = 2 * jnp.pi * (state['times'] - state['t0']) / state['period']
    x = state['a'] * jnp.sin(phase)
    y = state['b'] * jnp.cos(phase)
    mu = jnp.sqrt(1 - (x ** 2 + y ** 2))
    u1, u2 = state['ld_u_coeffs']
    intensity = 1 - u1 * (1 - mu) - u2 * (1 - mu) ** 2
    mean_intensity = 1 - u1 / 3 - u2 / 6
    return 1 - state['r'] ** 2 * intensity / mean_intensity

class OblateSystem:
    """A star and one planet; `lightcurve(params)` evaluates the transit at `state["times"]`."""

    def __init__(self, times, t0=0.0, period=3.0, a=4.0, b=0.0, r=0.1, ld_u_coeffs=(0.4, 0.25), oversample=1, stencil=None, parameterize_with_projected_ellipse=False):
        self._state = {'times': jnp.asarray(times), 't0': t0, 'period': period, 'a': a, 'b': b, 'r': r, 'ld_u_coeffs': jnp.asarray(ld_u_coeffs), 'oversample': oversample, 'stencil': stencil, 'parameterize_with_projected_ellipse': parameterize_with_projected_ellipse}
        self._lightcurve_fwd_grad_enforced = self._setup_lightcurve_func()

    def _setup_lightcurve_func(self):
        constants = {'parameterize_with_projected_ellipse': self._state['parameterize_with_projected_ellipse'], 'oversample': self._state['oversample'], 'state': self._state}
        frozen = jax.tree_util.Partial(_lightcurve, **constants)

        @jax.custom_vjp
        def lightcurve(params: dict) -> jax.Array:
            return frozen(params)

        def lightcurve_fwd(params: dict) -> tuple:
            output = frozen(params)
            jac = jax.jacfwd(frozen)(params)
            return (output, (jac,))

        def lightcurve_bwd(res: tuple, g: jax.Array) -> tuple:
            _GRAD_NORMS.append(sum((jnp.sum(jnp.square(_c)) for _c in jax.tree_util.tree_leaves(g))))
            jac = res
            val = jax.tree.map(lambda x: x.T @ g, jac)
            return val
        lightcurve.defvjp(lightcurve_fwd, lightcurve_bwd)
        lightcurve = jax.jit(lightcurve)
        return lightcurve

    def lightcurve(self, params: dict={}) -> jax.Array:
        """The light curve at the system's times, with `params` overriding the state."""
        return self._lightcurve_fwd_grad_enforced(params)

@partial(jax.jit, static_argnums=(1, 2))
def _lightcurve(params, parameterize_with_projected_ellipse, oversample, state):
    for key in params:
        state[key] = params[key]
    transit = transit_model(state)
    if oversample > 1:
        c = (transit.reshape(-1, oversample) * state['stencil'][None, :]).sum(axis=1)
    else:
        c = transit
    return c
TIMES = np.linspace(-0.02, 0.02, 7).astype(np.float32)
SYSTEM = OblateSystem(TIMES)

def eval_fn(r, t0, b):
    return SYSTEM.lightcurve({'r': r, 't0': t0, 'b': b})

def eval_inputs():
    return (np.array(0.12, np.float32), np.array(0.004, np.float32), np.array(0.3, np.float32))

def eval_reference(r, t0, b):
    r, t0, b = (np.asarray(v, np.float64) for v in (r, t0, b))
    phase = 2 * np.pi * (TIMES.astype(np.float64) - t0) / 3.0
    x = 4.0 * np.sin(phase)
    y = b * np.cos(phase)
    mu = np.sqrt(1 - (x ** 2 + y ** 2))
    u1, u2 = (0.4, 0.25)
    intensity = 1 - u1 * (1 - mu) - u2 * (1 - mu) ** 2
    return 1 - r ** 2 * intensity / (1 - u1 / 3 - u2 / 6)

def grad_norm_usage(*args):
    g = jax.jit(jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1, 2)))(*args)
    return tuple(g) + (jnp.sqrt(_GRAD_NORMS[-1]),)

def eval_custom():
    args = tuple(eval_inputs())
    return {'grad_norm_usage': lambda: (grad_norm_usage(*args), None)[1]}
