"""jax: layer normalization with nondiff eps and backward implementation; fwd saves the inputs, the
mean and the reciprocal std, bwd returns (dx, dw, dbias), or a reference vjp's tuple.

Adapted from jax-ml/jax:jax/experimental/pallas/ops/gpu/layer_norm.py:309 (the Pallas kernels
written in jnp).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_none_for_diff/jax_pallas_layer_norm', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/experimental/pallas/ops/gpu/layer_norm.py:309', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'bwd_none_for_diff', 'base': 'jax_pallas_layer_norm'}

def layer_norm_reference(x, weight, bias, *, eps=1e-05):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * weight + bias

@partial(jax.custom_vjp, nondiff_argnums=[3, 4])
def layer_norm(x, weight, bias, eps=1e-05, backward_pass_impl='jnp'):
    return layer_norm_reference(x, weight, bias, eps=eps)

def layer_norm_forward(x, weight, bias, eps=1e-05, backward_pass_impl='jnp'):
    del backward_pass_impl
    mean = jnp.mean(x, axis=-1)
    rstd = lax.rsqrt(jnp.mean((x - mean[..., None]) ** 2, axis=-1) + eps)
    out = (x - mean[..., None]) * rstd[..., None] * weight + bias
    return (out, (x, weight, bias, mean, rstd))

def layer_norm_backward(eps, backward_pass_impl, res, do):
    x, weight, bias, mean, rstd = res
    if backward_pass_impl == 'xla':
        return jax.vjp(partial(layer_norm_reference, eps=eps), x, weight, bias)[1](do)
    a_hat = (x - mean[..., None]) * rstd[..., None]
    wdout = weight * do
    mean1 = jnp.mean(a_hat * wdout, axis=-1, keepdims=True)
    mean2 = jnp.mean(wdout, axis=-1, keepdims=True)
    dx = (wdout - (a_hat * mean1 + mean2)) * rstd[..., None]
    dw = (do * a_hat).sum(axis=0)
    dbias = do.sum(axis=0)
    return (None, dw, dbias)
layer_norm.defvjp(layer_norm_forward, layer_norm_backward)

def eval_fn(x, weight, bias):
    return layer_norm(x, weight, bias, 1e-05, 'jnp') * jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([[0.5, 1.5, -0.7], [2.0, -1.0, 0.25]], np.float32), np.array([1.0, 0.5, 2.0], np.float32), np.array([0.1, -0.2, 0.3], np.float32))

def eval_reference(x, weight, bias):
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-05) * np.asarray(weight, np.float64) + np.asarray(bias, np.float64)
    return y * np.array([1.0, 2.0, 3.0])
