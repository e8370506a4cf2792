"""TAPNet (Google DeepMind's tracking-any-point models), RoboTAP's clustering of TAPIR tracks by
independent motion: `make_projection_matrix(pred_mat, fourdof=True)` turns a network's raw
prediction of one 3x4 camera matrix per frame and motion cluster into rotation + translation by
Gram-Schmidt. Before the orthonormalisation the prediction passes through `f`, an identity with
gradient clipping defined *inside* the function body: a bare `@jax.custom_vjp` nested def
`f(x)`, fwd `f_fwd(x)` returning `f(x), tuple()` (an empty tuple of residuals, spelled as a
call), bwd `f_bwd(_, g)` (the residuals' parameter named `_`) returning
`(jnp.clip(g, -100, 100),)`, registered by the statement `f.defvjp(f_fwd, f_bwd)`, then applied
at once (`pred_mat = f(pred_mat)`), because the matrix from the network may be badly
conditioned. With `fourdof=True` the first axis is the fixed vertical, the second and third are
taken from the prediction restricted to the horizontal plane, and the third's sign is fixed by
the cross product. The caller is `project`: each cluster's 3D points (homogeneous) mapped by every
frame's matrix, divided by a clamped depth and scaled by the focal length.

Adapted from google-deepmind/tapnet:tapnet/robotap/tapir_clustering.py:51 (the nested custom_vjp
in `make_projection_matrix`, :42; commit c2cbab8), with `project` (:94) of the same file.
Changed: `einops.rearrange(pred_mat, 'n (c o i) -> n c o i', o=3, i=4)` is a reshape; the
Gaussian jitter that `project` adds to out-of-range points (drawn with `hk.next_rng_key()`) is
left out, so only the clamped depth remains (the inputs keep every depth inside its range).
At these inputs no cotangent exceeds the clip bound, so the gradient is the unclipped one.
"""
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/caller_f16_input/tapnet_projection_clip', 'family': 'mutation', 'expect': 'unknown', 'library': 'tapnet', 'source': 'google-deepmind/tapnet:tapnet/robotap/tapir_clustering.py:51', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'caller_f16_input', 'base': 'tapnet_projection_clip'}

def make_projection_matrix(pred_mat, fourdof=True):
    """Convert predicted projection matrix parameters to a projection matrix."""
    pred_mat = jnp.reshape(pred_mat, pred_mat.shape[:1] + (-1, 3, 4))

    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        return (f(x), tuple())

    def f_bwd(_, g):
        return (jnp.clip(g, -100, 100),)
    f.defvjp(f_fwd, f_bwd)
    pred_mat = f(pred_mat)
    if fourdof:
        orth1 = jnp.ones_like(pred_mat[..., 0:1, :-1]) * jnp.array([0.0, 0.0, 1.0])
        orth2 = pred_mat[..., 1:2, :-1] * jnp.array([1.0, 1.0, 0.0])
    else:
        orth1 = pred_mat[..., 0:1, :-1]
        orth1 = orth1 / jnp.sqrt(jnp.maximum(jnp.sum(jnp.square(orth1), axis=-1, keepdims=True), 1e-12))
        orth2 = pred_mat[..., 1:2, :-1]
        orth2 = orth2 - orth1 * jnp.sum(orth2 * orth1, axis=-1, keepdims=True)
    orth2 = orth2 / jnp.sqrt(jnp.maximum(jnp.sum(jnp.square(orth2), axis=-1, keepdims=True), 1e-12))
    orth3 = pred_mat[..., 2:3, :-1]
    if fourdof:
        orth3 *= jnp.array([1.0, 1.0, 0.0])
    else:
        orth3 = orth3 - orth1 * jnp.sum(orth3 * orth1, axis=-1, keepdims=True)
    orth3 = orth3 - orth2 * jnp.sum(orth3 * orth2, axis=-1, keepdims=True)
    orth3 = orth3 / jnp.sqrt(jnp.maximum(jnp.sum(jnp.square(orth3), axis=-1, keepdims=True), 1e-12))
    cross_prod = jnp.cross(orth1, orth2)
    orth3 = orth3 * jnp.sign(jnp.sum(cross_prod * orth3, axis=-1, keepdims=True))
    orth = jnp.concatenate([orth3, orth2, orth1], axis=-2)
    pred_mat = jnp.concatenate([orth, pred_mat[..., -1:]], axis=-1)
    return pred_mat

def project(pred_mat, pos_pred, cam_focal_length):
    """Project 3D points to 2D (depth clamped to [0.5, 2])."""
    pos_pred = jnp.concatenate([pos_pred[..., :3], pos_pred[..., 0:1] * 0 + 1], axis=-1)
    pred_pos = jnp.einsum('fcoi,nci->nfco', pred_mat, pos_pred)
    depth = jnp.minimum(2.0, jnp.maximum(pred_pos[..., 2:3] + 1.0, 0.5))
    all_pred = pred_pos[..., 0:2] * cam_focal_length / depth
    return (all_pred, depth[..., 0])

def eval_fn(pred_params, points):
    mats = make_projection_matrix(pred_params)
    uv, _ = project(mats, points, cam_focal_length=1.5)
    return uv

def _eval_inputs_f32():
    rng = np.random.RandomState(5)
    pred_params = rng.normal(size=(3, 2 * 12)).astype(np.float32)
    view = pred_params.reshape(3, 2, 3, 4)
    angle = rng.uniform(0, 2 * np.pi, size=(3, 2))
    view[..., 1, 0], view[..., 1, 1] = (1.2 * np.cos(angle), 1.2 * np.sin(angle))
    view[..., 2, 0], view[..., 2, 1] = (-0.9 * np.sin(angle + 0.3), 0.9 * np.cos(angle + 0.3))
    view[..., 2, 3] = 0.1 * rng.normal(size=(3, 2))
    points = (0.3 * rng.normal(size=(4, 2, 3))).astype(np.float32)
    return (pred_params, points)

def eval_inputs():
    args = list(_eval_inputs_f32())
    args[0] = jnp.asarray(args[0], jnp.float16)
    return tuple(args)

def eval_reference(pred_params, points):
    m = np.asarray(pred_params, np.float64).reshape(pred_params.shape[0], -1, 3, 4)
    h = np.array([1.0, 1.0, 0.0])
    o1 = np.broadcast_to(np.array([0.0, 0.0, 1.0]), m[..., 0:1, :3].shape)
    o2 = m[..., 1:2, :3] * h
    o2 = o2 / np.sqrt(np.maximum(np.sum(o2 ** 2, -1, keepdims=True), 1e-12))
    o3 = m[..., 2:3, :3] * h
    o3 = o3 - o2 * np.sum(o3 * o2, -1, keepdims=True)
    o3 = o3 / np.sqrt(np.maximum(np.sum(o3 ** 2, -1, keepdims=True), 1e-12))
    o3 = o3 * np.sign(np.sum(np.cross(o1, o2) * o3, -1, keepdims=True))
    mats = np.concatenate([np.concatenate([o3, o2, o1], axis=-2), m[..., -1:]], axis=-1)
    p = np.asarray(points, np.float64)
    p = np.concatenate([p, np.ones(p.shape[:-1] + (1,))], axis=-1)
    pos = np.einsum('fcoi,nci->nfco', mats, p)
    depth = np.minimum(2.0, np.maximum(pos[..., 2:3] + 1.0, 0.5))
    return pos[..., 0:2] * 1.5 / depth
