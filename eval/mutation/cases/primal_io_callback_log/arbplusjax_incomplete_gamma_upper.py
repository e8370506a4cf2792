"""arbPlusJAX (interval and ball arithmetic special functions in JAX): the upper incomplete
gamma function Gamma(s, z) = int_z^inf t**(s-1) e**-t dt by panel quadrature, as
`@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4, 5, 6))` over
`_incomplete_gamma_upper_point_ad(s, z, regularized, method, panel_width, max_panels,
samples_per_panel)`: the two arrays first, then five static options (a bool, a method string, a
float and two ints) nondiff. The rule, registered with the decorator
`@_incomplete_gamma_upper_point_ad.defjvp`, takes the five options first, unpacks `s, z =
primals` and `t_s, t_z = tangents`, recomputes the primal, and combines two derivative helpers:
the parameter derivative in s (a central difference that calls the public function, and so the
custom function itself, at s + h and s - h) and the argument derivative in z (minus the
integrand at z, divided by Gamma(s) when regularized). The public function
`incomplete_gamma_upper_point` takes the options as keywords with defaults and passes them on
positionally.

Adapted from philipjones77/arbPlusJAX:src/arbplusjax/special/gamma/incomplete_gamma.py:335
(commit dc51dec), with `incomplete_gamma_upper_point` (:60) and the helpers of
`special/gamma/derivatives.py` (:9, :25). Changed: the method switch (quadrature, recurrence,
asymptotic regimes) and the diagnostics are dropped, one Gauss-Legendre panel rule remains
(`method='quadrature'`, any other raises); the difference step is 1e-2 instead of 1e-4 (the
library works in float64; the caller here in float32), the panels 40 of width 0.5. The caller
evaluates the regularized function Q(s, z) at three points and differentiates in both.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from scipy import special
import jax.experimental
_HOST_LOG = []

def _log_host(value):
    _HOST_LOG.append(value)
EVAL = {'id': 'mutation/primal_io_callback_log/arbplusjax_incomplete_gamma_upper', 'family': 'mutation', 'expect': 'unknown', 'library': 'arbplusjax', 'source': 'philipjones77/arbPlusJAX:src/arbplusjax/special/gamma/incomplete_gamma.py:335', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'primal_io_callback_log', 'base': 'arbplusjax_incomplete_gamma_upper'}

def incomplete_gamma_upper_integrand(s):

    def integrand(t):
        return jnp.exp((s - 1.0) * jnp.log(t) - t)
    return integrand

def _incomplete_gamma_upper_point_base(s, z, *, regularized, method, panel_width, max_panels, samples_per_panel):
    if method != 'quadrature':
        raise ValueError(f'unsupported incomplete-gamma method: {method!r}')
    s = jnp.asarray(s)
    z = jnp.asarray(z)
    nodes, weights = np.polynomial.legendre.leggauss(samples_per_panel)
    starts = z[..., None] + panel_width * jnp.arange(max_panels)
    t = starts[..., None] + 0.5 * panel_width * (nodes + 1.0)
    integrand = incomplete_gamma_upper_integrand(s[..., None, None])
    value = 0.5 * panel_width * jnp.sum(integrand(t) * weights, axis=(-2, -1))
    if regularized:
        value = value / jnp.exp(lax.lgamma(s))
    return value

def incomplete_gamma_upper_argument_derivative(s, z, *, regularized=False):
    integrand = incomplete_gamma_upper_integrand(s)
    value = -integrand(z)
    if regularized:
        value = value / jnp.exp(lax.lgamma(jnp.asarray(s)))
    return value

def incomplete_gamma_upper_parameter_derivative(s, z, *, regularized=False, method='quadrature', panel_width=0.5, max_panels=40, samples_per_panel=16):
    step = 0.01
    return (incomplete_gamma_upper_point(s + step, z, regularized=regularized, method=method, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel) - incomplete_gamma_upper_point(s - step, z, regularized=regularized, method=method, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)) / (2.0 * step)

@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4, 5, 6))
def _incomplete_gamma_upper_point_ad(s, z, regularized, method, panel_width, max_panels, samples_per_panel):
    jax.experimental.io_callback(_log_host, None, s, ordered=True)
    return _incomplete_gamma_upper_point_base(s, z, regularized=regularized, method=method, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)

@_incomplete_gamma_upper_point_ad.defjvp
def _incomplete_gamma_upper_point_ad_jvp(regularized, method, panel_width, max_panels, samples_per_panel, primals, tangents):
    s, z = primals
    t_s, t_z = tangents
    primal_out = _incomplete_gamma_upper_point_base(s, z, regularized=regularized, method=method, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)
    s_derivative = incomplete_gamma_upper_parameter_derivative(s, z, regularized=regularized, method=method, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)
    z_derivative = incomplete_gamma_upper_argument_derivative(s, z, regularized=regularized)
    tangent_out = t_s * s_derivative + t_z * z_derivative
    return (primal_out, tangent_out)

def incomplete_gamma_upper_point(s, z, *, regularized=False, method='quadrature', panel_width=0.5, max_panels=40, samples_per_panel=16):
    return _incomplete_gamma_upper_point_ad(s, z, regularized, method, panel_width, max_panels, samples_per_panel)

def eval_fn(s, z):
    return incomplete_gamma_upper_point(s, z, regularized=True)

def eval_inputs():
    return (np.array([0.7, 1.5, 2.5], np.float32), np.array([0.4, 1.2, 2.0], np.float32))

def eval_reference(s, z):
    return special.gammaincc(np.asarray(s, np.float64), np.asarray(z, np.float64))
