"""eformer: a straight-through estimator as a decorator factory: `ste(func)` returns
`@jax.custom_vjp` stacked over `@functools.wraps(func)` on a `(x, *args, **kwargs)` wrapper; fwd
keeps only the count of extra positional arguments and the keyword names as residuals, and bwd
passes the cotangent through unchanged to `x` (materialising an implicit-array cotangent) and
gives None to every other argument. (custom_vjp binds keywords positionally through the wrapped
signature, so the keyword branch of bwd is never taken.) The quantiser it wraps here rounds to a
grid scaled by the absolute maximum; its rule is deliberately not its derivative
(`eval_grad_reference` gives the straight-through gradient).

Adapted from erfanzar/eformer:eformer/jaximus/_imus.py:147 (`ste`; eformer's `ImplicitArray`
is reduced to a stub class with `materialize`, and the NF4 quantiser of its example to an
abs-max round-to-grid).
"""
import functools
import functools as ft
from functools import partial
import jax
import jax.numpy as jnp
import jax.tree_util as tu
import numpy as np
EVAL = {'id': 'mutation/fwd_pair_swapped/eformer_ste', 'family': 'mutation', 'expect': 'unknown', 'library': 'eformer', 'source': 'erfanzar/eformer:eformer/jaximus/_imus.py:147', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'fwd_pair_swapped', 'base': 'eformer_ste'}

class ImplicitArray:
    """An array held in a compressed form; `materialize` gives the dense array."""

    def materialize(self):
        raise NotImplementedError

def ste(func):
    """Wrap `func` so that its gradient is the identity in its first argument."""

    @jax.custom_vjp
    @ft.wraps(func)
    def _wrapped(x, *args, **kwargs):
        return func(x, *args, **kwargs)

    def _fwd(x, *args, **kwargs):
        y = func(x, *args, **kwargs)
        return ((len(args), tuple(kwargs.keys())), y)

    def _bwd(res, g):
        num_args, kw_keys = res

        def _materialize_if_needed(val):
            if isinstance(val, ImplicitArray):
                return val.materialize()
            return val
        if isinstance(g, ImplicitArray):
            g = g.materialize()
        else:
            g = tu.tree_map(_materialize_if_needed, g)
        cot_args = (g,) + (None,) * num_args
        if kw_keys:
            cot_kwargs = {k: None for k in kw_keys}
            return (cot_args, cot_kwargs)
        return cot_args
    _wrapped.defvjp(_fwd, _bwd)
    return _wrapped

@ste
def quantize_absmax(x, levels):
    scale = jnp.max(jnp.abs(x)) / levels
    return jnp.round(x / scale) * scale

def eval_fn(w, levels):
    return jnp.sin(quantize_absmax(w, levels)) * jnp.array([1.0, 0.5, -2.0, 1.5, 0.75], jnp.float32)

def eval_inputs():
    return (np.array([0.31, -1.2, 0.77, 2.05, -0.46], np.float32), np.float32(7.0))

def _quantized(w, levels):
    w = np.asarray(w, np.float64)
    scale = np.max(np.abs(w)) / float(levels)
    return np.round(w / scale) * scale

def eval_reference(w, levels):
    return np.sin(_quantized(w, levels)) * np.array([1.0, 0.5, -2.0, 1.5, 0.75])

def eval_grad_reference(w, levels):
    return (np.cos(_quantized(w, levels)) * np.array([1.0, 0.5, -2.0, 1.5, 0.75]),)
