"""ring (recurrent inertial graph-based estimator, SimiPixel): `safe_arcsin(x)`, a bare
module-level `@custom_jvp` (imported as `from jax import custom_jvp`) whose primal is
`jnp.arcsin(x)`; the rule, registered by the decorator `@safe_arcsin.defjvp` on
`_safe_arcsin_jvp(primal, tangent)` (parameters named in the singular), unpacks `(x,) = primal`
and `(x_dot,) = tangent` and returns the tangent `x_dot / sqrt(1 - clip(x, -1 + 1e-7, 1 -
1e-7) ** 2)`, the argument clipped inside the rule only, so the derivative stays finite at +-1.
The caller is ring's `quat_to_euler`, `@partial(jnp.vectorize, signature="(4)->(3)")`, which
takes the pitch with `safe_arcsin(jnp.clip(2 * q[1] * q[3] + 2 * q[0] * q[2], -1.0, 1.0))`
between two `arctan2`s (Tait-Bryan x-y'-z''), here applied to the orientation of estimated
IMU quaternions relative to a reference (`quat_mul(quat_inv(q_ref), q)`, both vectorised), the
estimates normalised first.

Adapted from SimiPixel/ring:src/ring/maths.py:68 (commit fa0ce95), with `quat_to_euler` (:283),
`quat_mul` (:101), `quat_inv` (:115) and `safe_normalize` (:39) of the same file. Changed: the
rule's primal line, which in the library calls the sibling `safe_arccos(x)` (so that under
`jax.jvp` / `grad` the primal output of `safe_arcsin` would be arccos(x), a defect of the
source), calls `safe_arcsin(x)`; `safe_normalize`'s `lax.cond` zero guard is kept as a `where`.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_jvp
EVAL = {'id': 'mutation/registration_table_loop/ring_safe_arcsin', 'family': 'mutation', 'expect': 'unknown', 'library': 'ring', 'source': 'SimiPixel/ring:src/ring/maths.py:68', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'registration_table_loop', 'base': 'ring_safe_arcsin'}

@custom_jvp
def safe_arcsin(x: jnp.ndarray) -> jnp.ndarray:
    """Trigonometric inverse sine, element-wise with safety clipping in grad."""
    return jnp.arcsin(x)

def _safe_arcsin_jvp(primal, tangent):
    x, = primal
    x_dot, = tangent
    primal_out = safe_arcsin(x)
    tangent_out = x_dot / jnp.sqrt(1.0 - jnp.clip(x, -1 + 1e-07, 1 - 1e-07) ** 2.0)
    return (primal_out, tangent_out)
_RULES = {safe_arcsin: (_safe_arcsin_jvp,)}
for _fn, _rules in _RULES.items():
    _fn.defjvp(*_rules)

@partial(jnp.vectorize, signature='(k)->(k)')
def safe_normalize(x):
    """Normalizes along the last axis; zero stays zero."""
    norm = jnp.linalg.norm(x)
    is_zero = norm == 0.0
    return jnp.where(is_zero, jnp.zeros_like(x), x / jnp.where(is_zero, 1.0, norm))

@partial(jnp.vectorize, signature='(4),(4)->(4)')
def quat_mul(u: jnp.ndarray, v: jnp.ndarray) -> jnp.ndarray:
    """Multiplies two quaternions."""
    q = jnp.array([u[0] * v[0] - u[1] * v[1] - u[2] * v[2] - u[3] * v[3], u[0] * v[1] + u[1] * v[0] + u[2] * v[3] - u[3] * v[2], u[0] * v[2] - u[1] * v[3] + u[2] * v[0] + u[3] * v[1], u[0] * v[3] + u[1] * v[2] - u[2] * v[1] + u[3] * v[0]])
    return q

def quat_inv(q: jnp.ndarray) -> jnp.ndarray:
    """Calculates the inverse of quaternion q."""
    return q * jnp.array([1.0, -1, -1, -1])

@partial(jnp.vectorize, signature='(4)->(3)')
def quat_to_euler(q: jnp.ndarray) -> jnp.ndarray:
    """Converts quaternions to euler rotations in radians (Tait-Bryan x-y'-z'')."""
    q = quat_inv(q)
    z = jnp.arctan2(-2 * q[1] * q[2] + 2 * q[0] * q[3], q[1] * q[1] + q[0] * q[0] - q[3] * q[3] - q[2] * q[2])
    y = safe_arcsin(jnp.clip(2 * q[1] * q[3] + 2 * q[0] * q[2], -1.0, 1.0))
    x = jnp.arctan2(-2 * q[2] * q[3] + 2 * q[0] * q[1], q[3] * q[3] - q[2] * q[2] - q[1] * q[1] + q[0] * q[0])
    return jnp.array([x, y, z])
Q_REF = np.array([0.96, 0.1, -0.2, 0.15], np.float32) / np.linalg.norm([0.96, 0.1, -0.2, 0.15])

def relative_euler(q_est):
    """Euler angles of the normalised estimates relative to the reference orientation."""
    q_est = safe_normalize(q_est)
    return quat_to_euler(quat_mul(quat_inv(jnp.asarray(Q_REF)), q_est))

def eval_fn(q_est):
    return relative_euler(q_est)

def eval_inputs():
    return (np.array([[0.9, 0.3, 0.1, -0.2], [0.7, -0.2, 0.5, 0.3], [0.8, 0.1, -0.4, 0.4]], np.float32),)

def eval_reference(q_est):
    q = np.asarray(q_est, np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    u = Q_REF.astype(np.float64) * np.array([1.0, -1, -1, -1])
    w = np.stack([u[0] * q[:, 0] - u[1] * q[:, 1] - u[2] * q[:, 2] - u[3] * q[:, 3], u[0] * q[:, 1] + u[1] * q[:, 0] + u[2] * q[:, 3] - u[3] * q[:, 2], u[0] * q[:, 2] - u[1] * q[:, 3] + u[2] * q[:, 0] + u[3] * q[:, 1], u[0] * q[:, 3] + u[1] * q[:, 2] - u[2] * q[:, 1] + u[3] * q[:, 0]], axis=-1) * np.array([1.0, -1, -1, -1])
    z = np.arctan2(-2 * w[:, 1] * w[:, 2] + 2 * w[:, 0] * w[:, 3], w[:, 1] ** 2 + w[:, 0] ** 2 - w[:, 3] ** 2 - w[:, 2] ** 2)
    y = np.arcsin(np.clip(2 * w[:, 1] * w[:, 3] + 2 * w[:, 0] * w[:, 2], -1.0, 1.0))
    x = np.arctan2(-2 * w[:, 2] * w[:, 3] + 2 * w[:, 0] * w[:, 1], w[:, 3] ** 2 - w[:, 2] ** 2 - w[:, 1] ** 2 + w[:, 0] ** 2)
    return np.stack([x, y, z], axis=-1)
