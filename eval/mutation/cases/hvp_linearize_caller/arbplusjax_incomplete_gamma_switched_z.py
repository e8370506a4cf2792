"""arbPlusJAX (interval and ball arithmetic special functions in JAX): the upper incomplete
gamma function differentiated in its argument z only, as
`@partial(jax.custom_vjp, nondiff_argnums=(0, 2, 3, 4, 5))` over
`incomplete_gamma_upper_switched_z_vjp(s, z, regularized=False, panel_width=..., max_panels=...,
samples_per_panel=...)`: the parameter s (first) and the four options with defaults are nondiff,
z alone is differentiable. fwd evaluates through a "switched" helper that also returns an
`EvaluationFingerprint` NamedTuple (an int32 regime code, an int32 work count, a float scale)
and saves an `AdRuleContext` NamedTuple built by `context_with_fingerprint(fingerprint, s, z)`:
the fingerprint and a tuple of saved values. bwd takes the five nondiff values first, then the
context and the cotangent, drops the three quadrature options with `del`, reads
`s_val, z_val = ctx.saved_values` and returns the 1-tuple `(g * dQ/dz,)`. The caller passes the
options by keyword (one of them left at its default).

Adapted from philipjones77/arbPlusJAX:src/arbplusjax/special/gamma/incomplete_gamma_ad.py:81
(commit dc51dec), with `incomplete_gamma_upper_switched_point_with_fingerprint` (:16),
`context_with_fingerprint` (autodiff/ad_rules.py:65) and the argument derivative of
`special/gamma/derivatives.py:9`. Changed: the regime selection keeps its code but one
Gauss-Legendre panel rule computes every regime; the fingerprint keeps three of its fields (its
note string and flags dropped); float64 casts are the input's dtype; panels of width 0.5.
"""
import functools
from functools import partial
from typing import Any, NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from scipy import special
EVAL = {'id': 'mutation/hvp_linearize_caller/arbplusjax_incomplete_gamma_switched_z', 'family': 'mutation', 'expect': 'unknown', 'library': 'arbplusjax', 'source': 'philipjones77/arbPlusJAX:src/arbplusjax/special/gamma/incomplete_gamma_ad.py:81', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'hvp_linearize_caller', 'base': 'arbplusjax_incomplete_gamma_switched_z'}

class EvaluationFingerprint(NamedTuple):
    regime_code: Any
    work_units: Any
    scale: Any

class AdRuleContext(NamedTuple):
    fingerprint: EvaluationFingerprint
    saved_values: tuple

def context_with_fingerprint(fingerprint, *saved_values):
    return AdRuleContext(fingerprint=fingerprint, saved_values=tuple(saved_values))

def incomplete_gamma_upper_integrand(s):

    def integrand(t):
        return jnp.exp((s - 1.0) * jnp.log(t) - t)
    return integrand

def _panel_quadrature(s, z, *, regularized, panel_width, max_panels, samples_per_panel):
    z = jnp.asarray(z)
    nodes, weights = np.polynomial.legendre.leggauss(samples_per_panel)
    starts = z[..., None] + panel_width * jnp.arange(max_panels)
    t = starts[..., None] + 0.5 * panel_width * (nodes + 1.0)
    value = 0.5 * panel_width * jnp.sum(incomplete_gamma_upper_integrand(s)(t) * weights, axis=(-2, -1))
    if regularized:
        value = value / jnp.exp(lax.lgamma(jnp.asarray(s, dtype=value.dtype)))
    return value

def incomplete_gamma_upper_switched_point_with_fingerprint(s, z, *, regularized=False, panel_width=0.5, max_panels=40, samples_per_panel=16):
    value = _panel_quadrature(s, z, regularized=regularized, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)
    regime = jnp.where(jnp.asarray(z) < s + 1.0, 0, 1).astype(jnp.int32)
    fingerprint = EvaluationFingerprint(regime_code=regime, work_units=jnp.full(jnp.shape(z), max_panels * samples_per_panel, dtype=jnp.int32), scale=jnp.exp(-jnp.asarray(z)))
    return (value, fingerprint)

def incomplete_gamma_upper_argument_derivative(s, z, *, regularized=False):
    value = -incomplete_gamma_upper_integrand(s)(z)
    if regularized:
        value = value / jnp.exp(lax.lgamma(jnp.asarray(s, dtype=jnp.result_type(value))))
    return value

def _incomplete_gamma_upper_switched_z_primal(s, z, regularized=False, panel_width=0.5, max_panels=40, samples_per_panel=16):
    value, _ = incomplete_gamma_upper_switched_point_with_fingerprint(s, z, regularized=regularized, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)
    return value

@partial(jax.custom_vjp, nondiff_argnums=(0, 2, 3, 4, 5))
def incomplete_gamma_upper_switched_z_vjp(s, z, regularized=False, panel_width=0.5, max_panels=40, samples_per_panel=16):
    return _incomplete_gamma_upper_switched_z_primal(s, z, regularized=regularized, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)

def _incomplete_gamma_upper_switched_z_vjp_fwd(s, z, regularized, panel_width, max_panels, samples_per_panel):
    value, fingerprint = incomplete_gamma_upper_switched_point_with_fingerprint(s, z, regularized=regularized, panel_width=panel_width, max_panels=max_panels, samples_per_panel=samples_per_panel)
    return (value, context_with_fingerprint(fingerprint, jnp.asarray(s), jnp.asarray(z)))

def _incomplete_gamma_upper_switched_z_vjp_bwd(s, regularized, panel_width, max_panels, samples_per_panel, ctx, g):
    del panel_width, max_panels, samples_per_panel
    s_val, z_val = ctx.saved_values
    derivative = incomplete_gamma_upper_argument_derivative(s_val, z_val, regularized=regularized)
    return (g * derivative,)
incomplete_gamma_upper_switched_z_vjp.defvjp(_incomplete_gamma_upper_switched_z_vjp_fwd, _incomplete_gamma_upper_switched_z_vjp_bwd)
SHAPE = 1.5

def eval_fn(z):
    return incomplete_gamma_upper_switched_z_vjp(SHAPE, z, regularized=True, max_panels=48, samples_per_panel=16)

def eval_inputs():
    return (np.array([0.3, 0.9, 1.6, 2.4], np.float32),)

def eval_reference(z):
    return special.gammaincc(SHAPE, np.asarray(z, np.float64))

def hvp_linearize_usage(*args):

    def loss(v):
        return jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)]))
    x = jnp.asarray(args[0])
    _, hvp = jax.linearize(jax.grad(loss), x)
    return hvp(jnp.ones_like(x))

def eval_custom():
    args = tuple(eval_inputs())
    return {'hvp_linearize_usage': lambda: (hvp_linearize_usage(*args), None)[1]}
