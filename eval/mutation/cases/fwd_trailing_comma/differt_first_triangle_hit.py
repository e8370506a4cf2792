"""DiffeRT: `_first_triangle_hit_by_ray_helper(mesh_id, vertices, triangles, flat_ray_origins,
flat_ray_directions)`, the first triangle each ray hits and the distance to it, as
`@partial(jax.custom_vjp, nondiff_argnums=(0,))` (the mesh's cache key is nondiff; the integer
`triangles` array is an ordinary argument, its cotangent None); the primal returns a pair with an
integer output (`out_faces`, -1 where nothing is hit) and a float output (`out_t`); fwd calls the
primal and saves five residuals, among them the integer faces it found; bwd takes `_mesh_id`
first, unpacks the cotangent pair as `_, grad_t = g` (the faces' cotangent ignored), differentiates
a closed-form distance through the found faces with `jax.vjp` of a nested function and returns
four cotangents, `grad_vertices, None, grad_ray_origins, grad_ray_directions`. The registration
is a call on fwd and bwd spread over lines.

Adapted from jeertmans/DiffeRT:differt/src/differt/geometry/_mesh.py:258 (commit d22adc7c; the
registration at :341, `_differentiable_distance` at :226, the caller `Mesh.first_triangle_hit_by_ray`
at :3097): the primal's warp kernel (a BVH query, `wp.jax_callable`) is replaced by a
brute-force Moller-Trumbore test of every ray against every triangle in jax.numpy (the same
algebra as `_differentiable_distance`, minimum over triangles); `mesh_id` only names the mesh in
the library's warp cache and is unused here. The caller, like the library's method, stops the
gradient of the faces and differentiates the distances with respect to the mesh and the ray
origins (directions fixed).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/fwd_trailing_comma/differt_first_triangle_hit', 'family': 'mutation', 'expect': 'unknown', 'library': 'DiffeRT', 'source': 'jeertmans/DiffeRT:differt/src/differt/geometry/_mesh.py:258', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'fwd_trailing_comma', 'base': 'differt_first_triangle_hit'}

def _differentiable_distance(vertices, ray_origins, ray_directions, out_faces, triangles):
    triangle_vertices = vertices[triangles]
    hit_triangle_vertices = triangle_vertices[out_faces]
    v0 = hit_triangle_vertices[:, 0, :]
    v1 = hit_triangle_vertices[:, 1, :]
    v2 = hit_triangle_vertices[:, 2, :]
    edge1 = v1 - v0
    edge2 = v2 - v0
    h = jnp.cross(ray_directions, edge2)
    a = jnp.sum(h * edge1, axis=-1)
    a = jnp.where(a == 0.0, jnp.inf, a)
    f = 1.0 / a
    s = ray_origins - v0
    q = jnp.cross(s, edge1)
    t = f * jnp.sum(q * edge2, axis=-1)
    is_hit = out_faces != -1
    return jnp.where(is_hit, t, jnp.inf)

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _first_triangle_hit_by_ray_helper(mesh_id, vertices, triangles, flat_ray_origins, flat_ray_directions):
    epsilon = 1e-05
    triangle_vertices = vertices[triangles]
    v0 = triangle_vertices[None, :, 0, :]
    edge1 = triangle_vertices[None, :, 1, :] - v0
    edge2 = triangle_vertices[None, :, 2, :] - v0
    d = flat_ray_directions[:, None, :]
    h = jnp.cross(d, edge2)
    a = jnp.sum(h * edge1, axis=-1)
    f = 1.0 / jnp.where(a == 0.0, jnp.inf, a)
    s = flat_ray_origins[:, None, :] - v0
    u = f * jnp.sum(s * h, axis=-1)
    q = jnp.cross(s, edge1)
    v = f * jnp.sum(d * q, axis=-1)
    t = f * jnp.sum(q * edge2, axis=-1)
    hit = (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (t > epsilon)
    t = jnp.where(hit, t, jnp.inf)
    out_t = jnp.min(t, axis=-1)
    out_faces = jnp.where(jnp.isfinite(out_t), jnp.argmin(t, axis=-1), -1).astype(jnp.int32)
    return (out_faces, out_t)

def _first_triangle_hit_by_ray_helper_fwd(mesh_id, vertices, triangles, flat_ray_origins, flat_ray_directions):
    out_faces, out_t = _first_triangle_hit_by_ray_helper(mesh_id, vertices, triangles, flat_ray_origins, flat_ray_directions)
    return (((out_faces, out_t), (vertices, triangles, flat_ray_origins, flat_ray_directions, out_faces)),)

def _first_triangle_hit_by_ray_helper_bwd(_mesh_id, res, g):
    vertices, triangles, flat_ray_origins, flat_ray_directions, out_faces = res
    _, grad_t = g

    def diff_fun(v, ro, rd):
        return _differentiable_distance(v, ro, rd, out_faces, triangles)
    _, vjp_fn = jax.vjp(diff_fun, vertices, flat_ray_origins, flat_ray_directions)
    grad_vertices, grad_ray_origins, grad_ray_directions = vjp_fn(grad_t)
    return (grad_vertices, None, grad_ray_origins, grad_ray_directions)
_first_triangle_hit_by_ray_helper.defvjp(_first_triangle_hit_by_ray_helper_fwd, _first_triangle_hit_by_ray_helper_bwd)
TRIANGLES = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6]], np.int32)
RAY_DIRECTIONS = np.array([[0.05, -0.03, 1.0], [-0.02, 0.04, 1.0], [0.0, 0.06, 1.0]], np.float32)
MESH_ID = 7

def eval_fn(vertices, ray_origins):
    out_faces, out_t = _first_triangle_hit_by_ray_helper(MESH_ID, vertices, jnp.asarray(TRIANGLES), ray_origins, jnp.asarray(RAY_DIRECTIONS))
    out_faces = jax.lax.stop_gradient(out_faces)
    return out_t * jnp.array([1.0, 0.5, -1.5], jnp.float32)

def eval_inputs():
    vertices = np.array([[-2.0, -2.0, 1.0], [2.0, -2.0, 1.4], [2.0, 2.0, 1.8], [-2.0, 2.0, 1.4], [-3.0, -3.0, 3.0], [3.0, -3.0, 3.2], [0.0, 3.0, 3.1]], np.float32)
    ray_origins = np.array([[0.7, -0.9, 0.1], [-0.8, 0.6, -0.2], [0.3, 1.1, 0.0]], np.float32)
    return (vertices, ray_origins)

def eval_reference(vertices, ray_origins):
    vt = np.asarray(vertices, np.float64)[TRIANGLES]
    ro = np.asarray(ray_origins, np.float64)
    rd = RAY_DIRECTIONS.astype(np.float64)
    out = np.empty(ro.shape[0])
    for r in range(ro.shape[0]):
        best = np.inf
        for tri in vt:
            e1, e2 = (tri[1] - tri[0], tri[2] - tri[0])
            h = np.cross(rd[r], e2)
            a = np.dot(h, e1)
            if a == 0.0:
                continue
            s = ro[r] - tri[0]
            u = np.dot(s, h) / a
            q = np.cross(s, e1)
            v = np.dot(rd[r], q) / a
            t = np.dot(q, e2) / a
            if u >= 0 and v >= 0 and (u + v <= 1) and (t > 1e-05):
                best = min(best, t)
        out[r] = best
    return out * np.array([1.0, 0.5, -1.5])
