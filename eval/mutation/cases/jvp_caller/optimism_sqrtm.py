"""optimism: the matrix square root `sqrtm`, a decorated `@jax.custom_jvp` whose primal runs the
product form of the Denman-Beavers iteration in a `lax.while_loop`, and whose rule, registered
with `@sqrtm.defjvp`, solves the Sylvester equation `sqrtA X + X sqrtA = H` for the tangent
through a Kronecker-product linear system (`A, = primals`, `H, = tangents`); the rule calls the
custom function itself for the primal output.

Adapted from sandialabs/optimism:optimism/LinAlg.py:7 (commit 44438c1): the function, its rule
and `sqrtm_dbp` as the library spells them (the library runs in float64; the iteration's
tolerance is float64's, so in float32 it stops at its 32-iteration cap); the caller is a
right stretch tensor `U = sqrtm(F^T F)` of a deformation gradient, read out through a weighted
sum of its entries, as optimism's kinematics do.
"""
import jax
import jax.numpy as np
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/jvp_caller/optimism_sqrtm', 'family': 'mutation', 'expect': 'unknown', 'library': 'optimism', 'source': 'sandialabs/optimism:optimism/LinAlg.py:7', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_caller', 'base': 'optimism_sqrtm'}

@jax.custom_jvp
def sqrtm(A):
    sqrtA, _ = sqrtm_dbp(A)
    return sqrtA

@sqrtm.defjvp
def jvp_sqrtm(primals, tangents):
    A, = primals
    H, = tangents
    sqrtA = sqrtm(A)
    dim = A.shape[0]
    I = np.identity(dim)
    M = np.kron(sqrtA.T, I) + np.kron(I, sqrtA)
    Hvec = H.T.ravel()
    return (sqrtA, np.linalg.solve(M, Hvec).reshape((dim, dim)).T)

def sqrtm_dbp(A):
    """Matrix square root by product form of Denman-Beavers iteration (Higham, 2008)."""
    dim = A.shape[0]
    tol = 0.5 * np.sqrt(dim) * np.finfo(np.dtype('float64')).eps
    maxIters = 32
    scaleTol = 0.01

    def scaling(M):
        d = np.abs(np.linalg.det(M)) ** (1.0 / (2.0 * dim))
        g = 1.0 / d
        return g

    def cond_f(loopData):
        _, _, error, k, _ = loopData
        p = np.array([k < maxIters, error > tol], dtype=bool)
        return np.all(p)

    def body_f(loopData):
        X, M, error, k, diff = loopData
        g = np.where(diff >= scaleTol, scaling(M), 1.0)
        X *= g
        M *= g * g
        Y = X
        N = np.linalg.inv(M)
        I = np.identity(dim)
        X = 0.5 * X @ (I + N)
        M = 0.5 * (I + 0.5 * (M + N))
        error = np.linalg.norm(M - I, 'fro')
        diff = np.linalg.norm(X - Y, 'fro') / np.linalg.norm(X, 'fro')
        k += 1
        return (X, M, error, k, diff)
    X0 = A
    M0 = A
    error0 = np.finfo(np.dtype('float64')).max
    k0 = 0
    diff0 = 2.0 * scaleTol
    loopData0 = (X0, M0, error0, k0, diff0)
    X, _, _, k, _ = jax.lax.while_loop(cond_f, body_f, loopData0)
    return (X, k)
_W = onp.array([[1.0, 0.5, -0.25], [0.3, -1.0, 0.2], [0.1, 0.4, 0.8]])

def eval_fn(F):
    C = F.T @ F
    U = sqrtm(C)
    return np.sum(U * _W.astype(onp.float32), axis=1)

def eval_inputs():
    return (onp.array([[1.1, 0.2, 0.0], [0.1, 0.9, 0.15], [-0.05, 0.1, 1.2]], onp.float32),)

def eval_reference(F):
    F64 = onp.asarray(F, onp.float64)
    w, V = onp.linalg.eigh(F64.T @ F64)
    U = V * onp.sqrt(w) @ V.T
    return onp.sum(U * _W, axis=1)

def jvp_usage(*args):
    argnums = (0,)

    def along(*diff):
        full = list(args)
        for p, v in zip(argnums, diff):
            full[p] = v
        return eval_fn(*full)
    diff = tuple((jnp.asarray(args[p]) for p in argnums))
    _, t = jax.jvp(along, diff, tuple((jnp.full_like(x, 0.5) for x in diff)))
    return jnp.sum(t)

def jvp_usage_expected(*args):
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0,))(*args)
    return 0.5 * sum((jnp.sum(x) for x in g))

def eval_custom():
    args = tuple(eval_inputs())
    return {'jvp_usage': lambda: (jvp_usage(*args), jvp_usage_expected(*args))}
