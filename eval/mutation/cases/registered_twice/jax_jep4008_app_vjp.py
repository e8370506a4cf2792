"""jax: a function argument in nondiff_argnums of a custom_vjp.

Adapted from jax-ml/jax:docs/jep/4008-custom-vjp-update.md:73.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/registered_twice/jax_jep4008_app_vjp', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/jep/4008-custom-vjp-update.md:73', 'argnums': (1,), 'static': (0,), 'extra': ['grad_jit'], 'operator': 'registered_twice', 'base': 'jax_jep4008_app_vjp'}

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def app(f, x):
    return f(x)

def app_fwd(f, x):
    return (app(f, x), x)

def app_bwd(f, x, g):
    return (5 * g,)
app.defvjp(app_fwd, app_bwd)
app.defvjp(app_fwd, app_bwd)

def eval_fn(f, x):
    return app(f, x)

def eval_inputs():
    return (jnp.sin, np.array([0.5, 1.5, -0.7], np.float32))

def eval_reference(f, x):
    return np.sin(np.asarray(x, np.float64))

def eval_grad_reference(f, x):
    return (np.full(np.shape(x), 5.0),)
