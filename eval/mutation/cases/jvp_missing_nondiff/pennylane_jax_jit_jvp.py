"""pennylane: executing a batch of quantum tapes under `jax.jit` as a call-form
`jax.custom_jvp(_execute_wrapper, nondiff_argnums=[1, 2, 3, 4])` (the tapes, wrapped in a
non-pytree holder, the execute function, the Jacobian calculator and the device), its rule
registered with `.defjvp(_execute_and_compute_jvp, symbolic_zeros=True)`; the primal and the rule
leave JAX through `jax.pure_callback`, the rule marks as trainable only the parameters whose
tangent is not a `SymbolicZero` and contracts the callback's Jacobian with those tangents. The
differentiable argument is a tuple (one per tape) of tuples of scalar parameters.

Adapted from PennyLaneAI/pennylane:pennylane/workflow/interfaces/jax_jit.py:247 (tapes, device
and Jacobian calculator are reduced to a one-qubit RX-RY circuit measured in Z, executed in
numpy and differentiated by the parameter-shift rule; `_compute_jvps` from
pennylane/workflow/jacobian_products.py is restated for one measurement per tape).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvp_missing_nondiff/pennylane_jax_jit_jvp', 'family': 'mutation', 'expect': 'unknown', 'library': 'pennylane', 'source': 'PennyLaneAI/pennylane:pennylane/workflow/interfaces/jax_jit.py:247', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_missing_nondiff', 'base': 'pennylane_jax_jit_jvp'}
Zero = jax.custom_derivatives.SymbolicZero

class _Tape:
    """A one-qubit circuit RX(a) RY(b) |0>, measured as <Z>."""

    def __init__(self, params, trainable_params=(0, 1)):
        self.params = tuple(params)
        self.trainable_params = tuple(trainable_params)

    def bind_new_parameters(self, params, indices):
        new = list(self.params)
        for i, p in zip(indices, params):
            new[i] = p
        return _Tape(new, self.trainable_params)

class _Device:
    wires = 1

class _NonPytreeWrapper:
    """The tapes as one non-differentiable, non-pytree argument."""

    def __init__(self, vals):
        self.vals = vals

def execute_fn(tapes):
    return tuple((np.cos(float(t.params[0])) * np.cos(float(t.params[1])) for t in tapes))

class _ParamShiftJPC:
    """Results and Jacobians of the trainable parameters by the parameter-shift rule."""

    def execute_and_compute_jacobian(self, tapes):
        results, jacs = ([], [])
        for t in tapes:
            results.append(execute_fn([t])[0])
            col = []
            for i in t.trainable_params:
                up = list(t.params)
                down = list(t.params)
                up[i] = float(up[i]) + np.pi / 2
                down[i] = float(down[i]) - np.pi / 2
                col.append((execute_fn([_Tape(up)])[0] - execute_fn([_Tape(down)])[0]) / 2)
            jacs.append(col[0] if len(col) == 1 else tuple(col))
        return (tuple(results), tuple(jacs))

def _to_jax(result):
    if isinstance(result, (list, tuple)):
        return tuple((_to_jax(r) for r in result))
    return np.asarray(result, np.float32)

def _set_all_parameters_on_copy(tapes, params):
    return tuple((t.bind_new_parameters(a, list(range(len(a)))) for t, a in zip(tapes, params, strict=True)))

def _result_shape_dtype_struct(tape, device):
    return jax.ShapeDtypeStruct((), jnp.float32)

def _jac_shape_dtype_struct(tape, device):
    shape_and_dtype = _result_shape_dtype_struct(tape, device)
    if len(tape.trainable_params) == 1:
        return shape_and_dtype
    return tuple((shape_and_dtype for _ in tape.trainable_params))

def _compute_jvps(jacobians, tangents, tapes):
    jvps = []
    for jac, tangent in zip(jacobians, tangents):
        if len(tangent) == 0:
            jvps.append(jnp.zeros((), jnp.float32))
        elif len(tangent) == 1:
            jvps.append(jac * tangent[0])
        else:
            jvps.append(sum((j * t for j, t in zip(jac, tangent))))
    return tuple(jvps)

def _execute_wrapper_inner(params, tapes, execute_fn, _, device, is_vjp=False):
    """Execute tapes using a pure-callback."""
    shape_dtype_structs = tuple((_result_shape_dtype_struct(t, device) for t in tapes.vals))

    def pure_callback_wrapper(p):
        new_tapes = _set_all_parameters_on_copy(tapes.vals, p)
        return _to_jax(execute_fn(new_tapes))
    return jax.pure_callback(pure_callback_wrapper, shape_dtype_structs, params, vmap_method='sequential')

def _execute_wrapper(params, tapes, execute_fn, jpc, device):
    return _execute_wrapper_inner(params, tapes, execute_fn, jpc, device, is_vjp=False)

def _execute_and_compute_jvp(primals, tangents):
    """The results and their jvps; only the parameters with a non-zero tangent are trainable."""
    for tangent, tape in zip(tangents[0], tapes.vals, strict=True):
        tape.trainable_params = tuple((idx for idx, t in enumerate(tangent) if not isinstance(t, Zero)))
    tangents_trainable = tuple((tuple((t for t in tangent if not isinstance(t, Zero))) for tangent in tangents[0]))

    def wrapper(inner_params):
        new_tapes = _set_all_parameters_on_copy(tapes.vals, inner_params)
        return _to_jax(jpc.execute_and_compute_jacobian(new_tapes))
    res_struct = tuple((_result_shape_dtype_struct(t, device) for t in tapes.vals))
    jac_struct = tuple((_jac_shape_dtype_struct(t, device) for t in tapes.vals))
    results, jacobians = jax.pure_callback(wrapper, (res_struct, jac_struct), primals[0], vmap_method='sequential')
    jvps = _compute_jvps(jacobians, tangents_trainable, tapes.vals)
    return (results, jvps)
_execute_jvp_jit = jax.custom_jvp(_execute_wrapper, nondiff_argnums=[1, 2, 3, 4])
_execute_jvp_jit.defjvp(_execute_and_compute_jvp, symbolic_zeros=True)

def jax_jit_jvp_execute(tapes, execute_fn, jpc, device):
    parameters = tuple((tuple(t.params) for t in tapes))
    return _execute_jvp_jit(parameters, _NonPytreeWrapper(tuple(tapes)), execute_fn, jpc, device)

def eval_fn(theta, phi):
    tapes = [_Tape((theta[i], phi[i])) for i in range(theta.shape[0])]
    results = jax_jit_jvp_execute(tapes, execute_fn, _ParamShiftJPC(), _Device())
    return jnp.stack(results) * jnp.array([1.0, -2.0, 0.5], jnp.float32)

def eval_inputs():
    return (np.array([0.3, -1.1, 2.0], np.float32), np.array([0.7, 0.4, -0.9], np.float32))

def eval_reference(theta, phi):
    theta = np.asarray(theta, np.float64)
    phi = np.asarray(phi, np.float64)
    return np.cos(theta) * np.cos(phi) * np.array([1.0, -2.0, 0.5])
