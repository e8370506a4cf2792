"""AlphaFold 3 (google-deepmind): the largest eigenvector of a symmetric matrix,
`largest_evec(m)`, a bare module-level `@jax.custom_jvp` over `jnp.linalg.eigh` whose rule is
defined as a plain function and registered by a statement, `largest_evec.defjvp(largest_evec_jvp)`.
The rule unpacks `(m,) = primals` and `(t,) = tangents`, recomputes the eigendecomposition and
returns the first-order perturbation of the top eigenvector, `sum_j v_j (v_j^T t v) / (l - l_j)`,
with the eigenvalue gaps floored at 1e-6 (`eigh`'s own derivative divides by every gap,
including those of the degenerate ones). The caller is `Rot3Array.from_svd`, which projects an
arbitrary 3x3 matrix onto the nearest rotation through the quaternion of the 4x4 symmetric
matrix built from it by a fixed linear map (`MATRIX_SVD_QUAT_FACTORS`, Horn's method), then
`from_quaternion(...).inverse()`.

Adapted from google-deepmind/alphafold3:src/alphafold3/jax/geometry/rotation_matrix.py:77 (commit
5ac7583; the caller `from_svd` at line 237). Changed: the struct-of-arrays `Rot3Array`
(nine component fields, `struct_of_array.StructOfArray`) is a `typing.NamedTuple` of the nine
components with the three methods the projection needs (`from_quaternion`, `from_svd`,
`inverse`) and a `to_array`; the SVD branch (`use_quat_formula=False`) is dropped; the 16x9
factor matrix is built by the same assignments. The caller projects two noisy rotations and
differentiates the entries of the matrices.
"""
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/vectorize_under_creator/alphafold3_largest_evec', 'family': 'mutation', 'expect': 'unknown', 'library': 'alphafold3', 'source': 'google-deepmind/alphafold3:src/alphafold3/jax/geometry/rotation_matrix.py:77', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'vectorize_under_creator', 'base': 'alphafold3_largest_evec'}

def make_matrix_svd_factors() -> np.ndarray:
    """Factors turning a flattened 3x3 matrix into the symmetric 4x4 matrix of Horn's method."""
    factors = np.zeros((16, 9), dtype=np.float32)
    factors[0, [0, 4, 8]] = 1.0
    factors[[1, 4], 5] = 1.0
    factors[[1, 4], 7] = -1.0
    factors[[2, 8], 6] = 1.0
    factors[[2, 8], 2] = -1.0
    factors[[3, 12], 1] = 1.0
    factors[[3, 12], 3] = -1.0
    factors[5, 0] = 1.0
    factors[5, [4, 8]] = -1.0
    factors[[6, 9], 1] = 1.0
    factors[[6, 9], 3] = 1.0
    factors[[7, 13], 2] = 1.0
    factors[[7, 13], 6] = 1.0
    factors[10, 4] = 1.0
    factors[10, [0, 8]] = -1.0
    factors[[11, 14], 5] = 1.0
    factors[[11, 14], 7] = 1.0
    factors[15, 8] = 1.0
    factors[15, [0, 4]] = -1.0
    return factors

@jax.custom_jvp
@jnp.vectorize
def largest_evec(m):
    _, eigvecs = jnp.linalg.eigh(m)
    return eigvecs[..., -1]

def largest_evec_jvp(primals, tangents):
    """jvp for largest eigenvector."""
    m, = primals
    t, = tangents
    eigvals, eigvecs = jnp.linalg.eigh(m)
    large_eigvec = eigvecs[..., -1]
    large_eigval = eigvals[..., -1]
    other_eigvals = eigvals[..., :-1]
    other_eigvecs = eigvecs[..., :-1]
    other_ev_times_tangent = jnp.einsum('...aj,...ab -> ...bj', other_eigvecs, t, precision=jax.lax.Precision.HIGHEST)
    nominator = jnp.einsum('...bj,...b -> ...j', other_ev_times_tangent, large_eigvec, precision=jax.lax.Precision.HIGHEST)
    prefactor = nominator / jnp.maximum(large_eigval[..., None] - other_eigvals, 1e-06)
    grad = jnp.sum(prefactor[..., None, :] * other_eigvecs, axis=-1)
    return (large_eigvec, grad)
largest_evec.defjvp(largest_evec_jvp)
MATRIX_SVD_QUAT_FACTORS = make_matrix_svd_factors()

class Rot3Array(NamedTuple):
    """A rotation matrix as nine component arrays."""
    xx: jnp.ndarray
    xy: jnp.ndarray
    xz: jnp.ndarray
    yx: jnp.ndarray
    yy: jnp.ndarray
    yz: jnp.ndarray
    zx: jnp.ndarray
    zy: jnp.ndarray
    zz: jnp.ndarray

    def inverse(self):
        return Rot3Array(self.xx, self.yx, self.zx, self.xy, self.yy, self.zy, self.xz, self.yz, self.zz)

    def to_array(self):
        return jnp.stack([jnp.stack([self.xx, self.xy, self.xz], axis=-1), jnp.stack([self.yx, self.yy, self.yz], axis=-1), jnp.stack([self.zx, self.zy, self.zz], axis=-1)], axis=-2)

    @classmethod
    def from_quaternion(cls, w, x, y, z, normalize=True, epsilon=1e-06):
        if normalize:
            inv_norm = jax.lax.rsqrt(jnp.maximum(epsilon, w ** 2 + x ** 2 + y ** 2 + z ** 2))
            w *= inv_norm
            x *= inv_norm
            y *= inv_norm
            z *= inv_norm
        xx = 1 - 2 * (jnp.square(y) + jnp.square(z))
        xy = 2 * (x * y - w * z)
        xz = 2 * (x * z + w * y)
        yx = 2 * (x * y + w * z)
        yy = 1 - 2 * (jnp.square(x) + jnp.square(z))
        yz = 2 * (y * z - w * x)
        zx = 2 * (x * z - w * y)
        zy = 2 * (y * z + w * x)
        zz = 1 - 2 * (jnp.square(x) + jnp.square(y))
        return cls(xx, xy, xz, yx, yy, yz, zx, zy, zz)

    @classmethod
    def from_svd(cls, mat):
        """The rotation nearest to `mat` ([..., 9]) through the 4x4 eigenvalue problem."""
        assert mat.shape[-1] == 9
        symmetric_4by4 = jnp.einsum('ji, ...i -> ...j', MATRIX_SVD_QUAT_FACTORS, mat, precision=jax.lax.Precision.HIGHEST)
        symmetric_4by4 = jnp.reshape(symmetric_4by4, mat.shape[:-1] + (4, 4))
        largest_eigvec = largest_evec(symmetric_4by4)
        return cls.from_quaternion(*jnp.moveaxis(largest_eigvec, -1, 0)).inverse()

def eval_fn(mat):
    return Rot3Array.from_svd(mat).to_array()

def eval_inputs():
    rng = np.random.default_rng(13)
    rots = []
    for _ in range(2):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        q = q * np.sign(np.linalg.det(q))
        rots.append(q + 0.2 * rng.normal(size=(3, 3)))
    return (np.stack(rots).reshape(2, 9).astype(np.float32),)

def eval_reference(mat):
    m = np.asarray(mat, np.float64).reshape(-1, 3, 3)
    out = []
    for a in m:
        u, _, vt = np.linalg.svd(a)
        d = np.sign(np.linalg.det(u @ vt))
        out.append(u @ np.diag([1.0, 1.0, d]) @ vt)
    return np.stack(out)
