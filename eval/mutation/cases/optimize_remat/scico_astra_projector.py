"""scico: an X-ray projector that runs outside JAX (astra) wrapped for JAX. The forward projection
and the back projection are host functions called through `jax.pure_callback`; the projection is
made a custom_vjp by the call form `jax.custom_vjp(proj)`, its rules two lambdas given to
`defvjp`: the fwd keeps no residual (None) and the bwd returns the back projection of the
cotangent as a 1-tuple (the projector is linear, its adjoint is the back projection).

Adapted from lanl/scico:scico/linop/xray/astra/_astra_2d.py:140 (the same pattern is in
_astra_3d.py:499, _astra_cone.py:227 and svmbir.py:189). The astra toolbox is replaced by a
two-angle parallel-beam projector in numpy (column sums at 0 degrees, row sums at 90 degrees,
whose adjoint spreads each ray sum back along its ray); the methods of the XRayTransform class
become module functions of fixed shapes; `vmap_method='sequential'` is given to pure_callback
(the library's projector is never batched). The caller is a least-squares data term.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/optimize_remat/scico_astra_projector', 'family': 'mutation', 'expect': 'unknown', 'library': 'scico', 'source': 'lanl/scico:scico/linop/xray/astra/_astra_2d.py:140', 'argnums': (0,), 'operator': 'optimize_remat', 'base': 'scico_astra_projector'}
INPUT_SHAPE = (4, 4)
OUTPUT_SHAPE = (2, 4)
SINO = np.array([[1.0, 0.5, 2.0, 1.5], [0.25, 1.75, 1.0, 2.0]], np.float32)

def _create_sino(x):
    x = np.array(x)
    return np.stack([x.sum(axis=0), x.sum(axis=1)]).astype(np.float32)

def _create_backprojection(y):
    y = np.array(y)
    return (y[0][None, :] + y[1][:, None]).astype(np.float32)

def _proj(x):
    return jax.pure_callback(_create_sino, jax.ShapeDtypeStruct(OUTPUT_SHAPE, np.float32), x, vmap_method='sequential')

def _bproj(y):
    return jax.pure_callback(_create_backprojection, jax.ShapeDtypeStruct(INPUT_SHAPE, np.float32), y, vmap_method='sequential')
_eval = jax.custom_vjp(_proj)
_eval.defvjp(lambda x: (_proj(x), None), lambda _, y: (_bproj(y),), optimize_remat=True)

def eval_fn(x):
    return 0.5 * (_eval(x) - SINO) ** 2

def eval_inputs():
    return (np.array([[0.1, 0.4, 0.2, 0.3], [0.0, 0.6, 0.1, 0.5], [0.3, 0.2, 0.7, 0.1], [0.2, 0.1, 0.4, 0.6]], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    sino = np.stack([x.sum(axis=-2), x.sum(axis=-1)], axis=-2)
    return 0.5 * (sino - SINO) ** 2
