"""horqrux (quantum circuits in JAX): the analytic expectation with generalized parameter-shift
(GPSR) derivatives, `analytical_gpsr_fwd(state, gates, observables, values)`, as
`@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))`: the input state (an array), the gate list
and the observables are nondiff, the differentiated argument is a dict of named parameters. The
rule, registered with `@analytical_gpsr_fwd.defjvp`, takes the three nondiff arguments first,
reads `values = primals[0]` and `tangent_dict = tangents[0]`, calls the custom function for the
primal, stacks the values into an array, and runs `jax.lax.scan` over one shift vector per
parameter whose body calls the custom function itself at the shifted dicts (rebuilt with
`dict(zip(keys, x))`); it returns `fwd, jvp.reshape(fwd.shape)`, the shifted differences weighted
by the tangents.

Adapted from pasqal-io/horqrux:horqrux/differentiation/gpsr/analytical.py:133 (commit 76601d8),
with `initialize_gpsr_ingredients` of horqrux/differentiation/gpsr/gpsr_utils.py:65. Changed: the
library's repeated-parameter branch (one parameter feeding several gates) is dropped, and its gate
classes, `apply_gates` and observables are written here anew as a minimal two-qubit state-vector
simulator (RX, RY, CNOT; Z observables); `stack_sp` is `jnp.stack`. The caller evaluates <Z0> and
<Z1> after RX(theta) on qubit 0, RY(phi) on qubit 1 and a CNOT (cos(theta), cos(theta) cos(phi)).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/horqrux_analytical_gpsr', 'family': 'mutation', 'expect': 'unknown', 'library': 'horqrux', 'source': 'pasqal-io/horqrux:horqrux/differentiation/gpsr/analytical.py:133', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'host_callback_primal', 'base': 'horqrux_analytical_gpsr'}

class Primitive:
    """A gate on `target` (controlled by `control`), parametrized by the value named `param`."""

    def __init__(self, target, control=None, param=None):
        self.target, self.control, self.param = (target, control, param)

    @property
    def is_parametric(self):
        return self.param is not None

    def unitary(self, values):
        raise NotImplementedError

class RX(Primitive):

    def unitary(self, values):
        c, s = (jnp.cos(values[self.param] / 2), jnp.sin(values[self.param] / 2))
        return jnp.array([[c, -1j * s], [-1j * s, c]])

class RY(Primitive):

    def unitary(self, values):
        c, s = (jnp.cos(values[self.param] / 2), jnp.sin(values[self.param] / 2))
        return jnp.array([[c, -s], [s, c]]).astype(jnp.complex64)

class CNOT(Primitive):

    def unitary(self, values):
        return jnp.array([[0.0, 1.0], [1.0, 0.0]], jnp.complex64)

def apply_gates(state, gates, values):
    for gate in gates:
        u = gate.unitary(values)
        applied = jnp.moveaxis(jnp.tensordot(u, state, axes=(1, gate.target)), 0, gate.target)
        if gate.control is None:
            state = applied
        else:
            on = [slice(None)] * state.ndim
            on[gate.control] = 1
            state = state.at[tuple(on)].set(applied[tuple(on)])
    return state

class Z:

    def __init__(self, target):
        self.target = target

    def forward(self, state):
        sign = jnp.array([1.0, -1.0], jnp.complex64).reshape([-1 if i == self.target else 1 for i in range(state.ndim)])
        return sign * state

def analytical_expectation(state, gates, observables, values):
    out_state = apply_gates(state, gates, values)
    return jnp.stack([jnp.vdot(out_state, observable.forward(out_state)).real for observable in observables])

def initialize_gpsr_ingredients(values):
    val_keys = tuple(values.keys())
    spectral_gap = dict.fromkeys(val_keys, 2.0)
    shift = jnp.pi / 2
    return (val_keys, spectral_gap, shift)

@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))
def analytical_gpsr_fwd(state, gates, observables, values):
    """The expectations of `observables` after `gates`, analytically."""
    _out = analytical_expectation(state, gates, observables, values)
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)

@analytical_gpsr_fwd.defjvp
def analytical_gpsr_jvp(state, gates, observable, primals, tangents):
    values = primals[0]
    tangent_dict = tangents[0]
    fwd = analytical_gpsr_fwd(state, gates, observable, values)
    legit_val_keys, spectral_gap, shift = initialize_gpsr_ingredients(values)
    values_array = jnp.stack(list(values.values()))
    if values_array.shape[-1] == 1:
        values_array = values_array.squeeze(-1)
    vals_to_dict = values.keys()

    def values_to_dict(x):
        return dict(zip(vals_to_dict, x))

    def jvp_caller(carry_grad, pytree_ind_param):
        shift_vector = pytree_ind_param['shift']
        spectral_gap = pytree_ind_param['spectral_gap']
        up_val = values_to_dict(values_array + shift_vector)
        f_up = analytical_gpsr_fwd(state, gates, observable, up_val)
        down_val = values_to_dict(values_array - shift_vector)
        f_down = analytical_gpsr_fwd(state, gates, observable, down_val)
        grad = spectral_gap * (f_up - f_down) / (4.0 * jnp.sin(spectral_gap * shift / 2.0))
        return (carry_grad + grad, grad)
    spectral_gap_array = jnp.stack(list(spectral_gap.values()))
    tangent_array = jnp.stack(list(tangent_dict.values())).reshape((-1, 1))
    pytree_scan = {'shift': shift * jnp.eye(len(vals_to_dict), dtype=values_array.dtype), 'spectral_gap': spectral_gap_array}
    _, grads = jax.lax.scan(jvp_caller, jnp.zeros(fwd.shape), pytree_scan)
    jvp = (grads * tangent_array).sum(axis=0)
    return (fwd, jvp.reshape(fwd.shape))
STATE = jnp.zeros((2, 2), jnp.complex64).at[0, 0].set(1.0)
GATES = [RX(0, param='theta'), RY(1, param='phi'), CNOT(1, control=0)]
OBSERVABLES = [Z(0), Z(1)]

def eval_fn(theta, phi):
    return analytical_gpsr_fwd(STATE, GATES, OBSERVABLES, {'theta': theta, 'phi': phi})

def eval_inputs():
    return (numpy.array(0.7, numpy.float32), numpy.array(-1.3, numpy.float32))

def eval_reference(theta, phi):
    theta, phi = (float(theta), float(phi))
    return numpy.array([numpy.cos(theta), numpy.cos(theta) * numpy.cos(phi)])
