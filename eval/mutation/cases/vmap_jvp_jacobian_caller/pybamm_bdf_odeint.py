"""PyBaMM (Python battery mathematical modelling): the JAX solver's ODE integral with an adjoint
gradient, `_bdf_odeint(fun, mass, rtol, atol, y0, t_eval, *args)`, created with
`@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3))` (the right-hand side, the mass
matrix and the two tolerances not differentiated; the model's inputs as trailing `*args`, here
a dict of parameters). fwd `_bdf_odeint_fwd` calls the custom function and saves `(ys, ts,
args)`; bwd `_bdf_odeint_rev(func, mass, rtol, atol, res, g)` integrates the augmented adjoint
system (state, its adjoint, the time and parameter cotangents) backwards from each output time
to the previous one under `lax.scan`, with `jax.vjp` of the right-hand side in
`aug_dynamics(augmented_state, t, *args)` (negated time), adds each output's cotangent, and
returns `(y_bar, ts_bar, *args_bar)`; registered by `_bdf_odeint.defvjp(_bdf_odeint_fwd,
_bdf_odeint_rev)`. The public `jax_bdf_integrate(func, y0, t_eval, *args, rtol, atol, mass)`
closure-converts `func` (float constants it closes over become explicit arguments, so they get
cotangents) and calls the custom function. The caller is a Thevenin equivalent-circuit cell
(state of charge and one RC pair) discharged at a constant current, its parameters passed as
PyBaMM passes model inputs, a dict `{"Current function [A]": ..., "R1 [Ohm]": ...}`, the RC
capacitance closed over by the right-hand side (hoisted by the closure conversion), and the
terminal voltage read at the output times.

Adapted from pybamm-team/PyBaMM:packages/pybamm/src/pybamm/solvers/jax_bdf_solver.py:83
(`_bdf_odeint`; commit 7c9f5bd81), :786 (`_bdf_odeint_fwd`), :790 (`_bdf_odeint_rev` and its
`aug_dynamics`, `initialise`, `scan_fun`), :892 (the registration), :780 (the wrapper's
`ravel_pytree` of the state) and :942 (`jax_bdf_integrate`). Changed: the variable-order BDF
stepper (about 700 lines) is a classical Runge-Kutta integrator with a fixed number of steps per
output interval chosen from `rtol` (RK4's error is O(h^4)), used forwards and, on the augmented
system, backwards, as PyBaMM uses its BDF for both; only the identity mass matrix (an ODE) is
kept, so the adjoint's initialisation is the cotangent itself (the DAE branch with `lu_factor`
is dropped); PyBaMM's own `closure_convert` (a copy of JAX's internals) is
`jax.closure_convert`, whose constants come last; the `gnool_jit` wrapper and
`jax_enable_x64` are dropped.
"""
import functools
import operator as op
from functools import partial
import jax
import jax.numpy as jnp
import numpy as onp
from jax.flatten_util import ravel_pytree
from jax.tree_util import tree_map
from scipy.integrate import solve_ivp
import jax.flatten_util
EVAL = {'id': 'mutation/vmap_jvp_jacobian_caller/pybamm_bdf_odeint', 'family': 'mutation', 'expect': 'unknown', 'library': 'pybamm', 'source': 'pybamm-team/PyBaMM:packages/pybamm/src/pybamm/solvers/jax_bdf_solver.py:83', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'vmap_jvp_jacobian_caller', 'base': 'pybamm_bdf_odeint'}

def _rk_integrate(fun, y0, t_span, *args, rtol=1e-06):
    """Integrate dy/dt = fun(y, t, *args) over each interval of `t_span` with RK4; the state at
    every time of `t_span`. The state (a pytree) is raveled, as PyBaMM's wrapper does, so `fun`
    may return a pytree of another structure with the same leaves in the same order."""
    y0_flat, unravel = ravel_pytree(y0)

    def fun_flat(y, t):
        return ravel_pytree(fun(unravel(y), t, *args))[0]
    n_steps = max(4, int(onp.ceil((1.0 / rtol) ** 0.25)))

    def rk4_step(y, t, h):
        k1 = fun_flat(y, t)
        k2 = fun_flat(y + 0.5 * h * k1, t + 0.5 * h)
        k3 = fun_flat(y + 0.5 * h * k2, t + 0.5 * h)
        k4 = fun_flat(y + h * k3, t + h)
        return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    def interval(y, bounds):
        t0, t1 = bounds
        h = (t1 - t0) / n_steps
        y = jax.lax.fori_loop(0, n_steps, lambda i, y: rk4_step(y, t0 + i * h, h), y)
        return (y, y)
    _, ys = jax.lax.scan(interval, y0_flat, (t_span[:-1], t_span[1:]))
    return jax.vmap(unravel)(jnp.concatenate([y0_flat[None], ys]))

@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3))
def _bdf_odeint(fun, mass, rtol, atol, y0, t_eval, *args):
    """Solve M dy/dt = fun(y, t, *args) at the times `t_eval` (rows of the result)."""
    return _rk_integrate(fun, y0, t_eval, *args, rtol=rtol)

def _bdf_odeint_fwd(func, mass, rtol, atol, y0, ts, *args):
    ys = _bdf_odeint(func, mass, rtol, atol, y0, ts, *args)
    return (ys, (ys, ts, args))

