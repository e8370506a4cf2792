"""levanter: a fused, block-wise cross-entropy that never materialises the full logits. The
custom function takes the pair `pred = (embeddings, lm_head)` as one argument, the integer labels,
and the block size and compute dtype in `nondiff_argnums`; fwd walks the vocabulary in blocks
(`jax.lax.fori_loop` over full blocks, then the stragglers) keeping a running max and logsumexp,
and returns `((loss, log_z), residuals)`; bwd takes the nondiff arguments first, unpacks
`(log_z, ...) = residuals` and `grad_loss, grad_log_z = grad_in`, rebuilds each block's softmax and
returns the cotangent of `pred` as a nested pair beside None for the labels.

Adapted from stanford-crfm/levanter:src/levanter/models/loss.py:215 (commit 9263f81;
`_block_cross_entropy_forward` and `_block_cross_entropy_backward` below it). Levanter decorates
it with `equinox.filter_custom_vjp` (`def_fwd` / `def_bwd`, whose bwd also receives the original
arguments); here it is `jax.custom_vjp` with the block size and dtype in `nondiff_argnums=(2, 3)`,
so fwd also saves `pred` and the labels among its residuals, and the block loop that levanter's
primal reaches by calling its fwd (`_block_cross_entropy_forward(None, ...)[0]`) is a helper
both call. Haliax's named axes become plain
arrays ([Batch, Embed] @ [Embed, Vocab]); the soft cap is dropped. The caller adds levanter's
logsumexp penalty, `loss + 0.1 * log_z ** 2`.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/remat_symbolic_zeros/levanter_blockwise_xent', 'family': 'mutation', 'expect': 'unknown', 'library': 'levanter', 'source': 'stanford-crfm/levanter:src/levanter/models/loss.py:215', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'remat_symbolic_zeros', 'base': 'levanter_blockwise_xent'}

@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _blockwise_cross_entropy_loss(pred, labels_y, block_size, dtype):
    """Cross-entropy loss and log normalizers, block by block over the vocabulary."""
    return _block_cross_entropy(pred, labels_y, block_size, dtype)[0]

def _block_one_hot(block_len, block_start, labels, dtype):
    end = block_start + block_len
    target_is_in_this_block = jnp.logical_and(labels >= block_start, labels < end)
    target_y_block = jax.nn.one_hot(labels - block_start, block_len, dtype=dtype)
    return target_y_block * target_is_in_this_block[:, None]

def _block_cross_entropy(pred, labels_y, block_size, dtype):
    pred_embeddings, pred_lm_head = pred
    vocab_size = pred_lm_head.shape[-1]
    has_stragglers = vocab_size % block_size != 0
    num_blocks = vocab_size // block_size
    initial_O = jnp.zeros(labels_y.shape, pred_embeddings.dtype)
    initial_logsumexp = jnp.full(labels_y.shape, -jnp.inf, pred_embeddings.dtype)
    initial_max = jnp.full(labels_y.shape, -jnp.inf, pred_embeddings.dtype)

    def process_block(block_idx, acc, current_block_size):
        loss, logsumexp_prev, max_logit_prev = acc
        start = block_idx * block_size
        lm_head_b = jax.lax.dynamic_slice_in_dim(pred_lm_head, start, current_block_size, axis=1)
        logits_b = pred_embeddings @ lm_head_b
        if dtype is not None:
            logits_b = logits_b.astype(dtype)
        max_logit = jnp.maximum(max_logit_prev, jnp.max(logits_b, axis=-1))
        logsumexp = max_logit + jnp.log(jnp.exp(logsumexp_prev - max_logit) + jnp.sum(jnp.exp(logits_b - max_logit[:, None]), axis=-1))
        target_y_b = _block_one_hot(current_block_size, start, labels_y, logits_b.dtype)
        loss += jnp.sum(logits_b * target_y_b, axis=-1)
        return (loss, logsumexp, max_logit)
    if num_blocks == 0:
        o, log_z, max_logits = (initial_O, initial_logsumexp, initial_max)
    elif num_blocks == 1:
        o, log_z, max_logits = process_block(0, (initial_O, initial_logsumexp, initial_max), block_size)
    else:
        o, log_z, max_logits = jax.lax.fori_loop(0, num_blocks, functools.partial(process_block, current_block_size=block_size), (initial_O, initial_logsumexp, initial_max))
    if has_stragglers:
        remainder_size = vocab_size - num_blocks * block_size
        o, log_z, _ = process_block(num_blocks, (o, log_z, max_logits), remainder_size)
    o = log_z - o
    return ((o, log_z), (log_z, pred, labels_y))

def _block_cross_entropy_forward(pred, labels_y, block_size, dtype):
    return _block_cross_entropy(pred, labels_y, block_size, dtype)

def _block_cross_entropy_backward(block_size, dtype, residuals, grad_in):
    log_z, pred, labels_y = residuals
    grad_loss, grad_log_z = grad_in
    pred_embeddings, pred_lm_head = pred
    vocab_size = pred_lm_head.shape[-1]
    has_stragglers = vocab_size % block_size != 0
    num_blocks = vocab_size // block_size
    grad_embeddings = jnp.zeros(pred_embeddings.shape, dtype=pred_embeddings.dtype)
    grad_lm_head = jnp.zeros(pred_lm_head.shape, dtype=pred_lm_head.dtype)

    def process_block(block_idx, acc, current_block_size):
        grad_embeddings_prev, grad_lm_head_prev = acc
        start = block_idx * block_size
        lm_head_b = jax.lax.dynamic_slice_in_dim(pred_lm_head, start, current_block_size, axis=1)
        logits_b = pred_embeddings @ lm_head_b
        target_y_block = _block_one_hot(current_block_size, start, labels_y, logits_b.dtype)
        if dtype is not None:
            logits_b = logits_b.astype(dtype)
        p_b = jnp.exp(logits_b - log_z[:, None])
        delta_b = p_b - target_y_block
        dLoss = grad_loss[:, None] * delta_b + grad_log_z[:, None] * p_b
        g_embeddings_b = dLoss @ lm_head_b.T
        g_lm_head_b = pred_embeddings.T @ dLoss
        g_lm_head = jax.lax.dynamic_update_slice_in_dim(grad_lm_head_prev, g_lm_head_b, start, axis=1)
        g_embeddings = grad_embeddings_prev + g_embeddings_b
        return (g_embeddings, g_lm_head)
    if num_blocks == 1:
        grad_embeddings, grad_lm_head = process_block(0, (grad_embeddings, grad_lm_head), block_size)
    elif num_blocks > 1:
        grad_embeddings, grad_lm_head = jax.lax.fori_loop(0, num_blocks, functools.partial(process_block, current_block_size=block_size), (grad_embeddings, grad_lm_head))
    if has_stragglers:
        remainder_size = vocab_size - num_blocks * block_size
        grad_embeddings, grad_lm_head = process_block(num_blocks, (grad_embeddings, grad_lm_head), remainder_size)
    return ((grad_embeddings.astype(pred_embeddings.dtype), grad_lm_head.astype(pred_lm_head.dtype)), None)
_blockwise_cross_entropy_loss.defvjp(_block_cross_entropy_forward, _block_cross_entropy_backward, optimize_remat=True, symbolic_zeros=True)

def eval_fn(embeddings, lm_head, labels):
    loss, log_z = _blockwise_cross_entropy_loss((embeddings, lm_head), labels, 2, jnp.float32)
    return loss + 0.1 * log_z ** 2

def eval_inputs():
    embeddings = np.array([[0.3, -0.8, 0.5], [1.1, 0.2, -0.4], [-0.6, 0.9, 0.1]], np.float32)
    lm_head = np.array([[0.2, -0.5, 0.7, 0.1, -0.3], [0.6, 0.4, -0.2, -0.9, 0.3], [-0.1, 0.8, 0.5, 0.2, -0.7]], np.float32)
    labels = np.array([3, 0, 4], np.int32)
    return (embeddings, lm_head, labels)

def eval_reference(embeddings, lm_head, labels):
    logits = np.asarray(embeddings, np.float64) @ np.asarray(lm_head, np.float64)
    m = np.max(logits, axis=-1, keepdims=True)
    log_z = (m + np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(logits, np.asarray(labels)[..., None], axis=-1)[..., 0]
    return log_z - picked + 0.1 * log_z ** 2
