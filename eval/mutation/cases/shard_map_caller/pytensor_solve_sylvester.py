"""PyTensor (JAX linker): the continuous Sylvester solver `AX + XB = C` as a `@jax.custom_vjp`
made inside a dispatch factory, `jax_funcify_SolveSylvester(op, **kwargs)`, registered on the
`SolveSylvester` op type with `@jax_funcify.register(SolveSylvester)` (a
`functools.singledispatch` function that turns each PyTensor op of a graph into a JAX callable).
The factory defines the custom function `solve_sylvester(a, b, c)` (the primal calls
`jax.scipy.linalg.solve_sylvester`), the forward rule `_fwd` (solves again and saves
`(a, b, x)`, the solution among the residuals) and the backward rule `_bwd(res, dx)`, which
solves the adjoint equation `A^H G + G B^H = dx` once and returns the three cotangents
`(-G X^H, -X^H G, G)`; it registers them with the statement `solve_sylvester.defvjp(_fwd, _bwd)`
and returns the custom function, which the linker then calls in the compiled graph.

Adapted from pymc-devs/pytensor:pytensor/link/jax/dispatch/linalg/solvers.py:86 (commit f857e69),
with the dispatcher of pytensor/link/jax/dispatch/basic.py:42 (`jax_funcify`) and the op of
pytensor/tensor/linalg/solvers/linear_control.py:117. Changed: PyTensor's `OpFromGraph` base
class and graph machinery are replaced by a small frozen dataclass op with the same
`gufunc_signature`; the graph that the linker would compile is written as a function that
fetches the JAX callable from the dispatcher and applies it (the Lyapunov-type use: a stable
state matrix `A`, an input matrix `B` and a right-hand side `C`, and a read-out of the solution).
"""
import functools
from functools import singledispatch
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/shard_map_caller/pytensor_solve_sylvester', 'family': 'mutation', 'expect': 'unknown', 'library': 'pytensor', 'source': 'pymc-devs/pytensor:pytensor/link/jax/dispatch/linalg/solvers.py:86', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'shard_map_caller', 'base': 'pytensor_solve_sylvester'}

class SolveSylvester:
    """Wrapper Op for solving the continuous Sylvester equation AX + XB = C for X."""
    gufunc_signature = '(m,m),(n,n),(m,n)->(m,n)'

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

@singledispatch
def jax_funcify(op, node=None, storage_map=None, **kwargs):
    """Create a JAX compatible function from an Op."""
    raise NotImplementedError(f'No JAX conversion for the given `Op`: {op}')

@jax_funcify.register(SolveSylvester)
def jax_funcify_SolveSylvester(op, **kwargs):

    @jax.custom_vjp
    def solve_sylvester(a, b, c):
        return jax.scipy.linalg.solve_sylvester(a, b, c)

    def _fwd(a, b, c):
        x = jax.scipy.linalg.solve_sylvester(a, b, c)
        return (x, (a, b, x))

    def _bwd(res, dx):
        a, b, x = res
        dc = jax.scipy.linalg.solve_sylvester(a.conj().T, b.conj().T, dx)
        da = -dc @ x.conj().T
        db = -x.conj().T @ dc
        return (da, db, dc)
    solve_sylvester.defvjp(_fwd, _bwd)
    return solve_sylvester
READOUT = np.array([[1.0, -0.5], [0.25, 2.0], [-1.5, 0.75]], np.float32)

def eval_fn(a, b, c):
    solve = jax_funcify(SolveSylvester(), node=None)
    x = solve(a, b, c)
    return jnp.sum(x * READOUT, axis=0) + jnp.trace(x[:2, :2] @ x[:2, :2].T)

def eval_inputs():
    a = np.array([[3.0, 0.5, 0.2], [0.1, 2.5, -0.3], [0.4, 0.2, 4.0]], np.float32)
    b = np.array([[1.5, 0.3], [-0.2, 2.0]], np.float32)
    c = np.array([[1.0, 2.0], [0.5, -1.0], [0.3, 0.7]], np.float32)
    return (a, b, c)

def eval_reference(a, b, c):
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    m, n = c.shape
    op = np.kron(np.eye(n), a) + np.kron(b.T, np.eye(m))
    x = np.linalg.solve(op, c.reshape(-1, order='F')).reshape((m, n), order='F')
    return np.sum(x * READOUT.astype(np.float64), axis=0) + np.trace(x[:2, :2] @ x[:2, :2].T)

def shard_map_usage(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    mesh = jax.make_mesh((1,), ('data',))
    spec = jax.sharding.PartitionSpec()
    return jax.shard_map(g, mesh=mesh, in_specs=spec, out_specs=spec)(x)

def shard_map_usage_expected(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    return g(x)

def eval_custom():
    args = tuple(eval_inputs())
    return {'shard_map_usage': lambda: (shard_map_usage(*args), shard_map_usage_expected(*args))}
