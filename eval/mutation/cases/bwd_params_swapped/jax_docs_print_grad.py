"""jax: an identity whose bwd prints the cotangent.

Adapted from jax-ml/jax:docs/debugging/print_breakpoint.md:118.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/jax_docs_print_grad', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/debugging/print_breakpoint.md:118', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'jax_docs_print_grad'}

@jax.custom_vjp
def print_grad(x):
    return x

def print_grad_fwd(x):
    return (x, None)

def print_grad_bwd(x_grad, _):
    jax.debug.print('x_grad: {}', x_grad)
    return (x_grad,)
print_grad.defvjp(print_grad_fwd, print_grad_bwd)

def eval_fn(x):
    return jnp.sin(print_grad(x))

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))
