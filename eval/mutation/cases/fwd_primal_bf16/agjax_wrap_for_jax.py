"""agjax: `wrap_for_jax(fn, result_shape_dtypes, nondiff_argnums, nondiff_outputnums)`, a factory
that wraps a host (NumPy) function for JAX as a `@jax.custom_vjp` over variadic arguments,
`def _fn(*args)`, whose primal calls the host through `jax.pure_callback(..., vmap_method=
"sequential")` (a module-level `functools.partial` of it); fwd `_fwd_fn(*args)` runs a host
callback that evaluates the function, builds its VJP on the host, stores it in a list the factory
closes over (with a `nonlocal` stage flag that clears the list when a new forward pass starts) and
returns `(outputs, key)` (the library names that host function `make_vjp`; here `host_make_vjp`), the residuals being `(args, key)`; bwd `_bwd_fn(*bwd_args)` unpacks
`(args, key), *tangents = bwd_args`, calls the stored VJP through another callback and returns
`merge_args_fn([None] * len(_nondiff_argnums), grads)`: None for every nondiff argument, which the
wrapper handles itself (the custom_vjp has no nondiff_argnums).

Adapted from mfschubert/agjax:src/agjax/experimental/wrapper.py:26 (commit 0805412; the
custom_vjp at :70, the registration at :161), with the helpers of src/agjax/utils.py (`split`,
`merge`, `ensure_tuple`, `to_numpy`, the index validation) written here. The library builds the
host VJP with autograd (`autograd.make_vjp(_tuple_fn, argnum=diff_argnums)`); autograd is not a
dependency here, so the host function carries its own NumPy VJP (`fn.vjp`) and `make_vjp` below
stands in for autograd's; `nondiff_outputnums` is left out (every output differentiable). The
caller wraps a two-output host function with a nondiff exponent (position 2).
"""
import functools
from typing import Any, Callable, List, Tuple
import jax
import jax.numpy as jnp
import numpy as onp
EVAL = {'id': 'mutation/fwd_primal_bf16/agjax_wrap_for_jax', 'family': 'mutation', 'expect': 'unknown', 'library': 'agjax', 'source': 'mfschubert/agjax:src/agjax/experimental/wrapper.py:26', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'fwd_primal_bf16', 'base': 'agjax_wrap_for_jax'}
callback_sequential = functools.partial(jax.pure_callback, vmap_method='sequential')
_FORWARD_STAGE = 'fwd'
_BACKWARD_STAGE = 'bwd'

def validate_idx_for_sequence_len(idx, sequence_length):
    if not all((i in range(-sequence_length, sequence_length) for i in idx)):
        raise ValueError(f'Found out of bounds values in `idx`, got {idx} when `sequence_length` is {sequence_length}.')

def validate_nondiff_argnums_for_args(nondiff_argnums, args):
    validate_idx_for_sequence_len(nondiff_argnums, len(args))
    if len(args) <= len(nondiff_argnums):
        raise ValueError('At least argument must be differentiated with respect to.')

def split(a, idx):
    validate_idx_for_sequence_len(idx, len(a))
    return (tuple([a[i] for i in idx]), tuple([a[i] for i in range(len(a)) if i not in idx]))

def merge(a, b, idx):
    validate_idx_for_sequence_len(idx, len(a) + len(b))
    positive_idx = [i % (len(a) + len(b)) for i in idx]
    iter_a = iter(a)
    iter_b = iter(b)
    return tuple([next(iter_a) if i in positive_idx else next(iter_b) for i in range(len(a) + len(b))])

def ensure_tuple(xs):
    is_tuple = isinstance(xs, tuple)
    return (xs if is_tuple else (xs,), is_tuple)

def to_numpy(tree):
    return jax.tree_util.tree_map(onp.asarray, tree)

def to_jax(tree):
    return jax.tree_util.tree_map(jnp.asarray, tree)

def make_vjp(fn, argnum):
    """Stands in for `autograd.make_vjp`: `fn` carries its own NumPy VJP, `fn.vjp(args, cts)`."""

    def maker(*args):
        outputs, _ = ensure_tuple(fn(*args))

        def vjp_fn(cts):
            grads = fn.vjp(args, tuple(cts))
            return tuple((grads[i] for i in argnum))
        return (vjp_fn, outputs)
    return maker

