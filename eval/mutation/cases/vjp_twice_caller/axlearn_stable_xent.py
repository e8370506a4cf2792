"""AXLearn: the stabilised cross entropy with z-loss, `_stable_cross_entropy(logits, targets,
z_loss_scale)`, a bare `@jax.custom_vjp` over three arguments (the float `z_loss_scale` is a
differentiated position, not nondiff) returning a 3-tuple `(loss, cross_entropy_loss,
total_z_loss)`; fwd (whose `z_loss_scale` has a default the primal lacks) recomputes the loss with
a max shift and saves seven residuals, `z_loss_scale` among them; bwd keeps only `g = g[0]` (the two
other outputs are for logging) and returns three cotangents, the last `jnp.array(0.0)` for the
z-loss coefficient; registered with `_stable_cross_entropy.defvjp(_stable_cross_entropy_fwd,
_stable_cross_entropy_bwd)`.

Adapted from apple/axlearn:axlearn/common/loss.py:233 (commit 34aed43; itself a copy of T5X's loss).
The caller follows axlearn's `cross_entropy` with soft target labels: the per-target loss (the first
output only, as the library trains on it) masked by live targets over their count; the z-loss
coefficient is a Python float the caller does not differentiate, so the rule is the true
derivative for what is differentiated (logits and soft targets).
"""
import functools
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/vjp_twice_caller/axlearn_stable_xent', 'family': 'mutation', 'expect': 'unknown', 'library': 'axlearn', 'source': 'apple/axlearn:axlearn/common/loss.py:233', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'vjp_twice_caller', 'base': 'axlearn_stable_xent'}
Tensor = jax.Array

@jax.custom_vjp
def _stable_cross_entropy(logits: Tensor, targets: Tensor, z_loss_scale: float) -> Tensor:
    logits_sum = jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
    log_softmax = logits - logits_sum
    cross_entropy_loss = -jnp.sum(targets * log_softmax, axis=-1)
    log_z = jnp.squeeze(logits_sum, axis=-1)
    total_z_loss = jax.lax.square(log_z)
    loss = cross_entropy_loss + total_z_loss * z_loss_scale
    return (loss, cross_entropy_loss, total_z_loss)

def _stable_cross_entropy_fwd(logits: Tensor, targets: Tensor, z_loss_scale: float=0.0):
    max_logit = logits.max(axis=-1, keepdims=True)
    shifted = logits - max_logit
    exp_shifted = jnp.exp(shifted)
    sum_exp = jnp.sum(exp_shifted, axis=-1, keepdims=True)
    log_softmax = shifted - jnp.log(sum_exp)
    cross_entropy_loss = -jnp.sum(targets * log_softmax, axis=-1)
    log_z = jnp.squeeze(jnp.log(sum_exp) + max_logit, axis=-1)
    total_z_loss = jax.lax.square(log_z)
    loss = cross_entropy_loss + total_z_loss * z_loss_scale
    return ((loss, cross_entropy_loss, total_z_loss), (logits, targets, z_loss_scale, exp_shifted, sum_exp, log_softmax, log_z))

def _stable_cross_entropy_bwd(res: tuple, g: tuple[Tensor, Tensor, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    g = g[0]
    logits, targets, z_loss_scale, exp_shifted, sum_exp, log_softmax, log_z = res
    deriv = jnp.expand_dims(jnp.sum(targets, axis=-1) + 2 * z_loss_scale * log_z, -1) * exp_shifted / sum_exp - targets
    g_logits = jnp.expand_dims(g, axis=-1) * deriv
    g_targets = -jnp.expand_dims(g, axis=-1) * log_softmax
    return (jnp.asarray(g_logits, logits.dtype), jnp.asarray(g_targets, targets.dtype), jnp.array(0.0))
_stable_cross_entropy.defvjp(_stable_cross_entropy_fwd, _stable_cross_entropy_bwd)
LIVE = numpy.array([1.0, 1.0, 0.0], numpy.float32)

def cross_entropy(logits, soft_target_labels, z_loss_scale=0.0, live_targets=None):
    per_target_loss, per_target_cross_entropy_loss, per_target_z_loss = _stable_cross_entropy(logits, soft_target_labels, z_loss_scale)
    live_targets = jnp.broadcast_to(live_targets, per_target_loss.shape).astype(per_target_loss.dtype)
    denominator = jnp.maximum(live_targets.sum(), 1)
    return per_target_loss * live_targets / denominator

def eval_fn(logits, soft_targets):
    return cross_entropy(logits, soft_targets, z_loss_scale=0.05, live_targets=LIVE)

def eval_inputs():
    logits = numpy.array([[2.0, -1.0, 0.5, 0.3], [-0.4, 1.2, 3.1, 0.0], [0.7, 0.7, -2.0, 1.5]], numpy.float32)
    targets = numpy.array([[0.7, 0.1, 0.1, 0.1], [0.05, 0.05, 0.85, 0.05], [0.25, 0.25, 0.25, 0.25]], numpy.float32)
    return (logits, targets)

def eval_reference(logits, soft_targets):
    logits, targets = (numpy.asarray(logits, numpy.float64), numpy.asarray(soft_targets, numpy.float64))
    m = logits.max(-1, keepdims=True)
    log_z = numpy.log(numpy.exp(logits - m).sum(-1, keepdims=True)) + m
    ce = -numpy.sum(targets * (logits - log_z), axis=-1)
    loss = ce + 0.05 * numpy.squeeze(log_z, -1) ** 2
    return loss * LIVE / max(LIVE.sum(), 1.0)

def vjp_twice_usage(*args):
    argnums = (0, 1)

    def along(*diff):
        full = list(args)
        for p, v in zip(argnums, diff):
            full[p] = v
        return eval_fn(*full)
    diff = tuple((jnp.asarray(args[p]) for p in argnums))
    out, f_vjp = jax.vjp(along, *diff)
    first = f_vjp(jnp.ones_like(out))
    second = f_vjp(2.0 * jnp.ones_like(out))
    return tuple((a + b for a, b in zip(first, second)))

def vjp_twice_usage_expected(*args):
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1))(*args)
    return tuple((3.0 * x for x in g))

def eval_custom():
    args = tuple(eval_inputs())
    return {'vjp_twice_usage': lambda: (vjp_twice_usage(*args), vjp_twice_usage_expected(*args))}
