"""jax: a * (b + 1) whose fwd and bwd each return what one kernel call gives back (the CUDA FFI
calls of the example are jnp helpers here): the bwd returns a call's pair.

Adapted from jax-ml/jax:examples/ffi/src/jax_ffi_example/cuda_examples.py:61.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/forward_mode/jax_ffi_foo', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:examples/ffi/src/jax_ffi_example/cuda_examples.py:61', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'forward_mode', 'base': 'jax_ffi_foo'}

def _foo_fwd_kernel(a, b):
    b_plus_1 = b + 1.0
    return (a * b_plus_1, b_plus_1)

def _foo_bwd_kernel(c_grad, a, b_plus_1):
    return (c_grad * b_plus_1, c_grad * a)

def foo_fwd(a, b):
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    c, b_plus_1 = _foo_fwd_kernel(a, b)
    return (c, (a, b_plus_1))

def foo_bwd(res, c_grad):
    a, b_plus_1 = res
    assert c_grad.shape == a.shape
    assert a.shape == b_plus_1.shape
    return _foo_bwd_kernel(c_grad, a, b_plus_1)

@jax.custom_vjp
def foo(a, b):
    c, _ = foo_fwd(a, b)
    return c
foo.defvjp(foo_fwd, foo_bwd)

def eval_fn(a, b):
    return foo(a, b)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.25], np.float32))

def eval_reference(a, b):
    a, b = (np.asarray(a, np.float64), np.asarray(b, np.float64))
    return a * (b + 1.0)

def forward_usage(*args):
    return jax.jacfwd(eval_fn, argnums=(0, 1))(*args)

def eval_custom():
    return {'forward_usage': lambda: (forward_usage(*eval_inputs()), None)[1]}
