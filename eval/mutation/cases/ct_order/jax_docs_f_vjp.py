"""jax: sin(x) * y with fwd/bwd rules.

Adapted from jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:104.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/ct_order/jax_docs_f_vjp', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:104', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'ct_order', 'base': 'jax_docs_f_vjp'}

@jax.custom_vjp
def f(x, y):
    return jnp.sin(x) * y

def f_fwd(x, y):
    return (f(x, y), (jnp.cos(x), jnp.sin(x), y))

def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (sin_x * g, cos_x * g * y)
f.defvjp(f_fwd, f_bwd)

def eval_fn(x, y):
    return f(x, y)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.25], np.float32))

def eval_reference(x, y):
    x, y = (np.asarray(x, np.float64), np.asarray(y, np.float64))
    return np.sin(x) * y
