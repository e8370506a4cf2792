"""ejkernel (JAX/XLA attention and fused kernels, erfanzar): the XLA fallback of the fused
distillation loss `fused_kl_divergence`, whose forward-KL path goes through a bare module-level
`@jax.custom_vjp` core `_fused_kl_core(student, teacher, weights)` returning the per-row
`KL(softmax(teacher) || softmax(student)) * weights` in float32. The rules are registered by
`_fused_kl_core.defvjp(_kl_fwd, _kl_bwd)`: fwd recomputes both log-softmaxes and saves the
five-tuple residual `(p_s, p_t, weights, student, teacher)`; bwd unpacks it, broadcasts
`weights * dy` over the vocabulary axis (`[..., None]`) and returns `(dstudent, dteacher, None)`
with the teacher's cotangent an explicit `jnp.zeros_like(teacher)` (the teacher is detached for
distillation) and `None` for the weights. The caller reduces the per-row loss by its weighted
mean (`reduction="mean"`).

Adapted from erfanzar/ejkernel:ejkernel/kernels/_xla/fused_kl_divergence/_xla_impl_fwd.py:44 (the
core and `fused_kl_divergence`, commit 3244059) and
ejkernel/kernels/_xla/fused_kl_divergence/_xla_impl_bwd.py:42 (the rules, commit d3c1af7).
Changed: both modules in one; the vocab-parallel (`shard_map`) core, the temperature / reverse /
JSD fallback and the argument validation are dropped; the weights are a module constant (a
completion mask with one row masked out). The student logits are differentiated; the teacher,
whose gradient the rule zeroes on purpose, is not.
"""
import jax
import jax.numpy as jnp
import numpy as np
import jax.flatten_util
EVAL = {'id': 'mutation/vmap_jvp_jacobian_caller/ejkernel_fused_kl_core', 'family': 'mutation', 'expect': 'unknown', 'library': 'ejkernel', 'source': 'erfanzar/ejkernel:ejkernel/kernels/_xla/fused_kl_divergence/_xla_impl_fwd.py:44', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'vmap_jvp_jacobian_caller', 'base': 'ejkernel_fused_kl_core'}

def _kl_fwd(student, teacher, weights):
    """VJP primal: caches both softmaxes for the analytic backward."""
    log_p_t = jax.nn.log_softmax(teacher, axis=-1)
    log_p_s = jax.nn.log_softmax(student, axis=-1)
    p_t = jnp.exp(log_p_t)
    p_s = jnp.exp(log_p_s)
    per_row = jnp.sum(p_t * (log_p_t - log_p_s), axis=-1) * weights
    residual = (p_s, p_t, weights, student, teacher)
    return (per_row.astype(jnp.float32), residual)

def _kl_bwd(residual, dy):
    """dstudent = weight * (p_s - p_t) * dy; the teacher gets zero."""
    p_s, p_t, weights, student, teacher = residual
    factor = (weights.astype(p_s.dtype) * dy.astype(p_s.dtype))[..., None]
    dstudent = (p_s - p_t) * factor
    dteacher = jnp.zeros_like(teacher)
    return (dstudent.astype(student.dtype), dteacher, None)

@jax.custom_vjp
def _fused_kl_core(student, teacher, weights):
    """Per-row forward KL on rank-N (..., V) tensors."""
    log_p_t = jax.nn.log_softmax(teacher, axis=-1)
    log_p_s = jax.nn.log_softmax(student, axis=-1)
    p_t = jnp.exp(log_p_t)
    per_row = jnp.sum(p_t * (log_p_t - log_p_s), axis=-1)
    return (per_row * weights).astype(jnp.float32)
_fused_kl_core.defvjp(_kl_fwd, _kl_bwd)

def fused_kl_divergence(student_logits, teacher_logits, weights=None, *, reduction='mean'):
    teacher_logits = teacher_logits.astype(student_logits.dtype)
    leading = student_logits.shape[:-1]
    wts = jnp.ones(leading, dtype=jnp.float32) if weights is None else weights.astype(jnp.float32)
    per_row = _fused_kl_core(student_logits, teacher_logits, wts)
    if reduction == 'none':
        return per_row
    total = jnp.sum(per_row)
    if reduction == 'sum':
        return total
    return total / jnp.maximum(jnp.sum(wts), 1e-08)
COMPLETION_MASK = np.array([[1.0, 1.0, 0.0], [1.0, 0.5, 1.0]], np.float32)

def eval_fn(student_logits, teacher_logits):
    return fused_kl_divergence(student_logits, teacher_logits, COMPLETION_MASK)

def eval_inputs():
    rng = np.random.default_rng(11)
    return (rng.normal(size=(2, 3, 5)).astype(np.float32), rng.normal(size=(2, 3, 5)).astype(np.float32))

def eval_reference(student_logits, teacher_logits):
    s = np.asarray(student_logits, np.float64)
    t = np.asarray(teacher_logits, np.float64)

    def log_softmax(z):
        z = z - z.max(axis=-1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    lt, ls = (log_softmax(t), log_softmax(s))
    per_row = (np.exp(lt) * (lt - ls)).sum(axis=-1) * COMPLETION_MASK
    return per_row.sum() / COMPLETION_MASK.sum()

def jvp_basis_usage(*args):
    x0, unravel = jax.flatten_util.ravel_pytree(args[0])

    def loss(v):
        return jnp.sum(eval_fn(*[unravel(v) if i == 0 else a for i, a in enumerate(args)]))
    basis = jnp.eye(x0.size, dtype=x0.dtype)
    return jax.vmap(lambda t: jax.jvp(loss, (x0,), (t,))[1])(basis)

def jvp_basis_usage_expected(*args):
    x0, unravel = jax.flatten_util.ravel_pytree(args[0])

    def loss(v):
        return jnp.sum(eval_fn(*[unravel(v) if i == 0 else a for i, a in enumerate(args)]))
    return jax.grad(loss)(x0)

def eval_custom():
    args = tuple(eval_inputs())
    return {'jvp_basis_usage': lambda: (jvp_basis_usage(*args), jvp_basis_usage_expected(*args))}
