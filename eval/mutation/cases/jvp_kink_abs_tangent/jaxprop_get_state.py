"""jaxprop: `get_state(input_pair, x, y, fluid)`, thermodynamic properties from a host library as
`@partial(jax.custom_jvp, nondiff_argnums=(0, 3))` (the input-pair name and the fluid object are
nondiff, in positions 0 and 3 around the two differentiated state variables), returning a dict of
properties made on the host with `jax.pure_callback(..., vmap_method="broadcast_all")` against a
dict template; the rule, registered with the decorator `@get_state.defjvp`, takes the two nondiff
arguments first (named `input_state` and `fluid` there), evaluates the host function at the state
and at perturbed states, and returns the dict of properties with a dict of directional
derivatives built by dict comprehensions (finite differences: the host library has no
derivatives).

Adapted from turbo-sim/jaxprop:jaxprop/coolprop/jax_wrapper.py:46 (commit a7fc837; the rule at
:69): the host library (CoolProp's `Fluid.get_state(...).to_dict()`) is replaced by a calorically
perfect gas written in NumPy, `IdealGas`, with the same interface; the properties are four
(`rho`, `h`, `s`, `a`), the template is float32 (the library runs with x64 on), and the rule's
one-sided differences with a relative step of 1e-6 are central differences with a step of 1e-3
(float32). The caller works in bar and hundreds of kelvin.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvp_kink_abs_tangent/jaxprop_get_state', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxprop', 'source': 'turbo-sim/jaxprop:jaxprop/coolprop/jax_wrapper.py:46', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_kink_abs_tangent', 'base': 'jaxprop_get_state'}
PROPERTIES_CANONICAL = ('rho', 'h', 's', 'a')
PT_INPUTS = 'PT_INPUTS'

class IdealGasState:

    def __init__(self, **props):
        self.props = props

    def to_dict(self):
        return dict(self.props)

class IdealGas:
    """A calorically perfect gas: p in bar, T in hundreds of kelvin; rho in kg/m^3, h in 100 kJ/kg,
    s in kJ/(kg K) from (1.01325 bar, 298.15 K), a in 100 m/s."""

    def __init__(self, R=0.287, cp=1.005):
        self.R = R
        self.cp = cp

    def get_state(self, input_type, x, y):
        if input_type != PT_INPUTS:
            return None
        p, T = (x, y)
        gamma = self.cp / (self.cp - self.R)
        return IdealGasState(rho=100.0 * p / (self.R * 100.0 * T), h=self.cp * T, s=self.cp * np.log(T / 2.9815) - self.R * np.log(p / 1.01325), a=np.sqrt(gamma * self.R * 1000.0 * 100.0 * T) / 100.0)
AIR = IdealGas()

def _make_template(shape):
    """Return a pure_callback template dict with the given output shape."""
    return {k: jax.ShapeDtypeStruct(shape, jnp.float32) for k in PROPERTIES_CANONICAL}

def _get_props_python(input_type, x, y, fluid):
    """Host-side evaluation. Accepts scalars or arrays and returns dict of ndarrays."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    results = {name: np.empty(x.shape, dtype=np.float32) for name in PROPERTIES_CANONICAL}
    for i in np.ndindex(x.shape):
        state = fluid.get_state(input_type, float(x[i]), float(y[i]))
        if state is None:
            for name in PROPERTIES_CANONICAL:
                results[name][i] = np.nan
        else:
            state_dict = state.to_dict()
            for name in PROPERTIES_CANONICAL:
                val = np.float64(state_dict.get(name, np.nan))
                results[name][i] = val if np.isfinite(val) else np.nan
    return results

@partial(jax.custom_jvp, nondiff_argnums=(0, 3))
def get_state(input_pair, x, y, fluid):
    """JAX-callable wrapper around the host library returning a dictionary of properties."""
    shape1 = jnp.shape(x)
    shape2 = jnp.shape(y)
    out_shape = np.broadcast_shapes(shape1, shape2)
    template = _make_template(out_shape)

    def local_eval(p1, p2):
        return _get_props_python(input_pair, p1, p2, fluid)
    return jax.pure_callback(local_eval, template, x, y, vmap_method='broadcast_all')

@get_state.defjvp
def _get_state_jvp(input_state, fluid, primals, tangents):
    """Finite-difference JVP: each property's partial derivatives from perturbed host evaluations."""
    x, y = primals
    x_dot, y_dot = tangents
    out_shape = np.broadcast_shapes(jnp.shape(x), jnp.shape(y))
    template = _make_template(out_shape)
    eps1 = 0.001 * (jnp.abs(x) + 1.0)
    eps2 = 0.001 * (jnp.abs(y) + 1.0)

    def local_eval(xx, yy):
        return _get_props_python(input_state, xx, yy, fluid)
    props_base = jax.pure_callback(local_eval, template, x, y, vmap_method='broadcast_all')
    props_xp = jax.pure_callback(local_eval, template, x + eps1, y, vmap_method='broadcast_all')
    props_xm = jax.pure_callback(local_eval, template, x - eps1, y, vmap_method='broadcast_all')
    props_yp = jax.pure_callback(local_eval, template, x, y + eps2, vmap_method='broadcast_all')
    props_ym = jax.pure_callback(local_eval, template, x, y - eps2, vmap_method='broadcast_all')
    df_dp1 = {k: (props_xp[k] - props_xm[k]) / (2 * eps1) for k in PROPERTIES_CANONICAL}
    df_dp2 = {k: (props_yp[k] - props_ym[k]) / (2 * eps2) for k in PROPERTIES_CANONICAL}
    jvp = {k: df_dp1[k] * (x_dot + jnp.where(x == 0, jnp.abs(x_dot), 0.0)) + df_dp2[k] * y_dot for k in PROPERTIES_CANONICAL}
    return (props_base, jvp)

def eval_fn(p, T):
    props = get_state(PT_INPUTS, p, T, AIR)
    return props['rho'] * props['a'] + 0.5 * props['s'] - 0.1 * props['h']

def eval_inputs():
    return (np.array([1.0, 1.5, 2.2], np.float32), np.array([2.9, 3.4, 4.1], np.float32))

def eval_reference(p, T):
    p64, T64 = (np.asarray(p, np.float64), np.asarray(T, np.float64))
    R, cp = (0.287, 1.005)
    gamma = cp / (cp - R)
    rho = 100.0 * p64 / (R * 100.0 * T64)
    a = np.sqrt(gamma * R * 1000.0 * 100.0 * T64) / 100.0
    s = cp * np.log(T64 / 2.9815) - R * np.log(p64 / 1.01325)
    return rho * a + 0.5 * s - 0.1 * cp * T64
