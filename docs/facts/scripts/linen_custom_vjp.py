"""flax.linen nn.custom_vjp(fn, forward_fn, backward_fn, grad_vars, nondiff_argnums): the lifted form."""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp

from harness import check, header

header("flax.linen.custom_vjp")
X = jnp.array([0.5, 1.0, 2.0])
SEEN: dict = {}


def model(bwd, nondiff=(), fwd=None, call=None, argnums=(0, 1)):
    """Dense(1) applied through nn.custom_vjp; returns grads of sum(out) w.r.t. (params, x)."""

    class M(nn.Module):
        @nn.compact
        def __call__(self, x, scale=2.0):
            def f(mdl, x, scale):
                return mdl(x) * scale

            def default_fwd(mdl, x, scale):
                y, vjp_fn = nn.vjp(lambda m, x: m(x) * scale, mdl, x)
                return y, vjp_fn

            sign_grad = nn.custom_vjp(f, forward_fn=fwd or default_fwd, backward_fn=bwd,
                                      nondiff_argnums=nondiff)
            return (call or (lambda g, d, x, s: g(d, x, s)))(sign_grad, nn.Dense(1), x, scale).sum()

    m = M()
    variables = m.init(jax.random.key(0), X)
    return lambda: jax.grad(lambda v, x: m.apply(v, x), argnums=argnums)(variables, X), variables


def plain_grads():
    class P(nn.Module):
        @nn.compact
        def __call__(self, x):
            return (nn.Dense(1)(x) * 2.0).sum()
    p = P()
    v = p.init(jax.random.key(0), X)
    return jax.grad(lambda v, x: p.apply(v, x), argnums=(0, 1))(v, X)


REF = plain_grads()  # same Dense(1) init (key 0), no custom rule


def bwd_ok(vjp_fn, y_t):
    SEEN["args"] = ("vjp_fn", type(y_t).__name__)
    params_t, *inputs_t = vjp_fn(y_t)
    return (params_t, *inputs_t, None)  # params, x, scale


run, _ = model(bwd_ok)
check("correct: bwd(res, g) -> (params_t, x_t, scale_t)", run, REF)
print(f"  bwd received {SEEN.pop('args', None)}")


def bwd_no_params(vjp_fn, y_t):
    params_t, x_t = vjp_fn(y_t)
    return (x_t, None)


check("bwd omits the params tangent", model(bwd_no_params)[0], REF)


def bwd_bare(vjp_fn, y_t):
    params_t, x_t = vjp_fn(y_t)
    return [params_t, x_t, None]


check("bwd returns a list", model(bwd_bare)[0], REF)


def bwd_short(vjp_fn, y_t):
    params_t, x_t = vjp_fn(y_t)
    return (params_t, x_t)


check("bwd forgets the scale slot (no nondiff)", model(bwd_short)[0], REF)
check("nondiff_argnums=(2,): bwd(scale, res, g) -> (params_t, x_t)",
      model(lambda scale, r, g: tuple(r(g)), nondiff=(2,))[0], REF)
check("nondiff_argnums=(2,): bwd(res, g) forgets scale",
      model(lambda r, g: tuple(r(g)), nondiff=(2,))[0])
check("nondiff_argnums=(2,): bwd returns a slot for scale",
      model(lambda s, r, g: (*r(g), None), nondiff=(2,))[0])


def fwd_bad(mdl, x, scale):
    return mdl(x) * scale


check("fwd returns a bare value", model(bwd_ok, fwd=fwd_bad)[0])


def fwd_short(mdl, x):
    return nn.vjp(lambda m, x: m(x), mdl, x)


check("fwd with one parameter too few", model(bwd_ok, fwd=fwd_short)[0])
check("nondiff_argnums=(0,) (the module slot)", model(lambda m, r, g: tuple(r(g)), nondiff=(0,))[0])
check("nondiff_argnums=(1,) (x, an array), eager grad w.r.t. params and x",
      model(lambda x, r, g: (r(g)[0], None), nondiff=(1,))[0])
check("nondiff_argnums=(1,) (x, an array), eager grad w.r.t. params only",
      model(lambda x, r, g: (r(g)[0], None), nondiff=(1,), argnums=0)[0], REF[0])


def jit_nondiff_array():
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            def f(mdl, x, s):
                return mdl(x) * s
            def fwd(mdl, x, s):
                return nn.vjp(lambda m: m(x) * s, mdl)
            def bwd(x, res, g):
                (params_t,) = res(g)
                return (params_t, None)
            return nn.custom_vjp(f, fwd, bwd, nondiff_argnums=(1,))(nn.Dense(1), x, 2.0).sum()
    m = M()
    v = m.init(jax.random.key(0), X)
    return jax.jit(jax.grad(lambda v, x: m.apply(v, x)))(v, X)


check("nondiff_argnums=(1,) x array, jit(grad) x traced", jit_nondiff_array)
check("call with a keyword argument scale=", lambda: model(bwd_ok, call=lambda g, d, x, s: g(d, x, scale=s))[0]())