def _bdf_odeint_rev(func, mass, rtol, atol, res, g):
    ys, ts, args = res

    def aug_dynamics(augmented_state, t, *args):
        """Original system augmented with vjp_y, vjp_t and vjp_args."""
        y, y_bar, *_ = augmented_state
        y_dot, vjpfun = jax.vjp(func, y, -t, *args)
        y_bar_dot, *rest = vjpfun(y_bar)
        return (-y_dot, y_bar_dot, *rest)
    mass_is_I = onp.array_equal(mass, onp.eye(mass.shape[0]))
    assert mass_is_I, 'only ODEs (identity mass matrix) are supported'

    def initialise(g0, y0, t0):
        return g0
    y_bar = initialise(g[-1], ys[-1], ts[-1])
    t0_bar = 0.0

    def scan_fun(carry, i):
        y_bar, t0_bar, args_bar = carry
        t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i])
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = _rk_integrate(aug_dynamics, (ys[i], y_bar, t0_bar, args_bar), jnp.array([-ts[i], -ts[i - 1]]), *args, rtol=rtol)
        y_bar, t0_bar, args_bar = tree_map(op.itemgetter(1), (y_bar, t0_bar, args_bar))
        y_bar = y_bar + initialise(g[i - 1], ys[i - 1], ts[i - 1])
        return ((y_bar, t0_bar, args_bar), t_bar)
    init_carry = (y_bar, t0_bar, tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = jax.lax.scan(scan_fun, init_carry, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.array([t0_bar]), rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)
_bdf_odeint.defvjp(_bdf_odeint_fwd, _bdf_odeint_rev)

def jax_bdf_integrate(func, y0, t_eval, *args, rtol=1e-06, atol=1e-06, mass=None):
    """Integrate `func(y, t, *args)` from `y0` and return the states at `t_eval` (m, n)."""
    converted, consts = jax.closure_convert(func, y0, t_eval[0], *args)
    if mass is None:
        mass = onp.identity(y0.shape[0], dtype=y0.dtype)
    return _bdf_odeint(converted, mass, rtol, atol, y0, t_eval, *args, *consts)
CAPACITY = 4.0
R0 = 0.05
OCV_COEFFS = onp.array([3.2, 0.9, -0.6, 0.35], onp.float32)
T_EVAL = onp.linspace(0.0, 2.0, 6).astype(onp.float32)

def ocv(soc):
    return OCV_COEFFS[0] + OCV_COEFFS[1] * soc + OCV_COEFFS[2] * soc ** 2 + OCV_COEFFS[3] * soc ** 3

def make_rhs(c1):
    """The model's right-hand side; the RC capacitance is closed over (a model constant that the
    caller still differentiates: `jax.closure_convert` hoists it)."""

    def rhs(y, t, inputs):
        soc, v_rc = (y[0], y[1])
        current = inputs['Current function [A]']
        r1 = inputs['R1 [Ohm]']
        return jnp.stack([-current / CAPACITY, -v_rc / (r1 * c1) + current / c1])
    return rhs

def terminal_voltage(y0, theta):
    inputs = {'Current function [A]': theta[0], 'R1 [Ohm]': theta[1]}
    ys = jax_bdf_integrate(make_rhs(theta[2]), y0, jnp.asarray(T_EVAL), inputs, rtol=1e-06, atol=1e-08)
    return ocv(ys[:, 0]) - inputs['Current function [A]'] * R0 - ys[:, 1]

def eval_fn(y0, theta):
    return terminal_voltage(y0, theta)

def eval_inputs():
    return (onp.array([0.9, 0.02], onp.float32), onp.array([1.5, 0.4, 2.5], onp.float32))

def eval_reference(y0, theta):
    y0, theta = (onp.asarray(y0, onp.float64), onp.asarray(theta, onp.float64))
    current, r1, c1 = theta

    def f(t, y):
        return [-current / CAPACITY, -y[1] / (r1 * c1) + current / c1]
    sol = solve_ivp(f, (0.0, float(T_EVAL[-1])), y0, t_eval=T_EVAL.astype(onp.float64), method='DOP853', rtol=1e-12, atol=1e-13)
    c = OCV_COEFFS.astype(onp.float64)
    soc = sol.y[0]
    return c[0] + c[1] * soc + c[2] * soc ** 2 + c[3] * soc ** 3 - current * R0 - sol.y[1]

def jvp_basis_usage(*args):
    x0, unravel = jax.flatten_util.ravel_pytree(args[0])

    def loss(v):
        return jnp.sum(eval_fn(*[unravel(v) if i == 0 else a for i, a in enumerate(args)]))
    basis = jnp.eye(x0.size, dtype=x0.dtype)
    return jax.vmap(lambda t: jax.jvp(loss, (x0,), (t,))[1])(basis)

def jvp_basis_usage_expected(*args):
    x0, unravel = jax.flatten_util.ravel_pytree(args[0])

    def loss(v):
        return jnp.sum(eval_fn(*[unravel(v) if i == 0 else a for i, a in enumerate(args)]))
    return jax.grad(loss)(x0)

def eval_custom():
    args = tuple(eval_inputs())
    return {'jvp_basis_usage': lambda: (jvp_basis_usage(*args), jvp_basis_usage_expected(*args))}
