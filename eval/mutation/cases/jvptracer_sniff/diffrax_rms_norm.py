"""diffrax: the RMS norm of a pytree (flattened with `ravel_pytree`) through a decorated custom_jvp
whose rule, registered with `@_rms_norm.defjvp`, names its parameters `(x, tx)` and rebinds them
by unpacking; it gives a zero rather than a NaN tangent where the norm is 0 or infinite.

Adapted from patrick-kidger/diffrax:diffrax/misc/misc.py:92 (at ddd4b881; the `PyTree`/`Scalar`
annotations are dropped; the caller takes the norm of a (array, dict) pytree, as diffrax's step
size controllers take it of a state pytree).
"""
import functools
from functools import partial
import jax
import jax.flatten_util as fu
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvptracer_sniff/diffrax_rms_norm', 'family': 'mutation', 'expect': 'unknown', 'library': 'diffrax', 'source': 'patrick-kidger/diffrax:diffrax/misc/misc.py:92', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvptracer_sniff', 'base': 'diffrax_rms_norm'}

def rms_norm(x):
    x, _ = fu.ravel_pytree(x)
    if x.size == 0:
        return 0
    return _rms_norm(x)

@jax.custom_jvp
def _rms_norm(x):
    x_sq = jnp.real(x * jnp.conj(x))
    return jnp.sqrt(jnp.mean(x_sq))

@_rms_norm.defjvp
def _rms_norm_jvp(x, tx):
    x, = x
    tx, = tx
    out = _rms_norm(x)
    pred = (out == 0) | jnp.isinf(out)
    numerator = jnp.where(pred, 0, x)
    denominator = jnp.where(pred, 1, out * x.size)
    t_out = jnp.dot(numerator / denominator, tx)
    return (out, t_out)

def _eval_fn_plain(y, z):
    return rms_norm((y, {'scale': z}))
from jax.interpreters.ad import JVPTracer

def eval_fn(y, z):
    if isinstance(y, JVPTracer):
        return _eval_fn_plain(y, z)
    return jax.lax.stop_gradient(_eval_fn_plain(y, z))

def eval_inputs():
    return (np.array([0.5, -1.25, 2.0, 0.75], np.float32), np.array([-0.3, 1.1], np.float32))

def eval_reference(y, z):
    flat = np.concatenate([np.ravel(np.asarray(y, np.float64)), np.ravel(np.asarray(z, np.float64))])
    return np.sqrt(np.mean(flat * flat))
