"""AXLearn: the grouped matrix multiply of its megablock MoE layer, `gmm_gpu =
jax.custom_vjp(gmm, nondiff_argnums=(3, 4, 6, 7))` (the call form over a function of another name,
eight parameters, nondiff positions with a gap: `group_offset`, position 5, stays a differentiated
slot); fwd repeats the signature with defaults, computes in float32 and saves `(lhs, rhs,
group_sizes, group_offset, rhs.shape[0])` (a Python int among the residuals); bwd takes the four
nondiff values first, `del`s one, and returns `grad_lhs, grad_rhs, None, None` (None for the integer
group sizes and the absent offset); registered with `gmm_gpu.defvjp(_gmm_fwd, _gmm_bwd)`.

Adapted from apple/axlearn:axlearn/common/megablock/ops.py:16 (commit 34aed43). The backend kernels
`gmm` and `tgmm` (axlearn/common/megablock/gmm_gpu.py, Pallas/Triton) are written here in jax.numpy
with their signatures (the kernel both the primal and the rules call, the library's `backend.gmm`,
is `_gmm_kernel` here, `gmm` a wrapper over it): rows of `lhs` are assigned to groups by
`group_sizes` (`jnp.repeat` with a static total length), the kernel multiplies each row by its
group's matrix (`transpose_rhs` as in the library), `tgmm` sums the per-group outer products
(`segment_sum`) and zeroes groups at or past `num_actual_groups`; the tiling and interpret flags are accepted and unused. The caller is an expert
layer: tokens already sorted by expert, an up projection, a GELU, and a down projection with the
transposed-rhs layout, the options by keyword as axlearn's `_pallas_gmm` passes them.
"""
import functools
from typing import Optional
import jax
import jax.numpy as jnp
import numpy
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/axlearn_gmm', 'family': 'mutation', 'expect': 'unknown', 'library': 'axlearn', 'source': 'apple/axlearn:axlearn/common/megablock/ops.py:16', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'host_callback_primal', 'base': 'axlearn_gmm'}
Tensor = jax.Array
DEFAULT_TILING = (128, 128, 128)
CAST_DTYPE = jnp.float32

def _group_ids(group_sizes, m):
    return jnp.repeat(jnp.arange(group_sizes.shape[0]), group_sizes, total_repeat_length=m)

def _gmm_kernel(lhs, rhs, group_sizes, preferred_element_type, transpose_rhs):
    w = rhs[_group_ids(group_sizes, lhs.shape[0])]
    if transpose_rhs:
        w = jnp.swapaxes(w, 1, 2)
    return jnp.einsum('mk,mkn->mn', lhs, w).astype(preferred_element_type)

def gmm(lhs: Tensor, rhs: Tensor, group_sizes: Tensor, preferred_element_type: jnp.dtype=jnp.float32, tiling: Optional[tuple[int, int, int]]=DEFAULT_TILING, group_offset: Optional[Tensor]=None, transpose_rhs: Optional[bool]=False, interpret: Optional[bool]=False) -> Tensor:
    _out = _gmm_kernel(lhs, rhs, group_sizes, preferred_element_type, transpose_rhs)
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)

def tgmm(lhs: Tensor, rhs: Tensor, group_sizes: Tensor, preferred_element_type: jnp.dtype=jnp.float32, tiling: Optional[tuple[int, int, int]]=DEFAULT_TILING, group_offset: Optional[Tensor]=None, num_actual_groups: Optional[int]=None, interpret: bool=False) -> Tensor:
    num_groups = group_sizes.shape[0]
    outer = lhs.T[:, :, None] * rhs[:, None, :]
    out = jax.ops.segment_sum(outer, _group_ids(group_sizes, rhs.shape[0]), num_segments=num_groups)
    if num_actual_groups is not None:
        out = jnp.where((jnp.arange(num_groups) < num_actual_groups)[:, None, None], out, 0)
    return out.astype(preferred_element_type)
gmm_gpu = jax.custom_vjp(gmm, nondiff_argnums=(3, 4, 6, 7))

def _gmm_fwd(lhs: Tensor, rhs: Tensor, group_sizes: Tensor, preferred_element_type: jnp.dtype=jnp.float32, tiling: tuple[int, int, int]=(128, 128, 128), group_offset: Optional[Tensor]=None, transpose_rhs: bool=False, interpret: bool=False):
    out = _gmm_kernel(lhs.astype(CAST_DTYPE), rhs.astype(CAST_DTYPE), group_sizes, CAST_DTYPE, transpose_rhs)
    out = out.astype(preferred_element_type)
    return (out, (lhs, rhs, group_sizes, group_offset, rhs.shape[0]))

def _gmm_bwd(preferred_element_type: jnp.dtype, tiling: tuple[int, int, int], transpose_rhs: bool, interpret: bool, residual, grad: Tensor):
    del preferred_element_type
    lhs, rhs, group_sizes, group_offset, num_actual_groups = residual
    grad_lhs = _gmm_kernel(grad.astype(CAST_DTYPE), rhs.astype(CAST_DTYPE), group_sizes, CAST_DTYPE, not transpose_rhs)
    grad_rhs = tgmm(lhs.swapaxes(0, 1).astype(CAST_DTYPE), grad.astype(CAST_DTYPE), group_sizes, CAST_DTYPE, tiling, group_offset, num_actual_groups, interpret=interpret)
    grad_rhs = grad_rhs.swapaxes(1, 2) if transpose_rhs else grad_rhs
    grad_lhs = grad_lhs.astype(lhs[0].dtype)
    grad_rhs = grad_rhs.astype(rhs.dtype)
    return (grad_lhs, grad_rhs, None, None)
gmm_gpu.defvjp(_gmm_fwd, _gmm_bwd)
GROUP_SIZES = numpy.array([2, 3], numpy.int32)

def eval_fn(tokens, wi, wo):
    h = gmm_gpu(tokens, wi, GROUP_SIZES, tiling=DEFAULT_TILING, preferred_element_type=jnp.float32, interpret=False)
    h = jax.nn.gelu(h, approximate=True)
    return gmm_gpu(h, wo, GROUP_SIZES, tiling=DEFAULT_TILING, preferred_element_type=jnp.float32, transpose_rhs=True)

def eval_inputs():
    tokens = numpy.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.6], [-0.3, 0.8, 1.1], [0.9, -0.2, 0.0], [0.1, 0.6, -1.3]], numpy.float32)
    wi = numpy.array([[[0.2, -0.4, 0.6, 0.1], [0.5, 0.3, -0.2, 0.7], [-0.6, 0.1, 0.4, 0.2]], [[0.3, 0.8, -0.1, -0.5], [-0.2, 0.4, 0.6, 0.3], [0.7, -0.3, 0.2, 0.5]]], numpy.float32)
    wo = numpy.array([[[0.4, -0.1, 0.3, 0.2], [0.6, 0.5, -0.4, 0.1]], [[-0.3, 0.2, 0.5, -0.6], [0.1, 0.7, 0.2, 0.4]]], numpy.float32)
    return (tokens, wi, wo)

def eval_reference(tokens, wi, wo):
    tokens, wi, wo = (numpy.asarray(a, numpy.float64) for a in (tokens, wi, wo))
    gid = numpy.repeat(numpy.arange(2), GROUP_SIZES)
    h = numpy.einsum('mk,mkn->mn', tokens, wi[gid])
    h = 0.5 * h * (1.0 + numpy.tanh(numpy.sqrt(2.0 / numpy.pi) * (h + 0.044715 * h ** 3)))
    return numpy.einsum('mk,mnk->mn', h, wo[gid])
