"""tidy3d (electromagnetic solver, Flexcompute): the adjoint plugin's differentiable `run`, which
sends a simulation to a solver outside JAX and returns its data:
`@partial(custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5))` over six parameters, the simulation
(a pytree class registered with `@register_pytree_node_class`, its permittivities the leaves)
then five nondiff settings, strings and a bool, four of them with defaults (`task_name`,
`folder_name="default"`, `path="simulation_data.hdf5"`, `callback_url=None`, `verbose=True`);
the caller passes the task name by keyword. The primal forwards everything by
keyword to a helper `_run`; `run_fwd` (no defaults) runs the forward solve and returns the data
with a 1-tuple of residuals `(res,)`, `res` a `RunResidual` pytree object carrying the task id
(its auxiliary data), the forward field and the simulation; `run_bwd(task_name, folder_name, path, callback_url, verbose, res,
sim_data_vjp)` reads `res[0]`'s field and simulation, runs the adjoint solve from the data's cotangent and returns a
1-tuple holding a simulation object of the input's structure whose leaves are the cotangents
(`(sim_vjp,)`); registered by the statement `run.defvjp(run_fwd, run_bwd)`.

Adapted from flexcompute/tidy3d:tidy3d/plugins/adjoint/web.py:104 (commit 06d6fcc), with
`RunResidual` (:30) and `_run` (:79) of the same file. The library's residual holds the task id
only (the server keeps the forward fields, and the backward pass reads the simulation from the
cotangent's data); here it holds the field and the simulation. Changed: the web API (upload, an FDTD run
on the server, the adjoint run, download) is replaced by a host solve through
`jax.pure_callback`: a 1D frequency-domain problem `(K - k0^2 diag(eps)) E = J` with real fields
(`K` the second-difference matrix), whose adjoint is the same solve with the monitor cotangents as
sources, the permittivity gradient `k0^2 * E * lambda` summed over each structure's cells; the
pydantic models (`JaxSimulation`, `JaxSimulationData`, `JaxStructure`) become small classes
with the same pytree registration; the validation and the simulation's `to_simulation` split
are dropped. The library writes the nondiff positions as `tuple(range(1, 6))`; the base writes
the literal tuple, as `eval/mutation/mutate.py`'s operators read `nondiff_argnums` with
`ast.literal_eval`. The caller differentiates the structures' permittivities.
"""
import functools
from functools import partial
from typing import Tuple
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp
from jax.tree_util import register_pytree_node_class
EVAL = {'id': 'mutation/fwd_drops_nondiff/tidy3d_adjoint_run', 'family': 'mutation', 'expect': 'unknown', 'library': 'tidy3d', 'source': 'flexcompute/tidy3d:tidy3d/plugins/adjoint/web.py:104', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'fwd_drops_nondiff', 'base': 'tidy3d_adjoint_run'}
NUM_CELLS = 24
K0_SQUARED = 0.004
SOURCE_CELL = 3
MONITOR_CELLS = (17, 20)

@register_pytree_node_class
class JaxStructure:
    """A slab of cells [start, stop) of one permittivity."""

    def __init__(self, permittivity, span: Tuple[int, int]):
        self.permittivity = permittivity
        self.span = span

    def tree_flatten(self):
        return ((self.permittivity,), self.span)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(children[0], aux_data)

@register_pytree_node_class
class JaxSimulation:

    def __init__(self, input_structures: Tuple[JaxStructure, ...]):
        self.input_structures = tuple(input_structures)

    def tree_flatten(self):
        return ((self.input_structures,), None)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)

    def spans(self):
        return tuple((s.span for s in self.input_structures))

    def permittivities(self):
        return jnp.stack([jnp.asarray(s.permittivity) for s in self.input_structures])

@register_pytree_node_class
class JaxSimulationData:

    def __init__(self, amps, task_id: str=None):
        self.amps = amps
        self.task_id = task_id

    def tree_flatten(self):
        return ((self.amps,), self.task_id)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(children[0], aux_data)

@register_pytree_node_class
class RunResidual:
    """Extra data passed from the forward to the backward run."""

    def __init__(self, fwd_field, simulation, fwd_task_id: str):
        self.fwd_field = fwd_field
        self.simulation = simulation
        self.fwd_task_id = fwd_task_id

    def tree_flatten(self):
        return ((self.fwd_field, self.simulation), self.fwd_task_id)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, aux_data)

def _system(perms, spans):
    """The host solver's matrix K - k0^2 diag(eps) on the 1D grid."""
    eps = np.ones(NUM_CELLS)
    for p, (start, stop) in zip(perms, spans):
        eps[start:stop] = p
    K = 2.0 * np.eye(NUM_CELLS) - np.eye(NUM_CELLS, k=1) - np.eye(NUM_CELLS, k=-1)
    return K - K0_SQUARED * np.diag(eps)

