"""jax: logaddexp as a decorated custom_jvp whose rule, registered with `@logaddexp.defjvp`, is
written in `lax` primitives and guards infinities with a helper.

Adapted from jax-ml/jax:jax/_src/lax/other.py:261 (the complex-input branch and dtype checks are
dropped; `lax._isnan`, `lax._const` and `lax._zeros` are written with `lax.ne` and `jnp`).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/jvp_tangent_structure/jax_logaddexp', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/lax/other.py:261', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_structure', 'base': 'jax_logaddexp'}

def _replace_inf(x):
    inf = jnp.array(float('inf'), dtype=x.dtype)
    return lax.select(lax.eq(x, inf), jnp.zeros_like(x), x)

@jax.custom_jvp
def logaddexp(x1, x2, /):
    """Compute log(exp(x1) + exp(x2)) avoiding overflow."""
    x1_arr = jnp.asarray(x1)
    x2_arr = jnp.asarray(x2)
    assert x1_arr.dtype == x2_arr.dtype
    amax = lax.max(x1_arr, x2_arr)
    delta = lax.sub(x1_arr, x2_arr)
    return lax.select(lax.ne(delta, delta), lax.add(x1_arr, x2_arr), lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))

@logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    x1, x2 = primals
    t1, t2 = tangents
    primal_out = logaddexp(x1, x2)
    tangent_out = lax.add(lax.mul(t1, lax.exp(lax.sub(_replace_inf(x1), _replace_inf(primal_out)))), lax.mul(t2, lax.exp(lax.sub(_replace_inf(x2), _replace_inf(primal_out)))))
    return (primal_out, (tangent_out,))

def eval_fn(x1, x2):
    return logaddexp(x1, x2)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.25], np.float32))

def eval_reference(x1, x2):
    x1, x2 = (np.asarray(x1, np.float64), np.asarray(x2, np.float64))
    return np.logaddexp(x1, x2)
