"""CoDeX: `perturb_and_apply(f, x, u, *args)`, which applies a pointwise function to inputs
perturbed by a uniform-noise realization `u` and replaces the derivative in `x` by its
expectation over the noise (Agustsson & Theis 2020, Sec. 4.2): a bare `@jax.custom_jvp` made
inside the function on every call, closing over `f` and `u`, whose second parameter is the
tuple of extra arguments (a pytree); the rule, registered with
`@_perturb_and_apply.defjvp`, unpacks `x, args = primals` and `grad_x, grad_args = tangents`,
uses the finite difference `f(x + 0.5) - f(x - 0.5)` for `x` and adds the true tangent in the
extra arguments through `jax.jvp` of a lambda over the tuple; it returns the custom function
called again on `(x, args)` and the tangent. The `x` derivative is deliberately not the
derivative of `f(x + u)`: `eval_grad_reference` gives what the rule means.

Adapted from google/codex:codex/ops/gradient.py:45 (commit 0b55846); the docstring is
shortened, the code kept. The caller perturbs `sin(v) * s` (one extra argument `s`) with a
fixed noise realization, as a neural-compression model does at training time.
"""
import functools
import jax
import jax.numpy as jnp
import numpy
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/codex_perturb_and_apply', 'family': 'mutation', 'expect': 'unknown', 'library': 'codex', 'source': 'google/codex:codex/ops/gradient.py:45', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'host_callback_primal', 'base': 'codex_perturb_and_apply'}

def perturb_and_apply(f, x, u, *args):

    @jax.custom_jvp
    def _perturb_and_apply(x, args):
        _out = f(x + u, *args)
        return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)

    @_perturb_and_apply.defjvp
    def _perturb_and_apply_jvp(primals, tangents):
        x, args = primals
        grad_x, grad_args = tangents
        dy = (f(x + 0.5, *args) - f(x - 0.5, *args)) * grad_x
        dy += jax.jvp(lambda t: f(x + u, *t), (args,), (grad_args,))[1]
        return (_perturb_and_apply(x, args), dy)
    return _perturb_and_apply(x, args)
NOISE = numpy.array([0.31, -0.12, 0.44, -0.27], numpy.float32)

def eval_fn(x, s):
    return perturb_and_apply(lambda v, s: jnp.sin(v) * s, x, NOISE, s)

def eval_inputs():
    return (numpy.array([0.6, -1.4, 2.1, 0.2], numpy.float32), numpy.array([1.3, 0.8, -0.5, 2.0], numpy.float32))

def eval_reference(x, s):
    x, s = (numpy.asarray(x, numpy.float64), numpy.asarray(s, numpy.float64))
    return numpy.sin(x + NOISE.astype(numpy.float64)) * s

def eval_grad_reference(x, s):
    x, s = (numpy.asarray(x, numpy.float64), numpy.asarray(s, numpy.float64))
    return (s * (numpy.sin(x + 0.5) - numpy.sin(x - 0.5)), numpy.sin(x + NOISE.astype(numpy.float64)))
