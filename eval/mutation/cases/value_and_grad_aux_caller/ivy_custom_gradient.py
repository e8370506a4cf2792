"""Ivy (JAX backend): `bind_custom_gradient_function(func, custom_grad_fn)`, a factory that makes
`func` a `jax.custom_vjp` in call form (`func = jax.custom_vjp(func)`, then
`func.defvjp(custom_forward, custom_backward)`), closing over the user's gradient function; the
forward rule saves `(x, ret)` (the input and the output) as the residuals, and the backward
rule takes `*args` (the residuals and the cotangent, passed on as they come) and returns the
1-tuple `(custom_grad_fn(*args),)`. The result is wrapped by a `functools.wraps` decorator that
converts the inputs to native arrays (Ivy's `inputs_to_native_arrays`).

Adapted from ivy-llc/ivy:ivy/functional/backends/jax/experimental/gradients.py:17 (commit
37dad2a). Ivy's `to_native` on the residual pair (an identity on jax arrays) and its
container handling are dropped; the factory's parameter is renamed `fn` and wrapped in a local
`def func(x)`, which `func = jax.custom_vjp(func)` then rebinds as the library's line does (so
that the forward rule's `func(x)`, a late-bound closure variable, still calls the custom
function, as in the library; the mutation tools need the primal to be a `def` in the module);
`inputs_to_native_arrays` is written here as a small `jnp.asarray` wrapper. The gradient functions follow the signature Ivy's tests use
(`lambda *args: args[1] * args[0][k]`: `args[0]` is `(x, ret)`, `args[1]` the upstream
gradient), made true derivatives: `exp` with `upstream * ret`, `square` with `upstream * 2x`.
"""
import functools
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/value_and_grad_aux_caller/ivy_custom_gradient', 'family': 'mutation', 'expect': 'unknown', 'library': 'ivy', 'source': 'ivy-llc/ivy:ivy/functional/backends/jax/experimental/gradients.py:17', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'value_and_grad_aux_caller', 'base': 'ivy_custom_gradient'}

def inputs_to_native_arrays(fn):

    @functools.wraps(fn)
    def _inputs_to_native_arrays(*args, **kwargs):
        args = [jnp.asarray(a) if isinstance(a, numpy.ndarray) else a for a in args]
        return fn(*args, **kwargs)
    return _inputs_to_native_arrays

def bind_custom_gradient_function(fn, custom_grad_fn):

    def func(x):
        return fn(x)

    def custom_forward(x):
        ret = func(x)
        return (ret, (x, ret))

    def custom_backward(*args):
        return (custom_grad_fn(*args),)
    func = jax.custom_vjp(func)
    func.defvjp(custom_forward, custom_backward)
    return inputs_to_native_arrays(func)
exp_with_grad = bind_custom_gradient_function(lambda x: jnp.exp(x), lambda *args: args[1] * args[0][1])
square_with_grad = bind_custom_gradient_function(lambda x: jnp.square(x), lambda *args: args[1] * 2.0 * args[0][0])

def eval_fn(x, w):
    return jnp.mean(exp_with_grad(0.5 * x) * w, axis=0) + square_with_grad(x - w).sum(axis=0)

def eval_inputs():
    x = numpy.array([[0.4, -1.2, 0.9], [1.5, 0.3, -0.6]], numpy.float32)
    w = numpy.array([[0.7, 0.2, -0.5], [-0.3, 1.1, 0.8]], numpy.float32)
    return (x, w)

def eval_reference(x, w):
    x, w = (numpy.asarray(x, numpy.float64), numpy.asarray(w, numpy.float64))
    return numpy.mean(numpy.exp(0.5 * x) * w, axis=0) + ((x - w) ** 2).sum(axis=0)

def value_and_grad_aux_usage(*args):

    def loss_aux(*a):
        out = eval_fn(*a)
        return (jnp.sum(out), out)
    (value, out), g = jax.value_and_grad(loss_aux, argnums=(0, 1), has_aux=True)(*args)
    return tuple(g) + (value,)

def value_and_grad_aux_usage_expected(*args):
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1))(*args)
    return tuple(g) + (jnp.sum(eval_fn(*args)),)

def eval_custom():
    args = tuple(eval_inputs())
    return {'value_and_grad_aux_usage': lambda: (value_and_grad_aux_usage(*args), value_and_grad_aux_usage_expected(*args))}
