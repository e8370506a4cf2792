"""JaxDEM: `_objective_energy`, the minimizer's objective as a `@partial(jax.custom_vjp)` (a
`partial` with no keywords) over a dict of trial parameters (`{"pos_c", "rotvec"}`), the anchor
`State` and the `System`. The primal returns a pair, the energy and an auxiliary `(trial_state,
eval_system)` (the minimizer calls it through `value_and_grad(has_aux=True)`); fwd returns
`(pe, (trial_state, eval_system))` with the evaluated trial state and the anchor state as
residuals; bwd unpacks the output cotangent `g_val, _ = g`, returns the analytic forces and
torques as the gradient (`{"pos_c": -force, "rotvec": -torque}`, scaled with `jax.tree.map`) and
None for the state and the system.

Adapted from cdelv/JaxDEM:jaxdem/minimizers/routines.py:67 (commit 5d9c13a): the custom function
and its rules as the library spells them; the library's `State` / `System` classes, collider and
force manager are replaced by a small registered dataclass (positions, orientation angle, force,
torque; `dim` a static field) and a dict of two constants, and the force computation by
soft-disc contacts in 2-D (harmonic overlap energy `k/2 * max(2r - |xi - xj|, 0)^2`; discs
without friction, so the torque is zero, as the energy does not depend on the orientation). The
caller evaluates the energy of trial positions and rotation vectors. The static `dim` field is
annotated `typing.Any` (a dotted name): `eval/oracle.py` compiles a case with string annotations
and without a `sys.modules` entry, where `dataclasses` cannot resolve a bare `int`.
"""
from __future__ import annotations
import dataclasses
import functools
import typing
from dataclasses import replace
from functools import partial
from typing import Any
import jax
import jax.numpy as jnp
import numpy as np
jax.config.update('jax_use_direct_linearize', True)  # eval: span
EVAL = {'id': 'mutation/direct_linearize/jaxdem_objective_energy', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxdem', 'source': 'cdelv/JaxDEM:jaxdem/minimizers/routines.py:67', 'argnums': (0, 1), 'extra': ['grad_jit'], 'claim': 'no-op', 'operator': 'direct_linearize', 'base': 'jaxdem_objective_energy'}

@partial(jax.tree_util.register_dataclass, data_fields=['pos_c', 'q', 'force', 'torque'], meta_fields=['dim'])
@dataclasses.dataclass(frozen=True)
class State:
    pos_c: jax.Array
    q: jax.Array
    force: jax.Array
    torque: jax.Array
    dim: typing.Any = 2

def _delta_params_to_state(state: State, params: dict) -> State:
    return replace(state, pos_c=params['pos_c'], q=state.q + params['rotvec'][..., 0])

def _compute_force(state: State, system: dict):
    """Soft-disc contact forces (harmonic overlap) and the potential energy."""
    d = state.pos_c[:, None, :] - state.pos_c[None, :, :]
    n = state.pos_c.shape[0]
    r = jnp.sqrt(jnp.sum(d * d, axis=-1) + jnp.eye(n))
    overlap = jnp.maximum(2.0 * system['radius'] - r, 0.0) * (1.0 - jnp.eye(n))
    pe = 0.25 * system['stiffness'] * jnp.sum(overlap ** 2)
    force = jnp.sum((system['stiffness'] * overlap / r)[..., None] * d, axis=1)
    torque = jnp.zeros(state.pos_c.shape[:-1] + (1,), state.pos_c.dtype)
    return (replace(state, force=force, torque=torque), system, pe)

@partial(jax.custom_vjp)
def _objective_energy(trial_params: dict[str, jax.Array], state: State, system: dict) -> tuple[jax.Array, tuple[State, dict]]:
    """Evaluate potential energy of the trial parameters."""
    trial_state = _delta_params_to_state(state, trial_params)
    trial_state, eval_system, pe = _compute_force(trial_state, system)
    return (pe, (trial_state, eval_system))

def _objective_energy_fwd(trial_params: dict[str, jax.Array], state: State, system: dict):
    pe, (trial_state, eval_system) = _objective_energy(trial_params, state, system)
    return ((pe, (trial_state, eval_system)), (trial_state, state))

def _objective_energy_bwd(res: tuple[State, State], g: tuple[jax.Array, Any]) -> tuple[dict[str, jax.Array], None, None]:
    """Backward pass returning analytical forces/torques as the gradient."""
    trial_state, state = res
    force = trial_state.force
    torque = trial_state.torque
    if state.dim == 2:
        torque = torque
    grads = {'pos_c': -force, 'rotvec': -torque}
    g_val, _ = g
    grads = jax.tree.map(lambda x: x * g_val, grads)
    return (grads, None, None)
_objective_energy.defvjp(_objective_energy_fwd, _objective_energy_bwd)
_ANCHOR = State(pos_c=jnp.zeros((4, 2), jnp.float32), q=jnp.array([0.1, 0.2, -0.3, 0.0], jnp.float32), force=jnp.zeros((4, 2), jnp.float32), torque=jnp.zeros((4, 1), jnp.float32))
_SYSTEM = {'stiffness': jnp.asarray(50.0, jnp.float32), 'radius': jnp.asarray(0.5, jnp.float32)}

def eval_fn(pos_c, rotvec):
    pe, (trial_state, eval_system) = _objective_energy({'pos_c': pos_c, 'rotvec': rotvec}, _ANCHOR, _SYSTEM)
    return pe

def eval_inputs():
    return (np.array([[0.0, 0.0], [0.8, 0.1], [0.3, 0.85], [1.5, 0.9]], np.float32), np.array([[0.05], [-0.02], [0.1], [0.0]], np.float32))

def eval_reference(pos_c, rotvec):
    x = np.asarray(pos_c, np.float64)
    d = x[:, None, :] - x[None, :, :]
    r = np.sqrt(np.sum(d * d, axis=-1) + np.eye(len(x)))
    overlap = np.maximum(1.0 - r, 0.0) * (1.0 - np.eye(len(x)))
    return 0.25 * 50.0 * np.sum(overlap ** 2)
