"""optimism: `safe_sqrt`, a bare `@custom_jvp` (imported by name, `from jax import custom_jvp`)
whose rule, registered with the decorator `@safe_sqrt.defjvp`, takes `(xt, vt)`, unpacks them
as `x, = xt` and `v, = vt`, and picks the derivative with `lax.cond(x <= 0, ...)`: zero at and
below zero, `0.5 / sqrt(x)` above, so the square root of a vanishing quantity has a finite
gradient. The rule works on a scalar (the `lax.cond` predicate), so the library maps it over
arrays with `vmap`, as here.

Adapted from sandialabs/optimism:optimism/Math.py:12 (commit 44438c1), with `np` for jax.numpy as
the library binds it (`optimism.JaxConfig`); the caller is a von Mises-like effective stress
`sqrt(1.5 s:s + c)` mapped over a batch of deviatoric states, a use the library makes of it.
"""
import jax
import jax.numpy as np
from jax import custom_jvp, lax
import numpy as onp
import jax.numpy as jnp
import functools
EVAL = {'id': 'mutation/nondiff_move/optimism_safe_sqrt', 'family': 'mutation', 'expect': 'unknown', 'library': 'optimism', 'source': 'sandialabs/optimism:optimism/Math.py:12', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'optimism_safe_sqrt'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def safe_sqrt(x):
    return np.sqrt(x)

@safe_sqrt.defjvp
def safe_sqrt_jvp(x, xt, vt):
    () = xt
    () = vt
    v = jnp.zeros_like(x)
    f = safe_sqrt(x)
    df = v * lax.cond(x <= 0, lambda x: 0.0, lambda x: 0.5 / f, x)
    return (f, df)

def effective_stress(s):
    return safe_sqrt(1.5 * np.sum(s * s) + 0.04)

def eval_fn(s):
    return jax.vmap(effective_stress)(s) * np.array([1.0, -2.0, 0.5], np.float32)

def eval_inputs():
    return (onp.array([[0.3, -0.1, 0.2], [0.05, 0.4, -0.3], [-0.2, 0.1, 0.6]], onp.float32),)

def eval_reference(s):
    s64 = onp.asarray(s, onp.float64)
    return onp.sqrt(1.5 * onp.sum(s64 * s64, axis=1) + 0.04) * onp.array([1.0, -2.0, 0.5])
