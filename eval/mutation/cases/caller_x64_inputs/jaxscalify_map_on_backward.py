"""jax-scalify (Graphcore's scaled arithmetic for JAX): `map_on_backward(f, arg)`, declared
`@partial(jax.custom_vjp, nondiff_argnums=(0,))` with a function `f` as its nondiff argument: the
identity on the forward pass, `f` applied to the gradient on the backward pass. fwd
`map_on_backward_fwd(f, arg)` returns `arg` with the residual `None`; bwd
`map_on_backward_bwd(f, _, grad)` (the nondiff function first, the unused residual as `_`) returns
the 1-tuple `(f(grad),)`.

Adapted from graphcore-research/jax-scalify:jax_scalify/ops/utils.py:24 (commit f9aa9af).
Changed: nothing in the definition (`from functools import partial` kept). Its sibling
`map_on_forward` in the same file is not taken: its fwd returns `arg` where the primal returns
`f(arg)`. The caller is a two-layer block whose hidden activations go through `map_on_backward`
with a module-level gradient scaler (a loss-scale divisor of 4, as a scaled-arithmetic pipeline
rescales its gradients); the gradient the rule means (the hidden path's cotangent scaled by 1/4)
is `eval_grad_reference`.
"""
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
jax.config.update('jax_enable_x64', True)
EVAL = {'id': 'mutation/caller_x64_inputs/jaxscalify_map_on_backward', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-scalify', 'source': 'graphcore-research/jax-scalify:jax_scalify/ops/utils.py:24', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'caller_x64_inputs', 'base': 'jaxscalify_map_on_backward'}

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def map_on_backward(f, arg):
    """Map a function on the gradient/backward pass. No-op/identity on forward."""
    return arg

def map_on_backward_fwd(f, arg):
    return (arg, None)

def map_on_backward_bwd(f, _, grad):
    return (f(grad),)
map_on_backward.defvjp(map_on_backward_fwd, map_on_backward_bwd)
GRAD_SCALE = 0.25

def unscale_grad(g):
    return g * GRAD_SCALE

def eval_fn(w, x):
    w = jax.tree_util.tree_map(lambda _v: jnp.asarray(_v, jnp.float64), w)
    x = jax.tree_util.tree_map(lambda _v: jnp.asarray(_v, jnp.float64), x)
    hidden = jnp.tanh(x @ w)
    hidden = map_on_backward(unscale_grad, hidden)
    return hidden ** 2 + x[:, :2]

def eval_inputs():
    return (np.array([[0.4, -0.3], [0.2, 0.8], [-0.5, 0.1]], np.float32), np.array([[1.0, -0.5, 0.3], [0.2, 0.7, -1.1], [-0.6, 0.4, 0.9], [0.5, 0.5, -0.2]], np.float32))

def eval_reference(w, x):
    w = np.asarray(w, np.float64)
    x = np.asarray(x, np.float64)
    return np.tanh(x @ w) ** 2 + x[:, :2]

def eval_grad_reference(w, x):
    w = np.asarray(w, np.float64)
    x = np.asarray(x, np.float64)
    h = np.tanh(x @ w)
    dpre = GRAD_SCALE * 2 * h * (1 - h ** 2)
    dx = dpre @ w.T
    dx[:, :2] += 1.0
    return (x.T @ dpre, dx)