def wrap_for_jax(fn: Callable[[Any], Any], result_shape_dtypes: Any, nondiff_argnums: Tuple[int, ...]=()) -> Callable[[Any], Any]:
    """Wraps `fn` so that it can be differentiated by jax (grad, jit, vmap, jacrev)."""
    _nondiff_argnums, _ = ensure_tuple(nondiff_argnums)
    del nondiff_argnums
    split_args_fn = functools.partial(split, idx=_nondiff_argnums)
    merge_args_fn = functools.partial(merge, idx=_nondiff_argnums)
    stage = _FORWARD_STAGE
    vjp_fns: List[Callable[[Any], Any]] = []

    @jax.custom_vjp
    def _fn(*args: Any) -> Any:
        validate_nondiff_argnums_for_args(_nondiff_argnums, args)
        outputs = callback_sequential(lambda *args: fn(*to_numpy(args)), result_shape_dtypes, *args)
        return outputs

    def _fwd_fn(*args: Any) -> Any:

        def host_make_vjp(*args: Any) -> Any:
            args = to_numpy(args)
            nonlocal stage
            if stage == _BACKWARD_STAGE:
                vjp_fns.clear()
            stage = _FORWARD_STAGE
            diff_argnums = tuple((i for i in range(len(args)) if i not in _nondiff_argnums))
            tuple_vjp_fn, outputs = make_vjp(fn, argnum=diff_argnums)(*args)

            def _vjp_fn(*diff_outputs: Any) -> Any:
                diff_outputs_leaves = jax.tree_util.tree_leaves(diff_outputs)
                return tuple_vjp_fn(to_numpy(diff_outputs_leaves))
            key = len(vjp_fns)
            vjp_fns.append(_vjp_fn)
            return (outputs, onp.asarray(key, onp.int32))
        outputs, key = callback_sequential(host_make_vjp, (result_shape_dtypes, jnp.asarray(0)), *args)
        return (jnp.asarray(outputs, jnp.bfloat16), (args, key))

    def _bwd_fn(*bwd_args: Any) -> Any:

        def _pure_fn(key: jnp.ndarray, tangents: Tuple[Any, ...]) -> Any:
            tangents = to_numpy(tangents)
            nonlocal stage
            stage = _BACKWARD_STAGE
            vjp_fn = vjp_fns[int(onp.asarray(key))]
            return vjp_fn(*tangents)
        (args, key), *tangents = bwd_args
        _, diff_args = split_args_fn(args)
        result_shape_dtypes = to_jax(diff_args)
        grads = callback_sequential(_pure_fn, result_shape_dtypes, key, tangents)
        return merge_args_fn([None] * len(_nondiff_argnums), grads)
    _fn.defvjp(_fwd_fn, _bwd_fn)
    return _fn

def _field(x, y, power):
    """A host function with two outputs: x**power cos(y) and sum(sin(x) y)."""
    return ((x ** power * onp.cos(y)).astype(onp.float32), onp.sum(onp.sin(x) * y).astype(onp.float32))

def _field_vjp(args, cts):
    x, y, power = args
    g1, g2 = cts
    dx = g1 * power * x ** (power - 1) * onp.cos(y) + g2 * onp.cos(x) * y
    dy = -g1 * x ** power * onp.sin(y) + g2 * onp.sin(x)
    return (dx.astype(onp.float32), dy.astype(onp.float32), None)
_field.vjp = _field_vjp
field = wrap_for_jax(_field, result_shape_dtypes=(jax.ShapeDtypeStruct((3,), jnp.float32), jax.ShapeDtypeStruct((), jnp.float32)), nondiff_argnums=(2,))

def eval_fn(x, y):
    a, b = field(x, y, jnp.asarray(2.0, jnp.float32))
    return a + 0.5 * b

def eval_inputs():
    return (onp.array([0.3, -0.7, 1.1], onp.float32), onp.array([0.5, 1.2, -0.4], onp.float32))

def eval_reference(x, y):
    x64, y64 = (onp.asarray(x, onp.float64), onp.asarray(y, onp.float64))
    return x64 ** 2 * onp.cos(y64) + 0.5 * onp.sum(onp.sin(x64) * y64)
