"""DeepQMC: `angle(i0, i1, i2, coords)`, the bond angle spanned at atom i1, as a bare `@jax.custom_vjp`
whose atom indices are ordinary (non-nondiff) integer arguments: bwd returns `None, None, None,`
for them; fwd does not call the primal but a second custom function,
`@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))` `custom_jvp_angle`, registered with the
decorator `@custom_jvp_angle.defjvp` on a rule that takes the three indices first and calls the
custom_vjp `angle` for its primal output, so that forward-over-reverse (`jax.hessian`) is defined;
the residuals are the inputs themselves, `(i0, i1, i2, coords)`, unpacked in bwd from a parameter
named `cache`; the gradient is the analytic one of the arccos (well defined at 0 and pi).

Adapted from deepqmc/deepqmc:src/deepqmc/geom/angle.py:66 (commit edf373e; the custom_jvp at :49,
its rule at :55, the registration at :102), the helpers `difference`, `_bare_angle` and
`_angle_gradient` as the library writes them. The caller measures the H-O-H angle and the two
H-C-O angles of a small molecule (coordinates in bohr) and sums them with weights.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/bwd_ct_atleast_1d/deepqmc_angle', 'family': 'mutation', 'expect': 'unknown', 'library': 'deepqmc', 'source': 'deepqmc/deepqmc:src/deepqmc/geom/angle.py:66', 'argnums': (0,), 'extra': ['grad_jit', 'hessian'], 'operator': 'bwd_ct_atleast_1d', 'base': 'deepqmc_angle'}

def difference(i0, i1, coords, normalize=False):
    """Compute the difference vector between two atoms."""
    difference = coords[i1] - coords[i0]
    if normalize:
        norm = jnp.linalg.norm(difference)
        return difference / norm
    return difference

def _bare_angle(i0, i1, i2, coords):
    """A helper function which computes the bond angle (ill-defined derivative at 0 and pi)."""
    vi = difference(i1, i0, coords, normalize=True)
    vk = difference(i1, i2, coords, normalize=True)
    a = jnp.clip(jnp.dot(vi, vk), -1, 1)
    return jnp.arccos(a)

def _angle_gradient(i0, i1, i2, coords):
    """A helper function which computes a well-defined gradient of the angle."""
    vi = difference(i1, i0, coords, normalize=True)
    vk = difference(i1, i2, coords, normalize=True)
    ww = jnp.cross(vi, vk)
    w = ww / jnp.linalg.norm(ww)
    l_i = jnp.linalg.norm(difference(i1, i0, coords, normalize=False))
    l_k = jnp.linalg.norm(difference(i1, i2, coords, normalize=False))
    first_term = jnp.cross(vi, w) / l_i
    second_term = jnp.cross(w, vk) / l_k
    return jnp.zeros_like(coords).at[i0].set(first_term).at[i2].set(second_term).at[i1].set(-first_term - second_term)

@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))
def custom_jvp_angle(i0, i1, i2, coords):
    """Compute the angle with a custom JVP rule."""
    return _bare_angle(i0, i1, i2, coords)

@custom_jvp_angle.defjvp
def angle_jvp(i0, i1, i2, primals, tangents):
    """The jvp rule of the ``custom_jvp_angle``."""
    coords, = primals
    coords_tangent, = tangents
    primals_out = angle(i0, i1, i2, coords)
    jacobian = _angle_gradient(i0, i1, i2, coords)
    tangents_out = jnp.dot(jacobian.flatten(), coords_tangent.flatten())
    return (primals_out, tangents_out)

@jax.custom_vjp
def angle(i0, i1, i2, coords):
    """Compute the angle between three atoms (radians, between 0 and pi)."""
    return _bare_angle(i0, i1, i2, coords)

def angle_fwd(i0, i1, i2, coords):
    """The forward pass of the VJP rule of the ``angle`` function."""
    return (custom_jvp_angle(i0, i1, i2, coords), (i0, i1, i2, coords))

def angle_bwd(cache, gradient):
    """The backward pass of the VJP rule of the ``angle`` function."""
    i0, i1, i2, coords = cache
    return (None, None, None, jnp.atleast_1d(gradient * _angle_gradient(i0, i1, i2, coords)))
angle.defvjp(angle_fwd, angle_bwd)

def eval_fn(coords):
    hoh = angle(2, 1, 3, coords)
    hco = angle(4, 0, 1, coords)
    hco2 = angle(5, 0, 1, coords)
    return jnp.stack([hoh, 0.5 * hco, 2.0 * hco2])

def eval_inputs():
    coords = np.array([[0.0, 0.0, 0.0], [2.1, 0.3, -0.2], [2.9, 1.8, 0.1], [2.8, -1.2, 0.6], [-0.8, 1.6, 0.4], [-0.7, -1.4, -0.9]], np.float32)
    return (coords,)

def _angle_np(i0, i1, i2, c):
    a = c[i0] - c[i1]
    b = c[i2] - c[i1]
    return np.arccos(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

def eval_reference(coords):
    c = np.asarray(coords, np.float64)
    return np.array([_angle_np(2, 1, 3, c), 0.5 * _angle_np(4, 0, 1, c), 2.0 * _angle_np(5, 0, 1, c)])
