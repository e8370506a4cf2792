"""arbPlusJAX (interval and ball arithmetic linear algebra in JAX): the Hutchinson trace
integrand x^T A x of a matrix-free operator, as `@partial(jax.custom_vjp, nondiff_argnums=(0,))`
over `_jrb_mat_trace_integrand_point_custom(matvec, x)`: the operator (a
`jax.tree_util.Partial` of a dense matvec, a pytree) is nondiff, the probe vector x is
differentiated. fwd returns the value and the probe itself as the residual, a bare array (not
a tuple); bwd takes `(matvec, x, cotangent)`, applies the operator again and returns the
1-tuple `(2 * cotangent * A x,)` (the operator is symmetric). Registration by the call
`f.defvjp(fwd, bwd)` with the two rules on separate lines. The public entry point dispatches:
when the operator's leaves hold a tracer (the caller differentiates the matrix) it takes the
plain path, otherwise the custom one.

Adapted from philipjones77/arbPlusJAX:src/arbplusjax/jrb_mat.py:4185 (commit dc51dec), with
`jrb_mat_trace_integrand_point` (:4207) and `_jrb_operator_contains_tracer` (:144). Changed: the
interval representation ([lower, upper] pairs, the midpoint taken before use, point intervals
returned) is dropped: plain float vectors; the operator application helpers of
`matrix_free_core` are one dense matvec in a `Partial`. The caller evaluates the integrand at a
probe vector for a fixed symmetric matrix and differentiates with respect to the probe.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
import numpy

def _host_cotangent(c):
    c = jnp.asarray(c)
    return jax.pure_callback(lambda v: numpy.asarray(v), jax.ShapeDtypeStruct(c.shape, c.dtype), c)
EVAL = {'id': 'mutation/bwd_ct_pure_callback/arbplusjax_trace_integrand', 'family': 'mutation', 'expect': 'unknown', 'library': 'arbplusjax', 'source': 'philipjones77/arbPlusJAX:src/arbplusjax/jrb_mat.py:4185', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_ct_pure_callback', 'base': 'arbplusjax_trace_integrand'}

def _dense_matvec(a, v):
    return a @ v

def jrb_mat_dense_operator(a):
    return jax.tree_util.Partial(_dense_matvec, jnp.asarray(a))

def _jrb_operator_contains_tracer(operator):
    return any((isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(operator)))

def _jrb_apply_operator_mid(matvec, x):
    return matvec(jnp.asarray(x))

def _jrb_mat_trace_integrand_point_base(matvec, x):
    y = _jrb_apply_operator_mid(matvec, x)
    return jnp.vdot(x, y).real

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _jrb_mat_trace_integrand_point_custom(matvec, x):
    return _jrb_mat_trace_integrand_point_base(matvec, x)

def _jrb_mat_trace_integrand_point_fwd(matvec, x):
    y = _jrb_mat_trace_integrand_point_base(matvec, x)
    return (y, x)

def _jrb_mat_trace_integrand_point_bwd(matvec, x, cotangent):
    action = _jrb_apply_operator_mid(matvec, x)
    scale = jnp.asarray(cotangent, dtype=action.dtype)
    return (_host_cotangent(2.0 * scale * action),)
_jrb_mat_trace_integrand_point_custom.defvjp(_jrb_mat_trace_integrand_point_fwd, _jrb_mat_trace_integrand_point_bwd)

def jrb_mat_trace_integrand_point(matvec, x):
    if _jrb_operator_contains_tracer(matvec):
        return _jrb_mat_trace_integrand_point_base(matvec, x)
    return _jrb_mat_trace_integrand_point_custom(matvec, x)
_B = np.array([[1.0, 0.3, -0.2, 0.0], [0.1, 0.9, 0.4, -0.3], [0.0, -0.5, 1.2, 0.2], [0.6, 0.0, 0.1, 0.8]])
A_SPD = (_B @ _B.T + 0.5 * np.eye(4)).astype(np.float32)
OPERATOR = jrb_mat_dense_operator(A_SPD)

def eval_fn(x):
    return jrb_mat_trace_integrand_point(OPERATOR, x)

def eval_inputs():
    return (np.array([0.5, -1.0, 0.25, 0.75], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.einsum('...i,ij,...j->...', x, A_SPD.astype(np.float64), x)