def _solve_host(perms, spans, adjoint_sources=None, fwd_field=None):
    """Stand-in for the server: a forward solve, or the adjoint solve and the gradient."""
    perms = np.asarray(perms, np.float64)
    A = _system(perms, spans)
    if adjoint_sources is None:
        J = np.zeros(NUM_CELLS)
        J[SOURCE_CELL] = 1.0
        E = np.linalg.solve(A, J)
        return (E.astype(np.float32), E[list(MONITOR_CELLS)].astype(np.float32))
    J_adj = np.zeros(NUM_CELLS)
    J_adj[list(MONITOR_CELLS)] = np.asarray(adjoint_sources, np.float64)
    lam = np.linalg.solve(A.T, J_adj)
    grad_eps = K0_SQUARED * lam * np.asarray(fwd_field, np.float64)
    return np.array([grad_eps[a:b].sum() for a, b in spans], np.float32)

def tidy3d_run_fn(simulation: JaxSimulation, task_name: str, **kwargs):
    """Run the forward problem on the (host) solver: the field and the monitor amplitudes."""
    perms = simulation.permittivities()
    shapes = (jax.ShapeDtypeStruct((NUM_CELLS,), jnp.float32), jax.ShapeDtypeStruct((len(MONITOR_CELLS),), jnp.float32))
    return jax.pure_callback(partial(_solve_host, spans=simulation.spans()), shapes, perms, vmap_method='sequential')

def _run(simulation: JaxSimulation, task_name: str, folder_name: str='default', path: str='simulation_data.hdf5', callback_url: str=None, verbose: bool=True) -> JaxSimulationData:
    """Run the simulation with `tidy3d_run_fn` and wrap its monitor data."""
    _, amps = tidy3d_run_fn(simulation=simulation, task_name=str(task_name), folder_name=folder_name, path=path, callback_url=callback_url, verbose=verbose)
    return JaxSimulationData(amps)

@partial(custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5))
def run(simulation: JaxSimulation, task_name: str, folder_name: str='default', path: str='simulation_data.hdf5', callback_url: str=None, verbose: bool=True) -> JaxSimulationData:
    """Run a `JaxSimulation` and load its results; differentiable with `jax.grad`."""
    return _run(simulation=simulation, task_name=task_name, folder_name=folder_name, path=path, callback_url=callback_url, verbose=verbose)

def run_fwd(simulation) -> Tuple[JaxSimulationData, Tuple[RunResidual]]:
    """Run the forward pass and stash the forward field for the backward pass."""
    task_id = str(task_name) + '_fwd'
    fwd_field, amps = tidy3d_run_fn(simulation=simulation, task_name=task_id)
    res = RunResidual(fwd_field=fwd_field, simulation=simulation, fwd_task_id=task_id)
    jax_sim_data_orig = JaxSimulationData(amps)
    return (jax_sim_data_orig, (res,))

def run_bwd(task_name: str, folder_name: str, path: str, callback_url: str, verbose: bool, res: tuple, sim_data_vjp: JaxSimulationData) -> Tuple[JaxSimulation]:
    """Run the adjoint problem and return a simulation holding the vjp w.r.t. its structures."""
    fwd_field = res[0].fwd_field
    simulation = res[0].simulation
    spans = simulation.spans()
    grads = jax.pure_callback(partial(_solve_host, spans=spans), jax.ShapeDtypeStruct((len(spans),), jnp.float32), simulation.permittivities(), adjoint_sources=sim_data_vjp.amps, fwd_field=fwd_field, vmap_method='sequential')
    sim_vjp = JaxSimulation(tuple((JaxStructure(g, span) for g, span in zip(grads, spans))))
    return (sim_vjp,)
run.defvjp(run_fwd, run_bwd)
SPANS = ((6, 10), (10, 13), (13, 16))

def eval_fn(permittivities):
    structures = tuple((JaxStructure(permittivities[..., i], span) for i, span in enumerate(SPANS)))
    jax_sim = JaxSimulation(input_structures=structures)
    sim_data = run(jax_sim, task_name='slab_stack')
    return sim_data.amps ** 2

def eval_inputs():
    return (np.array([2.5, 4.0, 1.8], np.float32),)

def eval_reference(permittivities):
    perms = np.asarray(permittivities, np.float64)
    A = _system(perms, SPANS)
    J = np.zeros(NUM_CELLS)
    J[SOURCE_CELL] = 1.0
    return np.linalg.solve(A, J)[list(MONITOR_CELLS)] ** 2
