"""jax-md: rotate a vector by a unit quaternion; bwd projects dq onto the tangent space.

Adapted from jax-md/jax-md:jax_md/rigid_body.py:146.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_drop_ct/jaxmd_quaternion_rotate', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-md', 'source': 'jax-md/jax-md:jax_md/rigid_body.py:146', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'bwd_drop_ct', 'base': 'jaxmd_quaternion_rotate'}

def _quaternion_multiply(lhs, rhs):
    wl, xl, yl, zl = (lhs[0], lhs[1], lhs[2], lhs[3])
    wr, xr, yr, zr = (rhs[0], rhs[1], rhs[2], rhs[3])
    return jnp.stack([wl * wr - xl * xr - yl * yr - zl * zr, wl * xr + xl * wr + yl * zr - zl * yr, wl * yr - xl * zr + yl * wr + zl * xr, wl * zr + xl * yr - yl * xr + zl * wr])

def _quaternion_conjugate(q):
    return q * jnp.array([1.0, -1.0, -1.0, -1.0])

def _quaternion_rotate_raw(q, v):
    v = jnp.concatenate([jnp.zeros((1,), v.dtype), v])
    q = _quaternion_multiply(q, _quaternion_multiply(v, _quaternion_conjugate(q)))
    return q[1:]

@jax.custom_vjp
def _quaternion_rotate(q, v):
    return _quaternion_rotate_raw(q, v)

def _quaternion_rotate_fwd(q, v):
    return (_quaternion_rotate(q, v), (q, v))

def _quaternion_rotate_bwd(res, g):
    q, v = res
    _, vjp_fn = jax.vjp(_quaternion_rotate_raw, q, v)
    dq, dv = vjp_fn(g)
    return (dq - q @ dq * q,)
_quaternion_rotate.defvjp(_quaternion_rotate_fwd, _quaternion_rotate_bwd)

def eval_fn(q, v):
    return _quaternion_rotate(q / jnp.linalg.norm(q), v) * jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([0.9, 0.2, -0.3, 0.4], np.float32), np.array([0.5, 1.5, -0.7], np.float32))

def _qmul(a, b):
    wl, xl, yl, zl = a
    wr, xr, yr, zr = b
    return np.array([wl * wr - xl * xr - yl * yr - zl * zr, wl * xr + xl * wr + yl * zr - zl * yr, wl * yr - xl * zr + yl * wr + zl * xr, wl * zr + xl * yr - yl * xr + zl * wr])

def eval_reference(q, v):
    q, v = (np.asarray(q, np.float64), np.asarray(v, np.float64))
    q = q / np.linalg.norm(q)
    vq = np.concatenate([[0.0], v])
    return _qmul(q, _qmul(vq, q * np.array([1.0, -1.0, -1.0, -1.0])))[1:] * np.array([1.0, 2.0, 3.0])
