"""dm-haiku: a linear layer trained by feedback alignment, a custom_vjp defined inside the
implementation function and applied there; the bias may be None (tested with `is not None` in the
primal, fwd and bwd), fwd saves all four inputs, and bwd sends the output cotangent back through a
fixed feedback matrix instead of w.T and gives the feedback matrix a zero cotangent.

Adapted from google-deepmind/dm-haiku:haiku/_src/dfa/core.py:157 (at ad91d9d8, the commit "Add
Feedback Alignment implementation"; the `hk.Module` that creates the parameters is dropped and the
docstrings shortened). The rule is deliberately not the derivative in the inputs (it uses the
feedback matrix), so the module gives the gradient it means (`eval_grad_reference`).
"""
import functools
from functools import partial
from typing import Optional
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/defvjp_swapped/haiku_fa_linear', 'family': 'mutation', 'expect': 'unknown', 'library': 'dm-haiku', 'source': 'google-deepmind/dm-haiku:haiku/_src/dfa/core.py:157', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'defvjp_swapped', 'base': 'haiku_fa_linear'}

def _fa_linear_impl(inputs: jax.Array, weights: jax.Array, bias: Optional[jax.Array], feedback: jax.Array) -> jax.Array:
    """Linear layer whose backward pass uses the feedback matrix instead of weights.T."""

    @jax.custom_vjp
    def fa_linear(x, w, b, fb):
        """Forward pass: standard linear transformation."""
        out = jnp.dot(x, w)
        if b is not None:
            out = out + b
        return out

    def fwd(x, w, b, fb):
        """Forward pass with residual saving."""
        out = jnp.dot(x, w)
        if b is not None:
            out = out + b
        return (out, (x, w, b, fb))

    def bwd(residuals, output_grad):
        """Backward pass using the feedback matrix; returns the gradients of (x, w, b, fb)."""
        x, w, b, fb = residuals
        grad_w = jnp.dot(x.T, output_grad)
        if b is not None:
            grad_b = jnp.sum(output_grad, axis=0)
        else:
            grad_b = None
        grad_x = jnp.dot(output_grad, fb)
        grad_fb = jnp.zeros_like(fb)
        return (grad_x, grad_w, grad_b, grad_fb)
    fa_linear.defvjp(bwd, fwd)
    return fa_linear(inputs, weights, bias, feedback)

def eval_fn(x, w, b, fb):
    return _fa_linear_impl(x, w, b, fb)

def eval_inputs():
    x = np.array([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7]], np.float32)
    w = np.array([[0.2, -0.4], [0.9, 0.1], [-0.3, 0.6]], np.float32)
    b = np.array([0.05, -0.15], np.float32)
    fb = np.array([[0.7, -0.2, 0.4], [-0.5, 0.8, 0.3]], np.float32)
    return (x, w, b, fb)

def eval_reference(x, w, b, fb):
    return np.asarray(x, np.float64) @ np.asarray(w, np.float64) + np.asarray(b, np.float64)

def eval_grad_reference(x, w, b, fb):
    x, fb = (np.asarray(x, np.float64), np.asarray(fb, np.float64))
    g = np.ones((x.shape[0], np.shape(w)[1]))
    return (g @ fb, x.T @ g, g.sum(axis=0))
