"""matfree: the least-squares solver `lsmr(...)` returns `run(vecmat, b, *vecmat_args, x0=None,
damp=0.0)`, which closure-converts the user's vector-matrix product (`jax.closure_convert(
vecmat_noargs, b)`, so that the parameters it closes over become explicit arguments) and calls
`_run(vecmat, b, vecmat_args, x0, damp)`, made a custom_vjp in call form under its own name,
`_run = jax.custom_vjp(_run, nondiff_argnums=(0,))` (the converted callable is the nondiff
argument; the parameters arrive as a tuple pytree). `_run` returns a pair `(x, stats)` whose stats
are a dict holding integer and boolean entries; fwd saves its residuals in a dict (`cache`) with
the initial guess and the damping; bwd unpacks the output cotangent pair (`dmu_dx, _ = dmu_dx`),
chooses the tall or wide formula with a Python `if` on static sizes, calls the custom function
itself for the adjoint solves, differentiates the parameters with a nested `@jax.grad` function of
the parameter tuple, and returns four cotangents, `None` for the initial guess.

Adapted from pnkraemer/matfree:matfree/lstsq.py:482 (commit 7e623cc: `_lstsq_custom_vjp`, the
custom_vjp at :610; `lsmr` and its `run` at :15): the factory `_lstsq_custom_vjp(_run)` is written
inline in `lsmr` (its `custom_vjp=True` branch), the LSMR iteration is replaced by a direct solve of
the damped normal equations of the materialised matrix (the matrix built column by column from the
transposed product, as matfree's `linear_transpose`, and the damped problem solved as an
augmented least-squares problem by `jnp.linalg.lstsq`, minimum-norm as LSMR), the pytree raveling of `run` is left out (flat
arrays), and so is the rank-deficiency correction (full-rank matrices: matfree skips it then, its
`is_full_rank=True`). The caller fits three coefficients to five observations, `vecmat(u, W) =
u @ W`, differentiating with respect to the design matrix and the observations.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/fwd_pair_as_dict/matfree_lsmr_custom_vjp', 'family': 'mutation', 'expect': 'unknown', 'library': 'matfree', 'source': 'pnkraemer/matfree:matfree/lstsq.py:482', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'fwd_pair_as_dict', 'base': 'matfree_lsmr_custom_vjp'}

def lsmr():
    """A least-squares solver minimising ||A v - b||^2 + damp^2 ||v||^2 with exact gradients."""

    def run(vecmat, b, *vecmat_args, x0=None, damp=0.0):
        x_like = jax.eval_shape(vecmat, b, *vecmat_args)
        ncols, = x_like.shape
        x0 = x0 if x0 is not None else jnp.zeros(ncols, dtype=b.dtype)

        def vecmat_noargs(u):
            return vecmat(u, *vecmat_args)
        vecmat_closure, args = jax.closure_convert(vecmat_noargs, b)
        return _run(vecmat_closure, b, args, x0, damp)

    def _run(vecmat, b, vecmat_args, x0, damp):

        def vecmat_noargs(v):
            return vecmat(v, *vecmat_args)

        def matvec_noargs(w):
            matvec = jax.linear_transpose(vecmat_noargs, b)
            Aw, = matvec(w)
            return Aw
        eye = jnp.eye(x0.shape[0], dtype=b.dtype)
        A = jax.vmap(matvec_noargs, out_axes=1)(eye)
        A_damped = jnp.concatenate([A, damp * eye])
        b_damped = jnp.concatenate([b, jnp.zeros_like(x0)])
        x, *_ = jnp.linalg.lstsq(A_damped, b_damped)
        normr = jnp.linalg.norm(A @ x - b)
        istop = jnp.where(jnp.isfinite(normr), 1, 7)
        stats = {'iteration_count': jnp.asarray(1), 'norm_residual': normr, 'norm_x': jnp.linalg.norm(x), 'istop': istop, 'success': (istop >= 0) & (istop != 7)}
        return (x, stats)

    def lstsq_fwd(vecmat, rhs, vecmat_args, x0, damp):
        x, stats = _run(vecmat, rhs, vecmat_args, x0, damp)
        cache = {'x': x, 'rhs': rhs, 'vecmat_args': vecmat_args, 'x0': x0, 'damp': damp}
        return {'out': (x, stats), 'res': cache}

    def lstsq_rev(vecmat, cache, dmu_dx):
        dmu_dx, _ = dmu_dx
        x_like = jax.eval_shape(vecmat, cache['rhs'], *cache['vecmat_args'])
        if cache['rhs'].size <= x_like.size:
            return lstsq_rev_wide(vecmat, cache, dmu_dx)
        return lstsq_rev_tall(vecmat, cache, dmu_dx)

    def lstsq_rev_tall(vecmat, cache, dmu_dx):
        x = cache['x']
        rhs = cache['rhs']
        x0 = cache['x0']
        damp = cache['damp']
        vecmat_args = cache['vecmat_args']

        def vecmat_noargs(v):
            return vecmat(v, *vecmat_args)

        def matvec_noargs(w):
            matvec = jax.linear_transpose(vecmat_noargs, rhs)
            Aw, = matvec(w)
            return Aw
        x0_rev = jnp.zeros_like(rhs)
        dmu_db, _ = _run(matvec_noargs, dmu_dx, (), x0_rev, damp)
        xi, _ = _run(vecmat_noargs, -dmu_db, (), x0, 0.0)
        Ax_minus_b = matvec_noargs(x) - rhs

        @jax.grad
        def grad_theta(theta):
            rA = vecmat(Ax_minus_b, *theta)
            pAA = vecmat(dmu_db, *theta)
            return jnp.inner(rA, xi) - jnp.inner(pAA, x)
        dmu_dparams = grad_theta(vecmat_args)
        dmu_dx0 = None
        dmu_ddamp = 2 * damp * xi.T @ x
        return (dmu_db, dmu_dparams, dmu_dx0, dmu_ddamp)

    def lstsq_rev_wide(vecmat, cache, dmu_dx):
        x = cache['x']
        rhs = cache['rhs']
        damp = cache['damp']
        vecmat_args = cache['vecmat_args']

        def vecmat_noargs(v):
            return vecmat(v, *vecmat_args)

        def matvec_noargs(w):
            matvec = jax.linear_transpose(vecmat_noargs, rhs)
            Aw, = matvec(w)
            return Aw
        x0_rev = jnp.zeros_like(rhs)
        dmu_db, _ = _run(matvec_noargs, dmu_dx, (), x0_rev, damp)
        y, _ = _run(matvec_noargs, x, (), x0_rev, 0.0)
        r = -(vecmat_noargs(dmu_db) - dmu_dx)

        @jax.grad
        def grad_theta(theta):
            yA = vecmat(y, *theta)
            qA = vecmat(dmu_db, *theta)
            return jnp.inner(yA, r) - jnp.inner(qA, x)
        dmu_dargs = grad_theta(vecmat_args)
        dmu_dx0 = None
        dmu_ddamp = -2 * damp * dmu_db.T @ y
        return (dmu_db, dmu_dargs, dmu_dx0, dmu_ddamp)
    _run = jax.custom_vjp(_run, nondiff_argnums=(0,))
    _run.defvjp(lstsq_fwd, lstsq_rev)
    return run
lstsq = lsmr()

def _vecmat(u, W):
    return u @ W

def eval_fn(W, b):
    x, stats = lstsq(_vecmat, b, W)
    return x * jnp.array([1.0, -0.5, 2.0], jnp.float32)

def eval_inputs():
    W = np.array([[1.0, 0.2, -0.3], [0.4, 1.5, 0.1], [-0.2, 0.3, 0.9], [0.7, -0.6, 0.5], [0.1, 0.8, -1.1]], np.float32)
    b = np.array([0.5, -1.0, 0.8, 0.3, -0.4], np.float32)
    return (W, b)

def eval_reference(W, b):
    x, *_ = np.linalg.lstsq(np.asarray(W, np.float64), np.asarray(b, np.float64), rcond=None)
    return x * np.array([1.0, -0.5, 2.0])
