"""jaxDecomp: the pencil transpose `transpose(x, kind)`, `@partial(jax.custom_jvp,
nondiff_argnums=(1,))` with the kind a string ('x_y', 'y_z', ...), its primal a call of a
`@partial(jax.jit, static_argnums=(1,))` implementation passed `kind=kind` by keyword, and its
rule `transpose_jvp(kind, primals, tangents)` (`(x,) = primals`, `(t,) = tangents`) transposing
the tangent the same way by calling the custom function again with `kind=kind`.

Adapted from DifferentiableUniverseInitiative/jaxDecomp:src/jaxdecomp/_src/jax/transpose.py:336
(commit 0a62239). The library binds a custom SPMD primitive whose single-device body is
`x.transpose(transpose_order)` (contiguous axes: (2, 0, 1) for 'x_y', 'y_z', 'z_x'; (1, 2, 0) for
the reverse kinds), vmapped over a leading batch axis for 4-d input; here the implementation is
that body. The caller goes X -> Y -> Z pencils and weights the result, as a distributed FFT's
transposes do.
"""
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.typing import ArrayLike
import functools
EVAL = {'id': 'mutation/nondiff_move/jaxdecomp_transpose', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxdecomp', 'source': 'DifferentiableUniverseInitiative/jaxDecomp:src/jaxdecomp/_src/jax/transpose.py:336', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'jaxdecomp_transpose'}

def spmd_transpose(x: ArrayLike, kind: str) -> Array:
    match kind:
        case 'x_y' | 'y_z' | 'z_x':
            transpose_order = (2, 0, 1)
        case 'y_x' | 'z_y' | 'x_z':
            transpose_order = (1, 2, 0)
        case _:
            raise ValueError('Invalid kind')

    def _impl(x):
        return x.transpose(transpose_order)
    if x.ndim == 3:
        return _impl(x)
    if x.ndim == 4:
        return jax.vmap(_impl)(x)
    raise ValueError(f'Unsupported input shape {x.shape}')

@partial(jax.jit, static_argnums=(1,))
def transpose_impl(x: ArrayLike, kind: str) -> Array:
    return spmd_transpose(x, kind=kind)

@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def transpose(x: ArrayLike, kind: str) -> Array:
    return transpose_impl(x, kind=kind)

@transpose.defjvp
def transpose_jvp(x, kind, primals, tangents) -> tuple[Array, Array]:
    () = primals
    () = tangents
    t = jnp.zeros_like(x)
    y = transpose(x, kind=kind)
    return (y, transpose(t, kind=kind))

def transposeXtoY(x: ArrayLike) -> Array:
    return transpose(x, 'x_y')

def transposeYtoZ(x: ArrayLike) -> Array:
    return transpose(x, 'y_z')
_W = (np.arange(24, dtype=np.float32).reshape(4, 2, 3) % 5 - 2.0) * 0.5

def eval_fn(x):
    y = transposeYtoZ(jnp.sin(transposeXtoY(x)))
    return jnp.sum(y * _W, axis=(1, 2)) + jnp.sum(y * y, axis=(1, 2))

def eval_inputs():
    return (np.linspace(-1.0, 1.5, 24, dtype=np.float32).reshape(3, 4, 2),)

def eval_reference(x):
    x64 = np.asarray(x, np.float64)
    y = np.sin(x64.transpose(2, 0, 1)).transpose(2, 0, 1)
    return np.sum(y * _W, axis=(1, 2)) + np.sum(y * y, axis=(1, 2))
