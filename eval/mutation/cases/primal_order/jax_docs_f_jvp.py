"""jax: sin(x) * y with a decorated jvp rule.

Adapted from jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:76.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/primal_order/jax_docs_f_jvp', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:76', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'primal_order', 'base': 'jax_docs_f_jvp'}

@jax.custom_jvp
def f(x, y):
    return jnp.sin(x) * y

@f.defjvp
def f_jvp(primals, tangents):
    y, x = primals
    x_dot, y_dot = tangents
    primal_out = f(x, y)
    tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
    return (primal_out, tangent_out)

def eval_fn(x, y):
    return f(x, y)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.25], np.float32))

def eval_reference(x, y):
    x, y = (np.asarray(x, np.float64), np.asarray(y, np.float64))
    return np.sin(x) * y
