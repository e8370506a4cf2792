"""fast-soft-sort (JAX ops): `_wrap_numpy_op(cls, **kwargs)`, a factory that builds a bare
`@jax.custom_vjp` over one array per call, whose fwd builds an operator object, computes it and
returns `result, tree_util.Partial(obj.vjp)` (the residual is the operator's own vjp, a callable
pytree), whose bwd calls that residual on the cotangent and returns a 1-tuple, and whose primal is
`_func_fwd(values)[0]`; registered with `_func.defvjp(_func_fwd, _func_bwd)` inside the factory,
which returns `_func`. `soft_sort` makes one per call and maps it over the rows with a Python loop.

Adapted from google-research/fast-soft-sort:fast_soft_sort/jax_ops.py:45 (commit 6a52ce7;
the operator from fast_soft_sort/numpy_ops.py:271, `SoftSort`, l2 regularisation). The library's
operators are NumPy objects (`np.array(values)`, a Cython PAV), which neither jit nor vmap can
trace; here `SoftSort` and its `Isotonic` are written in jax.numpy (the decreasing isotonic
regression by its min-max formula, the vjp as the block means of its partition, `argsort` for the
permutation) and registered as pytrees, so that `tree_util.Partial(type(obj).vjp, obj)` carries the
operator's arrays as leaves (the library's `Partial(obj.vjp)` closes over them); `np.array(g)`
becomes `jnp.asarray(g)`. The caller weights the soft-sorted rows (their plain sum is the sum of the
inputs, whose gradient is all ones).
"""
import functools
import jax
import jax.numpy as jnp
import numpy
from jax import tree_util
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/fastsoftsort_wrap_op', 'family': 'mutation', 'expect': 'unknown', 'library': 'fast-soft-sort', 'source': 'google-research/fast-soft-sort:fast_soft_sort/jax_ops.py:45', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'host_callback_primal', 'base': 'fastsoftsort_wrap_op'}

def isotonic_l2(input_s, input_w):
    """argmin_{v_1 >= ... >= v_n} 0.5 ||v - (s - w)||^2, as min_{j<=i} max_{k>=i} mean(y[j..k])."""
    y = input_s - input_w
    n = y.shape[0]
    c = jnp.concatenate([jnp.zeros((1,), y.dtype), jnp.cumsum(y)])
    j = jnp.arange(n)[:, None]
    k = jnp.arange(n)[None, :]
    avg = (c[k + 1] - c[j]) / jnp.maximum(k - j + 1, 1).astype(y.dtype)
    i = jnp.arange(n)[:, None, None]
    valid = (j[None] <= i) & (i <= k[None])
    inner = jnp.max(jnp.where(valid, avg[None], -jnp.inf), axis=2)
    return jnp.min(jnp.where(j[None, :, 0] <= i[:, :, 0], inner, jnp.inf), axis=1)

@tree_util.register_pytree_node_class
class Isotonic:

    def __init__(self, input_s, input_w, solution=None):
        self.input_s = input_s
        self.input_w = input_w
        self.solution_ = solution

    def tree_flatten(self):
        return ((self.input_s, self.input_w, self.solution_), None)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def compute(self):
        self.solution_ = isotonic_l2(self.input_s, self.input_w)
        return self.solution_

    def vjp(self, vector):
        sol = self.solution_
        same = jnp.abs(sol[:, None] - sol[None, :]) <= 1e-06 * (1.0 + jnp.abs(sol[:, None]))
        same = same.astype(vector.dtype)
        return same @ vector / jnp.sum(same, axis=1)

@tree_util.register_pytree_node_class
class SoftSort:

    def __init__(self, values, direction='ASCENDING', regularization_strength=1.0, regularization='l2'):
        if direction not in ('ASCENDING', 'DESCENDING'):
            raise ValueError("direction should be either 'ASCENDING' or 'DESCENDING'")
        if regularization != 'l2':
            raise ValueError("only 'l2' regularization here")
        self.values = values
        self.direction = direction
        self.sign = 1 if direction == 'DESCENDING' else -1
        self.regularization_strength = regularization_strength
        self.regularization = regularization
        self.permutation_ = None
        self.isotonic_ = None

    def tree_flatten(self):
        return ((self.values, self.permutation_, self.isotonic_), (self.direction, self.regularization_strength))

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = cls(children[0], aux[0], aux[1])
        obj.permutation_, obj.isotonic_ = (children[1], children[2])
        return obj

    def compute(self):
        size = self.values.shape[0]
        input_w = jnp.arange(size, dtype=self.values.dtype)[::-1] + 1 / self.regularization_strength
        values = self.sign * self.values
        self.permutation_ = jnp.argsort(values)[::-1]
        s = values[self.permutation_]
        self.isotonic_ = Isotonic(input_w, s)
        res = self.isotonic_.compute()
        return self.sign * (input_w - res)

    def vjp(self, vector):
        inv_permutation = jnp.argsort(self.permutation_)
        return self.isotonic_.vjp(vector)[inv_permutation]

def _wrap_numpy_op(cls, **kwargs):

    def _func_fwd(values):
        dtype = values.dtype
        obj = cls(values, **kwargs)
        result = obj.compute()
        return (jnp.asarray(result, dtype=dtype), tree_util.Partial(type(obj).vjp, obj))

    def _func_bwd(vjp, g):
        g = jnp.asarray(g)
        result = jnp.asarray(vjp(g), dtype=g.dtype)
        return (result,)

    @jax.custom_vjp
    def _func(values):
        _out = _func_fwd(values)[0]
        return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)
    _func.defvjp(_func_fwd, _func_bwd)
    return _func

def soft_sort(values, direction='ASCENDING', regularization_strength=1.0, regularization='l2'):
    if len(values.shape) != 2:
        raise ValueError("'values' should be a 2d-array but got %s." % str(values.shape))
    func = _wrap_numpy_op(SoftSort, regularization_strength=regularization_strength, direction=direction, regularization=regularization)
    return jnp.vstack([func(val) for val in values])
WEIGHTS = numpy.array([1.0, -0.5, 2.0, 0.3, 1.5], numpy.float32)

def eval_fn(values):
    return soft_sort(values, regularization_strength=1.0) * WEIGHTS

def eval_inputs():
    return (numpy.array([[0.3, 2.5, -1.0, 0.9, 1.2], [1.0, -0.5, 0.2, 2.2, -1.4]], numpy.float32),)

def _pav_decreasing(y):
    blocks = []
    for v in y:
        blocks.append([v, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    return numpy.concatenate([numpy.full(c, s / c) for s, c in blocks])

def eval_reference(values):
    values = numpy.asarray(values, numpy.float64)
    out = []
    for row in values.reshape(-1, values.shape[-1]):
        w = numpy.arange(row.shape[0])[::-1] + 1.0
        s = numpy.sort(-row)[::-1]
        out.append(-(w - _pav_decreasing(w - s)))
    return numpy.array(out).reshape(values.shape) * WEIGHTS
