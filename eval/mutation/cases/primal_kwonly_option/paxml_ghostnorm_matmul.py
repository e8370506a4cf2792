"""Pax (paxml): the ghost-norm matmul for DP-SGD, `matmul(inputs, weights)`, a bare
`@jax.custom_vjp` whose second argument is either a plain array or a `ParamWithAux(param, aux)`
namedtuple (a pytree) carrying per-example reweighting coefficients. The forward rule calls
`jax.vjp(jnp.matmul, ...)` and keeps the returned pullback itself among the residuals, `(vjp_fun,
inputs, aux)`, with `aux` None for a plain array; the backward rule branches in Python on `aux is
None`: plain back-propagation, or the scaled cotangent pulled back, the input cotangent unscaled
again, and the weights' cotangent returned as a `ParamWithAux` whose `aux` slot holds the
per-example gradient square norms (the protocol's way to get them out of the backward pass).
Registered with `matmul.defvjp(matmul_fwd, matmul_bwd)`. The weights' and aux's cotangents are
deliberately not derivatives: `eval_grad_reference` gives what they mean.

Adapted from google/paxml:paxml/ghostnorm/linears.py:27 (commit 417d5ba), with `ParamWithAux`,
`get_param` and `get_aux` of paxml/ghostnorm/base.py (same commit); the praxis layer class and
its imports are dropped. The caller runs a layer in the ghost-norm pass (weights wrapped with
per-example scales) and, beside it, the plain path (the same weights unwrapped).
"""
import collections
import functools
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/primal_kwonly_option/paxml_ghostnorm_matmul', 'family': 'mutation', 'expect': 'unknown', 'library': 'paxml', 'source': 'google/paxml:paxml/ghostnorm/linears.py:27', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'primal_kwonly_option', 'base': 'paxml_ghostnorm_matmul'}
ParamWithAux = collections.namedtuple('ParamWithAux', ['param', 'aux'])

def get_param(param):
    if isinstance(param, ParamWithAux):
        return param.param
    return param

def get_aux(param):
    if isinstance(param, ParamWithAux):
        return param.aux
    return None

@jax.custom_vjp
def matmul(inputs, weights, *, eps=1e-06):
    """Forward matmul."""
    return jnp.matmul(inputs, get_param(weights))

def matmul_fwd(inputs, weights):
    """Forward matmul for custom vjp."""
    y, vjp_fun = jax.vjp(jnp.matmul, inputs, get_param(weights))
    return (y, (vjp_fun, inputs, get_aux(weights)))

def matmul_bwd(res, g):
    """Backward matmul for custom vjp, computing per-example gradient norms."""
    vjp_fun, inputs, aux = res
    if aux is None:
        u_inputs, u_weights = vjp_fun(g)
    else:
        scales = jnp.expand_dims(aux, axis=1)
        scaled_g = scales * g
        u_inputs_scaled, u_weights = vjp_fun(scaled_g)
        u_inputs = u_inputs_scaled / jnp.maximum(scales, 1e-07)
        batch_size = g.shape[0]
        scaled_g *= batch_size
        zsum = jnp.square(scaled_g).sum(axis=1)
        hsum = jnp.square(inputs).sum(axis=1)
        per_example_grad_sq_norms = zsum * hsum
        u_weights = ParamWithAux(u_weights, per_example_grad_sq_norms)
    return (u_inputs, u_weights)
matmul.defvjp(matmul_fwd, matmul_bwd)

def eval_fn(x, w, aux):
    ghost = matmul(x, ParamWithAux(w, aux))
    plain = matmul(x, w)
    return jnp.tanh(ghost) + 0.5 * plain

def eval_inputs():
    x = numpy.array([[0.3, -0.8, 1.1], [0.9, 0.2, -0.4], [-0.5, 0.7, 0.6], [1.2, -0.3, 0.1]], numpy.float32)
    w = numpy.array([[0.4, -0.2], [0.1, 0.5], [-0.3, 0.2]], numpy.float32)
    aux = numpy.array([1.0, 0.5, 0.8, 0.25], numpy.float32)
    return (x, w, aux)

def eval_reference(x, w, aux):
    x, w = (numpy.asarray(x, numpy.float64), numpy.asarray(w, numpy.float64))
    y = x @ w
    return numpy.tanh(y) + 0.5 * y

def eval_grad_reference(x, w, aux):
    x, w, aux = (numpy.asarray(a, numpy.float64) for a in (x, w, aux))
    g1 = 1.0 - numpy.tanh(x @ w) ** 2
    g2 = numpy.full_like(g1, 0.5)
    scaled = aux[:, None] * g1
    grad_x = g1 @ w.T + g2 @ w.T
    grad_w = x.T @ scaled + x.T @ g2
    grad_aux = numpy.square(scaled * x.shape[0]).sum(axis=1) * numpy.square(x).sum(axis=1)
    return (grad_x, grad_w, grad_aux)
