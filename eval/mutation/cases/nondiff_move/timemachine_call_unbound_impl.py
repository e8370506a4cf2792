"""timemachine (alchemical free-energy calculations, proteneer): the JAX entry point of a potential
whose energy and derivatives come from an accelerated implementation object,
`call_unbound_impl(impl, conf, params, box)`, as `@partial(jax.custom_jvp, nondiff_argnums=(0,))`:
the implementation (an object with an `execute` method, not an array) is the nondiff argument,
the primal asks it for the energy only, and the rule `_(impl, primals, tangents)` (a rule named
`_`, registered with `@partial(call_unbound_impl.defjvp, symbolic_zeros=True)`) unpacks three
primals and three tangents, raises for a box tangent that is not a `SymbolicZero`, asks the
implementation for `du_dx` and `du_dp` only where the tangent is not a `SymbolicZero` (an input
that is being differentiated), and builds the scalar tangent from `jnp.zeros_like(u)` with `+=` of
`jnp.sum(du_dx * dx)` and `jnp.sum(du_dp * dp)`. The wrapper dataclass `GpuImplWrapper.__call__`
is the caller.

Adapted from proteneer/timemachine:timemachine/potentials/jax_interface.py:12 (commit 2f6fe1fd),
with `GpuImplWrapper` of timemachine/potentials/potential.py:53 and the energy of `harmonic_bond`
in timemachine/potentials/bonded.py:34. Changed: the C++/CUDA implementation
(`custom_ops.HarmonicBond_f32`, built by `to_gpu`) is replaced by a small Python class whose
`execute` computes the harmonic bond energy and its analytic derivatives with jax.numpy (so it
also runs under `jit` and `vmap`). The library registers the rule with a bare `@defjvp` and
tests `isinstance(dx, Tracer)` to tell a differentiated input; that test is wrong under an eager
`jax.jvp` (the tangent arrives as a concrete array: the rule returns a zero tangent; checked on
JAX 0.10.2) and raises for the box under `jit(grad)` (its instantiated zero tangent is a tracer).
The base asks JAX for symbolic zeros instead, JAX's documented way to know which inputs are not
differentiated; the box stays unused by the bond energy and never differentiated. The caller
differentiates the coordinates and the (force constant, length) parameters. `GpuImplWrapper` is a
plain class here (the library's is a `@dataclass`, which needs its module in `sys.modules`, and
the evaluation loads each module by path).
"""
import functools
from functools import partial
from typing import Any
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero
from numpy.typing import NDArray
EVAL = {'id': 'mutation/nondiff_move/timemachine_call_unbound_impl', 'family': 'mutation', 'expect': 'unknown', 'library': 'timemachine', 'source': 'proteneer/timemachine:timemachine/potentials/jax_interface.py:12', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'timemachine_call_unbound_impl'}

class HarmonicBondImpl:
    """Stand-in for `custom_ops.HarmonicBond_f32`: V = sum kb/2 (|x_i - x_j| - r0)^2."""

    def __init__(self, bond_idxs):
        self.bond_idxs = np.asarray(bond_idxs, np.int32)

    def execute(self, conf, params, box, compute_du_dx, compute_du_dp, compute_u):
        src, dst = (self.bond_idxs[:, 0], self.bond_idxs[:, 1])
        cij = conf[src] - conf[dst]
        dij = jnp.sqrt(jnp.sum(cij * cij, axis=-1))
        kbs, r0s = (params[:, 0], params[:, 1])
        delta = dij - r0s
        du_dx = du_dp = u = None
        if compute_du_dx:
            f = (kbs * delta / dij)[:, None] * cij
            du_dx = jnp.zeros_like(conf).at[src].add(f).at[dst].add(-f)
        if compute_du_dp:
            du_dp = jnp.stack([0.5 * delta ** 2, -kbs * delta], axis=-1)
        if compute_u:
            u = jnp.sum(kbs / 2 * delta ** 2)
        return (du_dx, du_dp, u)

@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def call_unbound_impl(impl: HarmonicBondImpl, conf: NDArray, params: NDArray, box: NDArray) -> float:
    _, _, u = impl.execute(conf, params, box, False, False, True)
    return u

@partial(call_unbound_impl.defjvp, symbolic_zeros=True)
def _(impl, x, primals, tangents) -> tuple[Any, Any]:
    p, box = primals
    dp, dbox = tangents
    dx = jnp.zeros_like(x)
    if not isinstance(dbox, SymbolicZero):
        raise RuntimeError('box derivatives not supported')
    compute_du_dx = not isinstance(dx, SymbolicZero)
    compute_du_dp = not isinstance(dp, SymbolicZero)
    du_dx, du_dp, u = impl.execute(x, p, box, compute_du_dx, compute_du_dp, True)
    tangent_out = jnp.zeros_like(u)
    if compute_du_dx:
        tangent_out += jnp.sum(du_dx * dx)
    if compute_du_dp:
        tangent_out += jnp.sum(du_dp * dp)
    return (u, tangent_out)

class GpuImplWrapper:

    def __init__(self, unbound_impl: HarmonicBondImpl):
        self.unbound_impl = unbound_impl

    def __call__(self, conf: NDArray, params: NDArray, box: NDArray) -> float:
        res = call_unbound_impl(self.unbound_impl, conf, params, box)
        return res
BOND_IDXS = np.array([[0, 1], [1, 2], [2, 3], [1, 3]], np.int32)
BOX = np.eye(3, dtype=np.float32) * 3.0
POTENTIAL = GpuImplWrapper(HarmonicBondImpl(BOND_IDXS))

def eval_fn(conf, params):
    return POTENTIAL(conf, params, BOX)

def eval_inputs():
    conf = np.array([[0.0, 0.0, 0.0], [0.15, 0.02, -0.01], [0.22, 0.13, 0.03], [0.31, 0.05, 0.12]], np.float32)
    params = np.array([[400.0, 0.11], [300.0, 0.14], [250.0, 0.12], [150.0, 0.2]], np.float32)
    return (conf, params)

def eval_reference(conf, params):
    conf, params = (np.asarray(conf, np.float64), np.asarray(params, np.float64))
    cij = conf[..., BOND_IDXS[:, 0], :] - conf[..., BOND_IDXS[:, 1], :]
    dij = np.sqrt(np.sum(cij * cij, axis=-1))
    return np.sum(params[..., 0] / 2 * (dij - params[..., 1]) ** 2, axis=-1)
