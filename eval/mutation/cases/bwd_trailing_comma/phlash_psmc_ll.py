"""phlash (population size history from sequence data, jthlab): the log-likelihood of the PSMC
hidden Markov model computed by a host kernel, `_psmc_ll(log_params, index, kern)`, as
`@partial(custom_vjp, nondiff_argnums=(2,))` over a `NamedTuple` of log-parameters
(`PSMCParams`: seven length-M fields), an integer row index into the kernel's data and the kernel
object itself (nondiff, passed by keyword at the call: `_psmc_ll(log_params, index=index,
kern=self)`). Both the primal and fwd go through one helper that exponentiates the parameters
and calls the kernel through `jax.pure_callback` with `grad=False` (a scalar) or `grad=True` (the
pair `(loglik, dloglik)`, the gradient a `PSMCParams` with respect to the log-parameters); fwd
returns that pair as it comes, so the residual is the gradient `NamedTuple`; bwd
`_psmc_ll_bwd(kern, df, g)` scales it with `jax.tree.map(lambda a: g * a, df)` and returns
`None` for the integer index.

Adapted from jthlab/phlash:src/phlash/gpu.py:441 (commit 96a6e3f), with `PSMCKernel.loglik`
(:360, the log of the parameters and the keyword call), `PSMCParams` of src/phlash/params.py:16
and the transition structure of `matvec_smc` in src/phlash/hmm.py:52. Changed: the CUDA kernel
(a forward algorithm and its gradient, spread over GPUs in threads) is replaced by a NumPy
forward-backward pass on the host with the same structured transition matrix (b below the
diagonal, d on it, u_k * v_i above it) and the same scaling, returning the gradient with respect
to the log-parameters as the CUDA kernel's `dlog` does; `vectorized=True` (deprecated) becomes
`vmap_method="sequential"`; the `singledispatchmethod` overload for demographic models is
dropped. M = 4 intervals instead of 16, two short observed sequences (0/1 with a missing 2).
"""
import functools
from functools import partial
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp
EVAL = {'id': 'mutation/bwd_trailing_comma/phlash_psmc_ll', 'family': 'mutation', 'expect': 'unknown', 'library': 'phlash', 'source': 'jthlab/phlash:src/phlash/gpu.py:441', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_trailing_comma', 'base': 'phlash_psmc_ll'}

class PSMCParams(NamedTuple):
    b: jax.Array
    d: jax.Array
    u: jax.Array
    v: jax.Array
    emis0: jax.Array
    emis1: jax.Array
    pi: jax.Array

    @property
    def M(self) -> int:
        """The number of discretization intervals"""
        M = self.d.shape[-1]
        assert all((a.shape[-1] == M for a in self))
        return M

def _transition(p):
    """Dense SMC' transition matrix: A[k, i] = b_i (k > i), d_i (k = i), u_k v_i (k < i)."""
    M = p.d.shape[-1]
    k, i = np.indices((M, M))
    return np.where(k > i, p.b[None, :], np.where(k == i, np.diag(p.d), p.u[:, None] * p.v[None, :]))

def _forward_backward(p, obs, grad):
    """Scaled forward algorithm (the kernel's loglik) and, when asked, its gradient in p."""
    A = _transition(p)
    emis = np.stack([p.emis0, p.emis1, np.ones_like(p.emis0)])
    alphas, cs = ([p.pi], [])
    for ob in obs:
        a = alphas[-1] @ A * emis[ob]
        c = a.sum()
        alphas.append(a / c)
        cs.append(c)
    ll = np.sum(np.log(cs))
    if not grad:
        return (ll, None)
    M = A.shape[0]
    dA, de = (np.zeros_like(A), np.zeros_like(emis))
    beta = np.ones(M)
    for t in range(len(obs) - 1, -1, -1):
        eb = emis[obs[t]] * beta / cs[t]
        dA += np.outer(alphas[t], eb)
        de[obs[t]] += alphas[t] @ A * beta / cs[t]
        beta = A @ eb
    k, i = np.indices((M, M))
    dp = PSMCParams(b=np.where(k > i, dA, 0.0).sum(0), d=np.diag(dA).copy(), u=(np.where(k < i, dA, 0.0) * p.v[None, :]).sum(1), v=(np.where(k < i, dA, 0.0) * p.u[:, None]).sum(0), emis0=de[0], emis1=de[1], pi=beta)
    return (ll, dp)

class PSMCKernel:
    """Evaluate the PSMC log-likelihood of each row of `data` on the host."""

    def __init__(self, M, data, double_precision=False):
        self.data = np.asarray(data, np.int8)
        self.double_precision = double_precision
        self.M = M

    @property
    def float_type(self):
        if self.double_precision:
            return np.float64
        return np.float32

    def __call__(self, pp: PSMCParams, index, grad: bool):
        pp = PSMCParams(*(np.asarray(a, np.float64) for a in pp))
        ll, dp = _forward_backward(pp, self.data[int(index)], grad)
        ll = np.asarray(ll, self.float_type)
        if not grad:
            return ll
        dlog = PSMCParams(*(np.asarray(g * a, self.float_type) for g, a in zip(dp, pp)))
        return (ll, dlog)

    def loglik(self, pp: PSMCParams, index: int):
        log_params = jax.tree.map(jnp.log, pp)
        return _psmc_ll(log_params, index=index, kern=self)

@partial(custom_vjp, nondiff_argnums=(2,))
def _psmc_ll(log_params: PSMCParams, index, kern) -> float:
    return _psmc_ll_helper(log_params, index=index, kern=kern, grad=False)

def _psmc_ll_fwd(log_params, index, kern):
    return _psmc_ll_helper(log_params, index=index, kern=kern, grad=True)

def _psmc_ll_helper(log_params: PSMCParams, index, kern, grad):
    params = jax.tree.map(jnp.exp, log_params)
    result_shape_dtype = jax.ShapeDtypeStruct(shape=(), dtype=kern.float_type)
    if grad:
        result_shape_dtype = (result_shape_dtype, PSMCParams(*[jax.ShapeDtypeStruct(shape=(params.M,), dtype=kern.float_type) for p in params]))
    return jax.pure_callback(kern, result_shape_dtype, pp=params, index=index, grad=grad, vmap_method='sequential')

def _psmc_ll_bwd(kern, df, g):
    return ((jax.tree.map(lambda a: g * a, df), None),)
_psmc_ll.defvjp(_psmc_ll_fwd, _psmc_ll_bwd)
DATA = np.array([[0, 0, 1, 0, 0, 0, 2, 0, 1, 1, 0, 0], [0, 1, 0, 0, 2, 2, 0, 0, 0, 1, 0, 0]], np.int8)
KERNEL = PSMCKernel(4, DATA)

def eval_fn(params, index):
    pp = PSMCParams(*params)
    return KERNEL.loglik(pp, index)

def eval_inputs():
    params = np.array([[0.05, 0.04, 0.03, 0.0], [0.9, 0.88, 0.92, 0.95], [0.06, 0.05, 0.04, 0.0], [0.0, 0.6, 0.3, 0.1], [0.85, 0.75, 0.65, 0.55], [0.15, 0.25, 0.35, 0.45], [0.4, 0.3, 0.2, 0.1]], np.float32)
    params[0, 3] = params[2, 3] = params[3, 0] = 0.001
    return (params, np.int32(1))

def eval_reference(params, index):
    p = np.asarray(params, np.float64)
    b, d, u, v, e0, e1, pi = p
    M = d.shape[0]
    A = np.empty((M, M))
    for k in range(M):
        for i in range(M):
            A[k, i] = b[i] if k > i else d[i] if k == i else u[k] * v[i]
    emis = np.stack([e0, e1, np.ones(M)])
    alpha = pi.copy()
    for ob in DATA[int(index)]:
        alpha = alpha @ A * emis[ob]
    return np.log(alpha.sum())
