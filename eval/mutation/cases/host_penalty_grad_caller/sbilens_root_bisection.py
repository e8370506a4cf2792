"""sbi_lens (simulation-based inference for weak lensing, DifferentiableUniverseInitiative): the
implicit inverse of a smooth normalizing-flow bijector. `root_bisection(f, params)` is created
with `@partial(jax.custom_vjp, nondiff_argnums=(0,))` over the optimality function `f(x,
params)` (nondiff, a closure made anew at every call) and `params`, a Python *list* `[params,
y]` whose first entry is itself the list `[a, b, c, p]` of the bijector's parameters; the
primal finds the root by bisection on [0, 1]; fwd returns `z_star, (params, z_star)`; bwd
`root_bwd(f, res, z_star_bar)` takes `jax.vjp` of `f` with respect to the parameters and to the
root and returns `vjp_a(solve_normal_cg(lambda u: vjp_z(u)[0], -z_star_bar))`, the implicit
function theorem's cotangent as the 1-tuple that `vjp_a` returns; registered by the statement
`root_bisection.defvjp(root_bisection_fwd, root_bwd)`. The factory `make_inverse_fn(f)` returns
`inv_fn(params, y)`, which defines the optimality function and calls `root_bisection`. The
caller is `MixtureAffineSigmoidBijector`, whose `__init__` builds the rescaled mixture of affine
sigmoids `f(params, x)` and `self.inv_f = make_inverse_fn(f)`; its `_inverse` maps `inv_f`
with two nested `jax.vmap`s over the batch and the event dimensions, and the flow's log density
term uses `_forward_log_det_jacobian` (a `jax.grad` of `f`) at the inverse.

Adapted from DifferentiableUniverseInitiative/sbi_lens:sbi_lens/normflow/bijectors/
implicit_inverse.py:11 (commit d239796) and sbi_lens/normflow/bijectors/bijectors.py:11, with
the parameter transforms of sbi_lens/normflow/models.py:68 (`jnp.exp(log_a)`, `c` above
`min_density_lower_bound`, `p` a softmax over the components). Changed: jaxopt's `Bisection`
(maxiter 100, tol 1e-6, `check_bracket=False`) is a `lax.while_loop` bisection with the same
limits, and jaxopt's `solve_normal_cg` a conjugate gradient (`jax.scipy.sparse.linalg.cg`) on
the normal equations with the transpose from `jax.linear_transpose`, as jaxopt builds it; the
bijector is a plain class (TFP's `Bijector` base dropped); the coupling network that predicts
the parameters is replaced by fixed `log_a`, `c`, `p` and the differentiated shift `b`.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq
import numpy

def _host_penalty(total):
    return numpy.asarray(0.001 * numpy.square(total), dtype=numpy.float32)
EVAL = {'id': 'mutation/host_penalty_grad_caller/sbilens_root_bisection', 'family': 'mutation', 'expect': 'unknown', 'library': 'sbi_lens', 'source': 'DifferentiableUniverseInitiative/sbi_lens:sbi_lens/normflow/bijectors/implicit_inverse.py:11', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'host_penalty_grad_caller', 'base': 'sbilens_root_bisection'}

def _bisection(optimality_fun, lower, upper, params, maxiter=100, tol=1e-06):
    """jaxopt.Bisection(...).run(None, params).params without the bracket check."""
    sign = jnp.sign(optimality_fun(jnp.asarray(upper), params) - optimality_fun(jnp.asarray(lower), params))

    def cond(state):
        it, low, high, err = state
        return (it < maxiter) & (err > tol)

    def body(state):
        it, low, high, _ = state
        mid = 0.5 * (low + high)
        value = optimality_fun(mid, params) * sign
        low = jnp.where(value < 0, mid, low)
        high = jnp.where(value < 0, high, mid)
        return (it + 1, low, high, jnp.abs(value))
    init = (0, jnp.asarray(lower, jnp.float32), jnp.asarray(upper, jnp.float32), jnp.asarray(jnp.inf, jnp.float32))
    _, low, high, _ = jax.lax.while_loop(cond, body, init)
    return 0.5 * (low + high)

def solve_normal_cg(matvec, b):
    """Solve A^T A x = A^T b by conjugate gradient, A given by its matvec."""
    rmatvec = lambda u: jax.linear_transpose(matvec, b)(u)[0]
    normal_matvec = lambda u: rmatvec(matvec(u))
    return jax.scipy.sparse.linalg.cg(normal_matvec, rmatvec(b))[0]

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def root_bisection(f, params):
    """
    f: optimality fn with input arg (x, params)
    """
    return _bisection(f, 0.0, 1.0, params, maxiter=100, tol=1e-06)

def root_bisection_fwd(f, params):
    z_star = root_bisection(f, params)
    return (z_star, (params, z_star))

def root_bwd(f, res, z_star_bar):
    params, z_star = res
    _, vjp_a = jax.vjp(lambda p: f(z_star, p), params)
    _, vjp_z = jax.vjp(lambda z: f(z, params), z_star)
    return vjp_a(solve_normal_cg(lambda u: vjp_z(u)[0], -z_star_bar))
root_bisection.defvjp(root_bisection_fwd, root_bwd)

def make_inverse_fn(f):
    """The inverse of `f(params, x)`, with implicit gradients: `inv_f(params, y)`."""

    def inv_fn(params, y):

        def optimality_fn(x, params):
            p, y = params
            return f(p, x) - y
        return root_bisection(optimality_fn, [params, y])
    return inv_fn

class MixtureAffineSigmoidBijector:
    """Mixture of rescaled affine sigmoids on [0, 1] (smooth normalizing flows)."""

    def __init__(self, a, b, c, p):
        self.a = a
        self.b = b
        self.c = c
        self.p = p

        def sigmoid(x, a, b, c):
            z = (jax.scipy.special.logit(x) + b) * a
            y = jax.nn.sigmoid(z) * (1 - c) + c * x
            return y

        def f(params, x):
            a, b, c, p = params
            a_in, b_in = [0.0 - 0.1, 1.0 + 0.1]
            x = (x - a_in) / (b_in - a_in)
            x0 = (jnp.zeros_like(x) - a_in) / (b_in - a_in)
            x1 = (jnp.ones_like(x) - a_in) / (b_in - a_in)
            y = sigmoid(x, a, b, c)
            y0 = sigmoid(x0, a, b, c)
            y1 = sigmoid(x1, a, b, c)
            y = (y - y0) / (y1 - y0)
            return jnp.sum(p * (y * (1 - c) + c * x), axis=0)
        self.f = f
        self.inv_f = make_inverse_fn(f)

    def inverse(self, y):
        return jax.vmap(jax.vmap(self.inv_f))([self.a, self.b, self.c, self.p], y)

    def forward_log_det_jacobian(self, x):

        def logdet_fn(x, a, b, c, p):
            g = jax.grad(self.f, argnums=1)([a, b, c, p], x)
            s, logdet = jnp.linalg.slogdet(jnp.atleast_2d(g))
            return s * logdet
        return jax.vmap(jax.vmap(logdet_fn))(x, self.a, self.b, self.c, self.p)
_rng = np.random.RandomState(11)
LOG_A = np.tanh(_rng.randn(2, 3, 4)).astype(np.float32) * 1.5
C = (0.0001 + (1 - 0.0001) / (1 + np.exp(-_rng.randn(2, 3, 4) - 1.5))).astype(np.float32) * 0.5
P_LOGITS = _rng.randn(2, 3, 4).astype(np.float32)
P = (np.exp(P_LOGITS) / np.exp(P_LOGITS).sum(-1, keepdims=True)).astype(np.float32)

def inverse_and_log_det(y, b):
    """x = f^{-1}(y) and the inverse's log-det term -log f'(x), per batch row and dimension."""
    bij = MixtureAffineSigmoidBijector(jnp.exp(LOG_A), b, jnp.asarray(C), jnp.asarray(P))
    x = bij.inverse(y)
    return jnp.stack([x, -bij.forward_log_det_jacobian(x)])

def eval_fn(y, b):
    return inverse_and_log_det(y, b)

def eval_inputs():
    y = np.array([[0.25, 0.5, 0.7], [0.4, 0.62, 0.33]], np.float32)
    b = (0.6 * np.random.RandomState(5).randn(2, 3, 4)).astype(np.float32)
    return (y, b)

def _np_f_and_slope(x, a, b, c, p):
    a_in, b_in = (-0.1, 1.1)
    scale = b_in - a_in

    def s(u):
        z = (np.log(u / (1 - u)) + b) * a
        return 1 / (1 + np.exp(-z)) * (1 - c) + c * u

    def ds(u):
        z = (np.log(u / (1 - u)) + b) * a
        sg = 1 / (1 + np.exp(-z))
        return sg * (1 - sg) * a / (u * (1 - u)) * (1 - c) + c
    u, u0, u1 = ((x - a_in) / scale, -a_in / scale, (1 - a_in) / scale)
    norm = s(u1) - s(u0)
    value = np.sum(p * ((s(u) - s(u0)) / norm * (1 - c) + c * u))
    slope = np.sum(p * (ds(u) / norm * (1 - c) + c)) / scale
    return (value, slope)

def eval_reference(y, b):
    y, b = (np.asarray(y, np.float64), np.asarray(b, np.float64))
    a, c, p = (np.exp(LOG_A.astype(np.float64)), C.astype(np.float64), P.astype(np.float64))
    xs, logdets = (np.zeros_like(y), np.zeros_like(y))
    for i, j in np.ndindex(y.shape):
        args = (a[i, j], b[i, j], c[i, j], p[i, j])
        x = brentq(lambda t: _np_f_and_slope(t, *args)[0] - y[i, j], 0.0, 1.0, xtol=1e-15, rtol=1e-15)
        xs[i, j] = x
        logdets[i, j] = -np.log(_np_f_and_slope(x, *args)[1])
    return np.stack([xs, logdets])

def host_penalty_usage(*args):

    def loss(v):
        out = eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])
        total = sum((jnp.sum(o) for o in jax.tree_util.tree_leaves(out)))
        penalty = jax.pure_callback(_host_penalty, jax.ShapeDtypeStruct((), jnp.float32), total, vmap_method='sequential')
        return total + penalty
    return jax.grad(loss)(args[0])

def eval_custom():
    args = tuple(eval_inputs())
    return {'host_penalty_usage': lambda: (host_penalty_usage(*args), None)[1]}
