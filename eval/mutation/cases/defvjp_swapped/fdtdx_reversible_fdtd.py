"""fdtdx: a time-reversible FDTD simulation as a `@jax.custom_vjp` defined inside a factory (the
rules close over the step count and the probe); the primal and fwd return the final state as a
9-field-like tuple (an int32 time step, the fields, the material arrays and a dict of detector
states), fwd keeping that output itself as the residual. bwd stores no trajectory: it runs the
leapfrog backwards in time from the final fields, and at each step pulls the cotangent through
`jax.vjp` of one forward step, inside a `lax.while_loop`; it returns None for the initial fields
and the detector states (the simulation's constants) and cotangents for the inverse permittivity
and permeability only.

Adapted from ymahlau/fdtdx:src/fdtdx/fdtd/fdtd.py:176 (`reversible_fdtd`; the 3-D Yee update,
PML auxiliary fields, checkpoint slices and the recording state are reduced to a 1-D leapfrog
with perfectly conducting ends and one energy probe; `eqxi.while_loop(kind="lax")` is
`lax.while_loop`).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/defvjp_swapped/fdtdx_reversible_fdtd', 'family': 'mutation', 'expect': 'unknown', 'library': 'fdtdx', 'source': 'ymahlau/fdtdx:src/fdtdx/fdtd/fdtd.py:176', 'argnums': (2, 3), 'extra': ['grad_jit'], 'operator': 'defvjp_swapped', 'base': 'fdtdx_reversible_fdtd'}
_DT = 0.5

def forward_single(time_step, E, H, inv_permittivities, inv_permeabilities, detector_states, probe):
    """One leapfrog step: H from the curl of E, then E from the curl of the new H; the probe
    accumulates the field energy it sees."""
    H = H + _DT * inv_permeabilities * (E[1:] - E[:-1])
    E = E.at[1:-1].add(_DT * inv_permittivities[1:-1] * (H[1:] - H[:-1]))
    detector_states = {'energy': detector_states['energy'] + _DT * E[probe] ** 2}
    return (time_step + 1, E, H, inv_permittivities, inv_permeabilities, detector_states)

def backward_single(time_step, E, H, inv_permittivities, inv_permeabilities, detector_states):
    """The exact inverse of the field update of `forward_single` (the detectors are not rewound)."""
    E = E.at[1:-1].add(-_DT * inv_permittivities[1:-1] * (H[1:] - H[:-1]))
    H = H - _DT * inv_permeabilities * (E[1:] - E[:-1])
    return (time_step - 1, E, H, inv_permittivities, inv_permeabilities, detector_states)

def reversible_fdtd(time_steps_total, probe):
    """The simulation of `time_steps_total` steps, differentiable by time reversal."""

    def reversible_fdtd_base(state):
        return jax.lax.while_loop(lambda s: time_steps_total > s[0], lambda s: forward_single(*s, probe=probe), state)

    @jax.custom_vjp
    def reversible_fdtd_primal(E, H, inv_permittivities, inv_permeabilities, detector_states):
        state = (jnp.asarray(0, dtype=jnp.int32), E, H, inv_permittivities, inv_permeabilities, detector_states)
        return reversible_fdtd_base(state)

    def body_fn(sr_tuple):
        state, cot = sr_tuple
        state = backward_single(*state)
        _, update_vjp = jax.vjp(partial(forward_single, probe=probe), *state)
        cot = update_vjp(cot)
        return (state, cot)

    def cond_fun(sr_tuple, start_time_step):
        s_k, r_k = sr_tuple
        del r_k
        return s_k[0] > start_time_step

    def fdtd_bwd(residual, cot):
        primal_out = residual
        _, cot = jax.lax.while_loop(partial(cond_fun, start_time_step=0), body_fn, (primal_out, cot))
        return (None, None, cot[3], cot[4], None)

    def fdtd_fwd(E, H, inv_permittivities, inv_permeabilities, detector_states):
        state = (jnp.asarray(0, dtype=jnp.int32), E, H, inv_permittivities, inv_permeabilities, detector_states)
        primal_out = reversible_fdtd_base(state)
        return (primal_out, primal_out)
    reversible_fdtd_primal.defvjp(fdtd_bwd, fdtd_fwd)
    return reversible_fdtd_primal
_simulate = reversible_fdtd(time_steps_total=12, probe=5)

def eval_fn(E, H, inv_permittivities, inv_permeabilities):
    _, E_out, H_out, _, _, detectors = _simulate(E, H, inv_permittivities, inv_permeabilities, {'energy': jnp.zeros((), E.dtype)})
    return detectors['energy'] + 0.25 * jnp.sum(E_out * jnp.arange(E_out.shape[0], dtype=E_out.dtype))

def eval_inputs():
    E = np.array([0.0, 0.3, 1.0, 0.6, 0.1, 0.0, 0.0, 0.0], np.float32)
    H = np.zeros(7, np.float32)
    inv_permittivities = np.array([1.0, 0.9, 1.1, 0.7, 0.8, 1.2, 0.95, 1.0], np.float32)
    inv_permeabilities = np.array([1.0, 1.05, 0.85, 0.9, 1.1, 0.95, 1.0], np.float32)
    return (E, H, inv_permittivities, inv_permeabilities)

def eval_reference(E, H, inv_permittivities, inv_permeabilities):
    E = np.array(E, np.float64)
    H = np.array(H, np.float64)
    eps = np.asarray(inv_permittivities, np.float64)
    mu = np.asarray(inv_permeabilities, np.float64)
    energy = 0.0
    for _ in range(12):
        H = H + _DT * mu * (E[1:] - E[:-1])
        E[1:-1] = E[1:-1] + _DT * eps[1:-1] * (H[1:] - H[:-1])
        energy += _DT * E[5] ** 2
    return energy + 0.25 * np.sum(E * np.arange(E.shape[0]))
