"""vbjax: `make_spmv`, a factory that returns a sparse matrix-vector product as a `@jax.custom_vjp`
made per call, closing over the matrix `A`, its transpose and an `is_symmetric` flag; every
definition is a one-line `def`, fwd saves no residual (`matvec(x), None`), and bwd returns the
transposed product as a 1-tuple written with a trailing comma inside a conditional expression
(`return matvec(g) if is_symmetric else matvec_tr(g),`).

Adapted from ins-amu/vbjax:vbjax/sparse.py:30 (commit e6d0d63): the library multiplies on the host
(`vb.to_jax(A @ vb.to_np(x))` with a scipy CSR matrix, so the product runs eagerly only); here `A`
is a dense jax array and the products are `A @ x`, so that jit and vmap run too. The caller is a
use the library makes of it: one Euler step of a network of neural masses coupled through the
connectivity matrix, `x + dt * (-x + k * A @ tanh(x))`.
"""
import functools
import jax
import jax.numpy as np
import numpy
import jax.numpy as jnp
EVAL = {'id': 'mutation/linearize_caller/vbjax_spmv', 'family': 'mutation', 'expect': 'unknown', 'library': 'vbjax', 'source': 'ins-amu/vbjax:vbjax/sparse.py:30', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'linearize_caller', 'base': 'vbjax_spmv'}

def make_spmv(A, is_symmetric=False, use_scipy=False):
    """Make a closure for a general sparse matrix-vector multiplication (gradients through A.T)."""
    AT = A.T.copy()

    @jax.custom_vjp
    def matvec(x):
        return A @ x

    def matvec_tr(x):
        return AT @ x

    def matvec_fwd(x):
        return (matvec(x), None)

    def matvec_bwd(res, g):
        return (matvec(g) if is_symmetric else matvec_tr(g),)
    matvec.defvjp(matvec_fwd, matvec_bwd)
    return matvec
_W = numpy.array([[0.0, 0.5, 0.0, 0.2, 0.0], [0.1, 0.0, 0.7, 0.0, 0.0], [0.0, 0.3, 0.0, 0.0, 0.4], [0.6, 0.0, 0.0, 0.0, 0.1], [0.0, 0.0, 0.2, 0.9, 0.0]], numpy.float32)
spmv = make_spmv(np.asarray(_W))

def eval_fn(x):
    dt, k = (0.1, 0.8)
    return x + dt * (-x + k * spmv(np.tanh(x)))

def eval_inputs():
    return (numpy.array([0.3, -0.5, 0.8, 0.1, -0.2], numpy.float32),)

def eval_reference(x):
    x64 = numpy.asarray(x, numpy.float64)
    return x64 + 0.1 * (-x64 + 0.8 * _W.astype(numpy.float64) @ numpy.tanh(x64))

def linearize_usage(*args):
    argnums = (0,)

    def along(*diff):
        full = list(args)
        for p, v in zip(argnums, diff):
            full[p] = v
        return jnp.sum(eval_fn(*full))
    diff = tuple((jnp.asarray(args[p], jnp.float32) for p in argnums))
    _, f_jvp = jax.linearize(along, *diff)
    return f_jvp(*[jnp.ones_like(x) for x in diff])

def eval_custom():
    args = tuple(eval_inputs())
    return {'linearize_usage': lambda: (linearize_usage(*args), None)[1]}
