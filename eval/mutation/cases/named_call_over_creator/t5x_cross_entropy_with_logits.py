"""t5x: `cross_entropy_with_logits(logits, targets, z_loss)`, the softmax cross entropy with a
stable custom gradient and an auxiliary z-loss (`z_loss * log(Z)**2`, Z the softmax normaliser),
a bare module-level `@jax.custom_vjp` over three parameters, the third a Python float
coefficient. The primal returns the pair `(loss, total_z_loss)`; the forward rule, whose `z_loss`
parameter has a default (`z_loss: float = 0.0`, the primal's has none), recomputes the shifted
softmax itself and saves seven residuals (among them the inputs and the float coefficient
itself); the backward rule keeps only the loss's cotangent (`g = g[0]`: the z-loss output is
for logging only), forms `(1 + 2 * z_loss * log_z) * softmax - targets`, and returns three
cotangents cast back to the inputs' dtypes, the last `jnp.array(0.0)` for the coefficient
("sets z-loss coeff gradient to 0"). Registered by the statement
`cross_entropy_with_logits.defvjp(fwd, bwd)`. Callers pass the coefficient by keyword
(`cross_entropy_with_logits(logits, soft_targets, z_loss=z_loss)`, and the scoring path
`-cross_entropy_with_logits(..., z_loss=0.0)[0] * weights`).

Adapted from google-research/t5x:t5x/losses.py:26 (commit cc342d4), with the caller of
t5x/losses.py:174 (`compute_weighted_cross_entropy`) and t5x/models.py:795 (token scores).
Changed: the long return type annotations dropped; the caller takes soft (label-smoothed)
targets directly instead of building them from integer tokens with flax's `onehot`, so that the
targets' cotangent (`-g * log_softmax`) is exercised as well; the caller discards the z-loss
output (the library only logs it): it is not part of the differentiated value, as in the
library's training loss.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/named_call_over_creator/t5x_cross_entropy_with_logits', 'family': 'mutation', 'expect': 'unknown', 'library': 't5x', 'source': 'google-research/t5x:t5x/losses.py:26', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'named_call_over_creator', 'base': 't5x_cross_entropy_with_logits'}

@jax.named_call
@jax.custom_vjp
def cross_entropy_with_logits(logits: jnp.ndarray, targets: jnp.ndarray, z_loss: float):
    """Cross entropy of `targets` under `softmax(logits)` plus `z_loss * log(Z)**2`; returns
    the total loss and the z-loss term, both of shape `logits.shape[:-1]`."""
    logits_sum = jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
    log_softmax = logits - logits_sum
    loss = -jnp.sum(targets * log_softmax, axis=-1)
    log_z = jnp.squeeze(logits_sum, axis=-1)
    total_z_loss = z_loss * jax.lax.square(log_z)
    loss += total_z_loss
    return (loss, total_z_loss)

def _cross_entropy_with_logits_fwd(logits: jnp.ndarray, targets: jnp.ndarray, z_loss: float=0.0):
    """Forward rule of `cross_entropy_with_logits`."""
    max_logit = logits.max(axis=-1, keepdims=True)
    shifted = logits - max_logit
    exp_shifted = jnp.exp(shifted)
    sum_exp = jnp.sum(exp_shifted, axis=-1, keepdims=True)
    log_softmax = shifted - jnp.log(sum_exp)
    loss = -jnp.sum(targets * log_softmax, axis=-1)
    log_z = jnp.squeeze(jnp.log(sum_exp) + max_logit, axis=-1)
    total_z_loss = z_loss * jax.lax.square(log_z)
    loss += total_z_loss
    return ((loss, total_z_loss), (logits, targets, z_loss, exp_shifted, sum_exp, log_softmax, log_z))

def _cross_entropy_with_logits_bwd(res, g):
    """Backward rule of `cross_entropy_with_logits`."""
    g = g[0]
    logits, targets, z_loss, exp_shifted, sum_exp, log_softmax, log_z = res
    deriv = jnp.expand_dims(1 + 2 * z_loss * log_z, -1) * exp_shifted / sum_exp - targets
    g_logits = jnp.expand_dims(g, axis=-1) * deriv
    g_targets = -jnp.expand_dims(g, axis=-1) * log_softmax
    return (jnp.asarray(g_logits, logits.dtype), jnp.asarray(g_targets, targets.dtype), jnp.array(0.0))
cross_entropy_with_logits.defvjp(_cross_entropy_with_logits_fwd, _cross_entropy_with_logits_bwd)
Z_LOSS = 0.05
WEIGHTS = np.array([[1.0, 1.0, 0.0], [1.0, 0.5, 1.0]], np.float32)

def weighted_token_losses(logits, soft_targets, z_loss=Z_LOSS):
    total_loss, total_z_loss = cross_entropy_with_logits(logits, soft_targets, z_loss=z_loss)
    del total_z_loss
    return total_loss * WEIGHTS

def eval_fn(logits, soft_targets):
    return weighted_token_losses(logits, soft_targets)

def eval_inputs():
    logits = np.array([[[1.2, -0.4, 0.3, 2.1], [0.5, 0.9, -1.3, 0.2], [-0.7, 0.1, 1.6, 0.4]], [[0.3, 1.8, -0.2, -1.1], [2.4, 0.6, 0.8, -0.5], [-0.9, -0.3, 0.7, 1.3]]], np.float32)
    hot = np.array([[3, 1, 2], [1, 0, 3]])
    smoothing = 0.1
    soft = np.full((2, 3, 4), smoothing / 3, np.float32)
    np.put_along_axis(soft, hot[..., None], 1.0 - smoothing, axis=-1)
    return (logits, soft)

def eval_reference(logits, soft_targets):
    x = np.asarray(logits, np.float64)
    t = np.asarray(soft_targets, np.float64)
    m = x.max(axis=-1, keepdims=True)
    log_z = np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m
    loss = -np.sum(t * (x - log_z), axis=-1) + Z_LOSS * np.squeeze(log_z, -1) ** 2
    return loss * WEIGHTS.astype(np.float64)
