"""jax: sin with cos(x) as the residual; bwd names its parameters (cos_x, y_bar).

Adapted from jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:861.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/fwd_no_residual/jax_docs_sin_residual', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:861', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'fwd_no_residual', 'base': 'jax_docs_sin_residual'}

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return f(x)

def f_bwd(cos_x, y_bar):
    return (cos_x * y_bar,)
f.defvjp(f_fwd, f_bwd)

def eval_fn(x):
    return f(x) * x

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sin(x) * x
