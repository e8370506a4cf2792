"""structure look-alike: a layer-norm custom_vjp with nondiff_argnums given as a list of defaulted trailing parameters, stacked over jax.jit(static_argnames=...), called without them.

Source: jax-ml/jax jax/experimental/pallas/ops/gpu/layer_norm.py, `layer_norm` /
`layer_norm_forward` / `layer_norm_backward`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/pallas/ops/gpu/layer_norm.py#L94-L341
(read at commit cec06d1): `@functools.partial(jax.custom_vjp, nondiff_argnums=[3, 4, 5, 6, 7])` over
`@jax.jit(static_argnames=[...])`; the primal and the forward rule give the five trailing
parameters defaults, the backward rule takes them first then `(res, do)` and returns
`dx, dw, dbias`; callers pass only `(x, weight, bias)`. Here the same layout with an analytic
layer norm backward and two defaulted parameters.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxpallas_nondiff_list_defaults_omitted_at_call", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/experimental/pallas/ops/gpu/layer_norm.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/pallas/ops/gpu/layer_norm.py#L94-L341",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1, 2), "heldout": True,
}


def _normalize(x, eps, fast_rsqrt):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    rstd = jax.lax.rsqrt(var + eps) if fast_rsqrt else 1.0 / jnp.sqrt(var + eps)
    return (x - mean) * rstd, rstd


@functools.partial(jax.custom_vjp, nondiff_argnums=[3, 4])  # eval: span
@jax.jit(static_argnames=["eps", "fast_rsqrt"])
def layer_norm(x, weight, bias, eps=1e-5, fast_rsqrt=True):  # eval: span
    xhat, _ = _normalize(x, eps, fast_rsqrt)
    return xhat * weight + bias


def layer_norm_forward(x, weight, bias, eps=1e-5, fast_rsqrt=True):  # eval: span
    xhat, rstd = _normalize(x, eps, fast_rsqrt)
    return xhat * weight + bias, (xhat, rstd, weight)


def layer_norm_backward(eps, fast_rsqrt, res, do):  # eval: span
    xhat, rstd, weight = res
    dxhat = do * weight
    dx = rstd * (dxhat - jnp.mean(dxhat, axis=-1, keepdims=True)
                 - xhat * jnp.mean(dxhat * xhat, axis=-1, keepdims=True))
    n = xhat.shape[-1]
    dw = jnp.sum((do * xhat).reshape(-1, n), axis=0)
    dbias = jnp.sum(do.reshape(-1, n), axis=0)
    return dx, dw, dbias  # eval: span


layer_norm.defvjp(layer_norm_forward, layer_norm_backward)  # eval: span


COEF = np.array([1.0, -0.5, 2.0, 0.3], np.float32)


def eval_fn(x, weight, bias):
    return jnp.sum(layer_norm(x, weight, bias) * COEF, axis=-1)


def eval_inputs():
    x = np.array([[0.5, -1.0, 2.0, 0.3], [1.2, 0.4, -0.7, 0.9], [-0.2, 0.8, 0.1, -1.5]], np.float32)
    return (x, np.array([1.0, 0.5, -1.2, 2.0], np.float32), np.array([0.1, -0.2, 0.0, 0.3], np.float32))


def eval_reference(x, weight, bias):
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    xhat = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    return np.sum((xhat * weight + bias) * COEF, axis=-1)
