"""ejkernel (JAX/XLA attention and fused kernels, erfanzar): the XLA fallback of `mean_pooling`,
a `@partial(jax.custom_vjp, nondiff_argnums=(1,))` core `_mean_pooling_core(x, cu_seqlens)` that
averages packed variable-length sequences (or a fixed-length batch when `cu_seqlens` is None).
The rules live in another module of the library and are registered by `.defvjp(fwd, bwd)` after
the core is injected into it: `_mean_pooling_fwd(x, cu_seqlens)` calls the custom function itself
and saves the residual `(x.shape, cu_seqlens)` (a tuple of Python ints beside an optional array),
and `_mean_pooling_bwd(cu_seqlens, residual, g)` takes the nondiff argument first, unpacks
`x_shape, _ = residual` and tiles each sequence's cotangent row `g[i] / seq_len` over its tokens
(a Python loop over the sequences, concatenated), returning the 1-tuple `(dx,)`.

Adapted from erfanzar/ejkernel:ejkernel/kernels/_xla/mean_pooling/_xla_impl_fwd.py:121 (the
core, commit 0915c33) and ejkernel/kernels/_xla/mean_pooling/_xla_impl_bwd.py:29 (the rules).
Changed: both modules in one (the late binding `_mean_pooling_bwd_mod._mean_pooling_core = ...`
dropped, fwd reads the module-level name), the jaxtyping annotations dropped, and the longest
sequence is computed with numpy from the static `cu_seqlens` (the library's `jnp.max` is a
tracer under jit, which `dynamic_slice` cannot take as a size) and the vmapped pooling indexes a
`jnp` copy of the offsets (the library receives them as a jax array). The caller pools a packed batch
of three sequences (lengths 4, 2, 4) given as a module-level numpy array, as the registry
wrapper `mean_pooling(x, chunk_size, cu_seqlens)` receives it, and differentiates the tokens.
"""
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/switch_caller/ejkernel_mean_pooling_varlen', 'family': 'mutation', 'expect': 'unknown', 'library': 'ejkernel', 'source': 'erfanzar/ejkernel:ejkernel/kernels/_xla/mean_pooling/_xla_impl_fwd.py:121', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'switch_caller', 'base': 'ejkernel_mean_pooling_varlen'}

def _mean_pooling_varlen(x, cu_seqlens):
    """Mean of each packed sequence: dynamic slices padded to the longest, masked, summed."""
    num_seqs = len(cu_seqlens) - 1
    max_seq_len = int(np.max(np.diff(np.asarray(cu_seqlens))))
    offsets = jnp.asarray(cu_seqlens)

    def pool_sequence(i):
        start = offsets[i]
        seq_len = offsets[i + 1] - start
        seq_tokens = jax.lax.dynamic_slice(x, (start, 0), (max_seq_len, x.shape[-1]))
        mask = jnp.arange(max_seq_len) < seq_len
        masked_tokens = jnp.where(mask[:, None], seq_tokens, 0)
        return jnp.sum(masked_tokens, axis=0) / seq_len
    return jax.vmap(pool_sequence)(jnp.arange(num_seqs))

def _mean_pooling_fixed(x):
    return jnp.mean(x, axis=1)

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _mean_pooling_core(x, cu_seqlens=None):
    """Mean pooling over the sequence axis, packed (cu_seqlens) or fixed-length."""
    if cu_seqlens is not None:
        return _mean_pooling_varlen(x, cu_seqlens)
    else:
        return _mean_pooling_fixed(x)

def _mean_pooling_fwd(x, cu_seqlens=None):
    out = _mean_pooling_core(x, cu_seqlens)
    residual = (x.shape, cu_seqlens)
    return (out, residual)

def _mean_pooling_bwd(cu_seqlens, residual, g):
    x_shape, _ = residual
    if cu_seqlens is not None:
        num_seqs = len(cu_seqlens) - 1

        def grad_sequence(i):
            start = cu_seqlens[i]
            end = cu_seqlens[i + 1]
            seq_len = end - start
            return jnp.tile(g[i] / seq_len, (seq_len, 1))
        dx_list = [grad_sequence(i) for i in range(num_seqs)]
        dx = jnp.concatenate(dx_list, axis=0)
    else:
        seq_len = x_shape[1]
        dx = jnp.tile(g[:, None, :], (1, seq_len, 1)) / seq_len
    return (dx,)
_mean_pooling_core.defvjp(_mean_pooling_fwd, _mean_pooling_bwd)

def mean_pooling(x, chunk_size=32, cu_seqlens=None):
    """Registry entry point: chunk_size is accepted for the Triton backend and ignored here."""
    return _mean_pooling_core(x, cu_seqlens)
CU_SEQLENS = np.array([0, 4, 6, 10])

def eval_fn(tokens):
    return mean_pooling(tokens, 32, CU_SEQLENS)

def eval_inputs():
    rng = np.random.default_rng(10)
    return (rng.normal(size=(10, 3)).astype(np.float32),)

def eval_reference(tokens):
    t = np.asarray(tokens, np.float64)
    return np.stack([t[a:b].mean(axis=0) for a, b in zip(CU_SEQLENS[:-1], CU_SEQLENS[1:])])

def switch_usage(*args):

    def loss(v):
        return jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)]))
    x = jnp.asarray(args[0])
    branches = [loss, lambda v: 2.0 * loss(v)]
    return jax.grad(lambda v: jax.lax.switch(1, branches, v))(x)

def switch_usage_expected(*args):

    def loss(v):
        return jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)]))
    x = jnp.asarray(args[0])
    return 2.0 * jax.grad(loss)(x)

def eval_custom():
    args = tuple(eval_inputs())
    return {'switch_usage': lambda: (switch_usage(*args), switch_usage_expected(*args))}
