"""maxtext: the post-branch operation of manifold hyper-connections (mHC), mixing the residual
streams and adding the gated branch output, as `functools.partial(jax.custom_vjp,
nondiff_argnums=(0,))` with a hashable kernel config first; fwd saves the four inputs,
and bwd (config first, then the saved tuple and the output cotangent) reshapes to tokens, takes
the pointwise gradients (d_x, d_layer_output) and the feature-reduced ones (d_h_post,
d_residual) from helpers whose argument orders differ from the primal's, and returns them in
the primal's order.

Adapted from AI-Hypercomputer/maxtext:src/maxtext/kernels/mhc/mhc_kernels_fwd.py:267 (`_post_op`;
its bwd `post_op_bwd` lives in mhc_kernels_bwd.py:428 and its math in common.py:534; the Pallas
pipelines are replaced by the per-block functions they run, and the kernel's bfloat16 casts are
dropped: float32 throughout; the frozen dataclass config is a NamedTuple).
"""
import functools
from functools import partial
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/nondiff_shift/maxtext_mhc_post_op', 'family': 'mutation', 'expect': 'unknown', 'library': 'maxtext', 'source': 'AI-Hypercomputer/maxtext:src/maxtext/kernels/mhc/mhc_kernels_fwd.py:267', 'argnums': (0, 1, 2, 3), 'extra': ['grad_jit'], 'operator': 'nondiff_shift', 'base': 'maxtext_mhc_post_op'}

class MhcKernelConfig(NamedTuple):
    """Compiler and tiling configuration for the mHC kernels."""
    block_size: int = 8
    bwd_block_size: int = 8
    interpret: bool = True

def post_apply(x, layer_output, h_post, residual):
    """Broadcasts the branch output and applies the residual stream mixing."""
    residual_mix = jnp.einsum('tkj,tkd->tjd', residual, x, preferred_element_type=jnp.float32)
    post_mix = h_post.astype(jnp.float32)[:, :, None] * layer_output.astype(jnp.float32)[:, None, :]
    return residual_mix + post_mix

def post_apply_bwd_pointwise(d_output, h_post, residual):
    d_output_f32 = d_output.astype(jnp.float32)
    d_x = jnp.einsum('tkj,tjd->tkd', residual, d_output_f32, preferred_element_type=jnp.float32)
    d_layer_output = jnp.sum(h_post[:, :, None] * d_output_f32, axis=1)
    return (d_x, d_layer_output)

def post_apply_bwd_reductions(d_output, layer_output, x):
    d_output_f32 = d_output.astype(jnp.float32)
    d_h_post = jnp.sum(layer_output[:, None, :] * d_output_f32, axis=-1)
    d_residual = jnp.einsum('tjd,tkd->tjk', d_output_f32, x, preferred_element_type=jnp.float32).transpose(0, 2, 1)
    return (d_h_post, d_residual)

def post_fwd(layer_output, x, h_post, residual, config):
    """Runs the post-gate and residual-mixing forward."""
    batch, sequence, streams, embedding = x.shape
    tokens = batch * sequence
    output = post_apply(x.reshape(tokens, streams, embedding), layer_output.reshape(tokens, embedding), h_post.reshape(tokens, streams), residual.reshape(tokens, streams, streams))
    return output.reshape(batch, sequence, streams, embedding)

def _post_apply_bwd(x, layer_output, h_post, residual, d_output, config):
    d_x, d_layer_output = post_apply_bwd_pointwise(d_output, h_post, residual)
    d_h_post, d_residual = post_apply_bwd_reductions(d_output, layer_output, x)
    return (d_x, d_layer_output, d_h_post, d_residual)

def post_bwd(cotangent, layer_output, x, h_post, residual, config):
    """Computes post-branch gradients."""
    batch, sequence, streams, embedding = x.shape
    tokens = batch * sequence
    d_x, d_layer_output, d_h_post, d_residual = _post_apply_bwd(x.reshape(tokens, streams, embedding), layer_output.reshape(tokens, embedding), h_post.reshape(tokens, streams), residual.reshape(tokens, streams, streams), cotangent.reshape(tokens, streams, embedding), config=config)
    return (d_layer_output.reshape(batch, sequence, embedding), d_x.reshape(batch, sequence, streams, embedding), d_h_post.reshape(batch, sequence, streams), d_residual.reshape(batch, sequence, streams, streams))

def post_op_bwd(config, saved, d_output):
    """Custom-VJP backward rule for the post-branch entry point."""
    layer_output, x, h_post, residual = saved
    d_layer_output, d_x, d_h_post, d_residual = post_bwd(d_output, layer_output, x, h_post, residual, config=config)
    return (d_layer_output, d_x, d_h_post, d_residual)

@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _post_op(config, layer_output, x, h_post, residual):
    """Differentiable post-branch mHC operation."""
    return post_fwd(layer_output, x, h_post, residual, config)

def _post_op_fwd(config, layer_output, x, h_post, residual):
    output = post_fwd(layer_output, x, h_post, residual, config)
    return (output, (layer_output, x, h_post, residual))
_post_op.defvjp(_post_op_fwd, post_op_bwd)

def eval_fn(layer_output, x, h_post, residual):
    out = _post_op(MhcKernelConfig(), layer_output, x, h_post, residual)
    return jnp.tanh(out)

def eval_inputs():
    rng = np.random.default_rng(11)
    layer_output = rng.normal(size=(1, 2, 4)).astype(np.float32)
    x = rng.normal(size=(1, 2, 3, 4)).astype(np.float32) * np.float32(0.5)
    h_post = rng.uniform(0.2, 1.0, size=(1, 2, 3)).astype(np.float32)
    residual = rng.uniform(0.0, 0.6, size=(1, 2, 3, 3)).astype(np.float32)
    return (layer_output, x, h_post, residual)

def eval_reference(layer_output, x, h_post, residual):
    layer_output, x, h_post, residual = (np.asarray(a, np.float64) for a in (layer_output, x, h_post, residual))
    mix = np.einsum('bskj,bskd->bsjd', residual, x)
    return np.tanh(mix + h_post[..., None] * layer_output[:, :, None, :])
