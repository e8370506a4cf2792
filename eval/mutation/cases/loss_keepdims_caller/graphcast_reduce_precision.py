"""graphcast (weathernext sparse transformer utilities): `reduce_precision(x, exponent_bits,
mantissa_bits)`, a wrapper that makes `jax.lax.reduce_precision` differentiable, declared
`@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))` over a pytree `x` (mapped with
`jax.tree_util.tree_map`) and two Python int bit counts; fwd calls the custom function and saves
`None`; bwd `reduce_precision_bwd(exponent_bits, mantissa_bits, res, dout)` deletes the unused
residual and returns the cotangent rounded the same way, as a 1-tuple spelled with a trailing comma.

Adapted from google-deepmind/graphcast:weathernext/utils/sparse_transformer_utils.py:24 (commit
9c034db). Changed: nothing in the definition but the names of the module around it. The caller
emulates float16 storage (5 exponent bits, 10 mantissa bits) of a dict of activations, as the
library's upcast/downcast wrapper does for bfloat16, then mixes them. The gradient the rule means
(the cotangent rounded to float16's precision, within the checks' tolerance of the exact one) is
`eval_grad_reference`: the rounding is piecewise constant, so finite differences cannot give it.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/loss_keepdims_caller/graphcast_reduce_precision', 'family': 'mutation', 'expect': 'unknown', 'library': 'graphcast', 'source': 'google-deepmind/graphcast:weathernext/utils/sparse_transformer_utils.py:24', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'loss_keepdims_caller', 'base': 'graphcast_reduce_precision'}

@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def reduce_precision(x, exponent_bits, mantissa_bits):
    return jax.tree_util.tree_map(lambda y: jax.lax.reduce_precision(y, exponent_bits, mantissa_bits), x)

def reduce_precision_fwd(x, exponent_bits, mantissa_bits):
    return (reduce_precision(x, exponent_bits, mantissa_bits), None)

def reduce_precision_bwd(exponent_bits, mantissa_bits, res, dout):
    del res
    return (reduce_precision(dout, exponent_bits, mantissa_bits),)
reduce_precision.defvjp(reduce_precision_fwd, reduce_precision_bwd)

def eval_fn(query, key):
    acts = reduce_precision({'query': query, 'key': key}, 5, 10)
    return acts['query'] * jnp.sin(acts['key'])

def eval_inputs():
    return (np.array([0.123456, -1.234567, 2.718281, 0.333333], np.float32), np.array([0.987654, -0.456789, 1.414213, -2.222222], np.float32))

def _f16(v):
    return np.asarray(np.asarray(v, np.float32).astype(np.float16), np.float64)

def eval_reference(query, key):
    return _f16(query) * np.sin(_f16(key))

def eval_grad_reference(query, key):
    q, k = (_f16(query), _f16(key))
    return (np.sin(k), q * np.cos(k))

def keepdims_loss_usage(*args):

    def loss(*a):
        return jnp.mean(eval_fn(*a), keepdims=True)
    return jax.grad(loss, argnums=(0, 1))(*args)

def keepdims_loss_usage_expected(*args):
    n = jnp.size(eval_fn(*args))
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1))(*args)
    return tuple((x / n for x in g))

def eval_custom():
    args = tuple(eval_inputs())
    return {'keepdims_loss_usage': lambda: (keepdims_loss_usage(*args), keepdims_loss_usage_expected(*args))}
