"""tensorcircuit: Bessel functions J_0..J_{k-1}(x) by Miller's backward recurrence, a
`@partial(jax.custom_jvp, nondiff_argnums=(0, 2))` whose nondiff arguments are the order count
`k` and the recurrence length `M` (Python ints, used for shapes and in Python control flow in the
rule), registered with `@bessel_jv_jax_rescaled.defjvp` on a rule typed
`(k, M, primals, tangents)`. The rule evaluates one order more (with `max(M, k + 2)` steps) and
uses J_0' = -J_1 and J_n' = (J_{n-1} - J_{n+1}) / 2. The primal goes through a helper jitted with
`static_argnums=(0, 2)`.

Adapted from tensorcircuit/tensorcircuit-ng:tensorcircuit/backends/jax_ops.py:376
(`bessel_jv_jax_rescaled`; the recurrence of `_bessel_jv_scalar_rescaled` is shortened: the
rescaling is a `jnp.where` instead of a `lax.cond` with a dtype-dependent threshold, and the
x == 0 branch is dropped since the inputs are away from zero).
"""
import functools
from functools import partial
from typing import Tuple
import jax
import jax.numpy as jnp
import numpy as np
from scipy import special
EVAL = {'id': 'mutation/checkpoint_caller/tensorcircuit_bessel_jv', 'family': 'mutation', 'expect': 'unknown', 'library': 'tensorcircuit', 'source': 'tensorcircuit/tensorcircuit-ng:tensorcircuit/backends/jax_ops.py:376', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'checkpoint_caller', 'base': 'tensorcircuit_bessel_jv'}

def _miller(k: int, M: int, x: jnp.ndarray) -> jnp.ndarray:
    """J_0(x), ..., J_{k-1}(x): backward recurrence from order M, normalised by Neumann's sum."""

    def body(i, state):
        m = M - i
        f_m, f_m_p1, f_vals = state
        f_m_m1 = 2.0 * m / x * f_m - f_m_p1
        big = jnp.abs(f_m_m1) > 1e+20
        scale = jnp.where(big, f_m_m1, 1.0)
        f_vals = f_vals / scale
        f_vals = f_vals.at[m - 1].set(f_m_m1 / scale)
        return (f_m_m1 / scale, f_m / scale, f_vals)
    f_vals = jnp.zeros(M + 1, dtype=x.dtype).at[M].set(1e-30)
    init = (jnp.asarray(1e-30, x.dtype), jnp.asarray(0.0, x.dtype), f_vals)
    _, _, f_vals = jax.lax.fori_loop(0, M, body, init)
    norm = f_vals[0] + 2.0 * jnp.sum(f_vals[2::2])
    return f_vals[:k] / norm

@partial(jax.jit, static_argnums=(0, 2))
def _bessel_jv_jax_rescaled(k: int, x: jnp.ndarray, M: int) -> jnp.ndarray:
    if M <= k:
        raise ValueError(f'Recurrence length M ({M}) must be greater than the order k ({k}).')
    return _miller(k, M, x)

@partial(jax.custom_jvp, nondiff_argnums=(0, 2))
def bessel_jv_jax_rescaled(k: int, x: jnp.ndarray, M: int) -> jnp.ndarray:
    """J_0(x), ..., J_{k-1}(x), with an analytic derivative in `x`."""
    return _bessel_jv_jax_rescaled(k, x, M)

@bessel_jv_jax_rescaled.defjvp
def _bessel_jv_jax_rescaled_jvp(k: int, M: int, primals: Tuple[jnp.ndarray], tangents: Tuple[jnp.ndarray]) -> Tuple[jnp.ndarray, jnp.ndarray]:
    x, = primals
    x_dot, = tangents
    extended_M = max(M, k + 2)
    extended = _bessel_jv_jax_rescaled(k + 1, x, extended_M)
    if extended_M == M:
        values = extended[:-1]
    else:
        values = _bessel_jv_jax_rescaled(k, x, M)
    derivative = jnp.concatenate([-extended[1:2], (extended[:-2] - extended[2:]) / 2.0])
    return (values, derivative * x_dot)
_WEIGHTS = np.array([1.0, -0.5, 2.0, 0.75, -1.25], np.float32)

def eval_fn(x):
    return bessel_jv_jax_rescaled(5, x, 40) * _WEIGHTS

def eval_inputs():
    return (np.float32(2.3),)

def eval_reference(x):
    return special.jv(np.arange(5), np.float64(x)) * _WEIGHTS.astype(np.float64)

def checkpoint_usage(*args):
    f = jax.checkpoint(eval_fn, static_argnums=())
    return jax.grad(lambda *a: jnp.sum(f(*a)), argnums=(0,))(*args)

def eval_custom():
    args = tuple(eval_inputs())
    return {'checkpoint_usage': lambda: (checkpoint_usage(*args), jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0,))(*args))}
