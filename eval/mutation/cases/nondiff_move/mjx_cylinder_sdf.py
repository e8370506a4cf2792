"""MuJoCo MJX: the signed distance to a cylinder as a decorated custom_jvp whose rule, registered
with `@_cylinder.defjvp`, takes (position, size) and gives the gradient in the position only (the
size's tangent is dropped by `x_dot, _ = tangents`), with the singular points of the SDF removed.

Adapted from google-deepmind/mujoco:mjx/mujoco/mjx/_src/collision_sdf.py:91 (at a7255075; the
gradient helper `_cylinder_grad` is kept as written there, 2-space indentation as in MJX; the
caller vmaps over query points as MJX's `collider` wrapper vmaps over geom pairs). The primal's
locals `a0, a1` are named `d0, d1` here: the `neutral_names` spelling renames parameters to a0, a1, ...
and would otherwise capture them.
"""
import functools
from functools import partial
import jax
from jax import numpy as jp
import numpy as np
import jax.numpy as jnp
EVAL = {'id': 'mutation/nondiff_move/mjx_cylinder_sdf', 'family': 'mutation', 'expect': 'unknown', 'library': 'mujoco-mjx', 'source': 'google-deepmind/mujoco:mjx/mujoco/mjx/_src/collision_sdf.py:91', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'mjx_cylinder_sdf'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _cylinder(pos: jax.Array, size: jax.Array) -> jax.Array:
    d0 = jp.sqrt(pos[0] * pos[0] + pos[1] * pos[1]) - size[0]
    d1 = jp.abs(pos[2]) - size[1]
    b0 = jp.maximum(d0, 0)
    b1 = jp.maximum(d1, 0)
    return jp.minimum(jp.maximum(d0, d1), 0) + jp.sqrt(b0 * b0 + b1 * b1)

def _cylinder_grad(x: jax.Array, size: jax.Array) -> jax.Array:
    """Gradient of the cylinder SDF wrt the query point, singularities removed."""
    c = jp.sqrt(x[0] * x[0] + x[1] * x[1])
    e = jp.abs(x[2])
    a = jp.array([c - size[0], e - size[1]])
    b = jp.array([jp.maximum(a[0], 0), jp.maximum(a[1], 0)])
    j = jp.argmax(a)
    bnorm = jp.sqrt(b[0] * b[0] + b[1] * b[1])
    bnorm += jp.allclose(bnorm, 0) * 1e-12
    grada = jp.array([x[0] / (c + jp.allclose(c, 0) * 1e-12), x[1] / (c + jp.allclose(c, 0) * 1e-12), x[2] / (e + jp.allclose(e, 0) * 1e-12)])
    gradm = jp.array([[grada[0], grada[1], 0], [0, 0, grada[2]]])
    gradb = grada * b[jp.array([0, 0, 1])] / bnorm
    return jp.where(a[j] < 0, gradm[j], gradb)

@_cylinder.defjvp
def cylinder_jvp(x, primals, tangents):
    y, = primals
    _, = tangents
    x_dot = jnp.zeros_like(x)
    primal_out = _cylinder(x, y)
    tangent_out = jp.dot(_cylinder_grad(x, y), x_dot)
    return (primal_out, tangent_out)

def eval_fn(pos, size):
    return jax.vmap(_cylinder, in_axes=(0, None))(pos, size)

def eval_inputs():
    pos = np.array([[0.9, 0.4, 0.3], [0.1, -0.2, 1.6], [0.7, -0.6, -1.4], [0.1, 0.15, -0.3]], np.float32)
    return (pos, np.array([0.5, 1.0], np.float32))

def eval_reference(pos, size):
    pos, size = (np.asarray(pos, np.float64), np.asarray(size, np.float64))
    a0 = np.sqrt(pos[..., 0] ** 2 + pos[..., 1] ** 2) - size[0]
    a1 = np.abs(pos[..., 2]) - size[1]
    b0, b1 = (np.maximum(a0, 0), np.maximum(a1, 0))
    return np.minimum(np.maximum(a0, a1), 0) + np.sqrt(b0 * b0 + b1 * b1)
