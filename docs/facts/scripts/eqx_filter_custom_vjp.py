"""equinox.filter_custom_vjp: def_fwd/def_bwd, `perturbed`, the vjp_arg convention, static leaves."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from harness import check, header

header("equinox.filter_custom_vjp")
X = jnp.array([0.5, 1.0, 2.0])
Y = jnp.array([1.0, 2.0, 3.0])
SEEN: dict = {}


def make(fwd=None, bwd=None, use_defvjp=False):
    """fn((x, y), scale, *, power=1) = sin(x) * y * scale; grads for x and y."""

    @eqx.filter_custom_vjp
    def fn(vjp_arg, scale, *, power=1):
        x, y = vjp_arg
        return jnp.sin(x) * y * scale ** power

    def fn_fwd(perturbed, vjp_arg, scale, *, power=1):
        SEEN["perturbed"] = perturbed
        x, y = vjp_arg
        return fn(vjp_arg, scale, power=power), (jnp.cos(x), jnp.sin(x))

    def fn_bwd(residuals, grad_obj, perturbed, vjp_arg, scale, *, power=1):
        cos_x, sin_x = residuals
        x, y = vjp_arg
        s = scale ** power
        return (cos_x * y * s * grad_obj, sin_x * s * grad_obj)

    if use_defvjp:
        fn.defvjp(fwd, bwd)
    else:
        SEEN["def_fwd returns"] = fn.def_fwd(fwd or fn_fwd)
        fn.def_bwd(bwd or fn_bwd)
    return fn


REF_X = jnp.cos(X) * Y * 2.0
REF_Y = jnp.sin(X) * 2.0
fn = make()
print("## 1. correct use")
check("grad w.r.t. x (vjp_arg[0])", lambda: jax.grad(lambda x: fn((x, Y), 2.0).sum())(X), REF_X)
print(f"  fwd's perturbed = {SEEN.pop('perturbed')}; def_fwd returned {SEEN.pop('def_fwd returns')!r}")
check("grad w.r.t. (x, y)", lambda: jax.grad(lambda xy: fn(xy, 2.0).sum())((X, Y)), (REF_X, REF_Y))
print(f"  fwd's perturbed = {SEEN.pop('perturbed')}")
check("jit(grad), scale a traced float", lambda: jax.jit(jax.grad(lambda x, s: fn((x, Y), s).sum()))(X, 2.0), REF_X)
check("vmap(grad)", lambda: jax.vmap(jax.grad(lambda x: fn((x, Y[0]), 2.0).sum()))(X), jnp.cos(X) * Y[0] * 2.0)
check("eqx.filter_jit(eqx.filter_grad)", lambda: eqx.filter_jit(eqx.filter_grad(lambda x: fn((x, Y), 2.0).sum()))(X),
      REF_X)
check("keyword power=2 (static int)", lambda: jax.grad(lambda x: fn((x, Y), 2.0, power=2).sum())(X), REF_X * 2.0)

print("## 2. arrays and non-arrays outside vjp_arg")
check("grad w.r.t. scale (an array in *args)", lambda: jax.grad(lambda s: fn((X, Y), s).sum())(2.0))
check("grad w.r.t. power passed as a float array kwarg",
      lambda: jax.grad(lambda p: fn((X, Y), 2.0, power=p).sum())(1.0))
check("jit: scale an array arg, not differentiated", lambda: jax.jit(lambda s: fn((X, Y), s))(jnp.float32(2.0)),
      jnp.sin(X) * Y * 2.0)


@eqx.filter_custom_vjp
def apply(vjp_arg, fn, label):
    return fn(vjp_arg)


@apply.def_fwd
def apply_fwd(perturbed, vjp_arg, fn, label):
    return fn(vjp_arg), vjp_arg


@apply.def_bwd
def apply_bwd(res, g, perturbed, vjp_arg, fn, label):
    return jax.vjp(fn, vjp_arg)[1](g)[0] * 3.0


print(f"  `@apply.def_fwd` rebinds apply_fwd to {apply_fwd!r}")
check("callable and str in *args (static), jit(grad)",
      lambda: jax.jit(jax.grad(lambda x: apply(x, jnp.sin, "label").sum()))(X), 3.0 * jnp.cos(X))


def with_closure(c):
    return jax.grad(lambda x: apply(x, lambda v: c * jnp.sin(v), "l").sum())(X)


check("callable closing over a jit tracer, jit(grad_x)", lambda: jax.jit(with_closure)(2.0), 6.0 * jnp.cos(X))
check("callable closing over the differentiated value, grad_c",
      lambda: jax.grad(lambda c: apply(X, lambda v: c * jnp.sin(v), "l").sum())(2.0))
check("closure converted with eqx.filter_closure_convert, grad_c",
      lambda: jax.grad(lambda c: apply(X, eqx.filter_closure_convert(lambda v: c * jnp.sin(v), X), "l").sum())(2.0))



@eqx.filter_custom_vjp
def apply_in_vjp_arg(vjp_arg):
    x, f = vjp_arg
    return f(x)


apply_in_vjp_arg.def_fwd(lambda perturbed, vjp_arg: (apply_in_vjp_arg(vjp_arg), None))
apply_in_vjp_arg.def_bwd(lambda res, g, perturbed, vjp_arg: eqx.filter_vjp(lambda xf: xf[1](xf[0]), vjp_arg)[1](g)[0])


def converted_in_vjp_arg(c):
    f = eqx.filter_closure_convert(lambda v: c * jnp.sin(v), X)
    return apply_in_vjp_arg((X, f)).sum()


check("filter_closure_convert'd fn inside vjp_arg, grad_c, c=2.0",
      lambda: jax.grad(converted_in_vjp_arg)(2.0), jnp.sin(X).sum())
check("same, c=jnp.float32(2.0)", lambda: jax.grad(converted_in_vjp_arg)(jnp.float32(2.0)), jnp.sin(X).sum())
check("same, jit(grad_c), c=2.0", lambda: jax.jit(jax.grad(converted_in_vjp_arg))(2.0), jnp.sin(X).sum())
check("unconverted closure inside vjp_arg, grad_c", lambda: jax.grad(
    lambda c: apply_in_vjp_arg((X, lambda v: c * jnp.sin(v))).sum())(2.0))

print("## 3. non-array and integer leaves inside vjp_arg")


@eqx.filter_custom_vjp
def mixed(vjp_arg):
    x, n, tag = vjp_arg
    return jnp.sin(x) * n


def mixed_fwd(perturbed, vjp_arg):
    SEEN["perturbed"] = perturbed
    return mixed(vjp_arg), None


mixed.def_fwd(mixed_fwd)
mixed.def_bwd(lambda r, g, p, vjp_arg: (jnp.cos(vjp_arg[0]) * vjp_arg[1] * g, None, None))
N = jnp.int32(2)
check("vjp_arg (x, int32 n, 'tag'), bwd returns (dx, None, None)",
      lambda: eqx.filter_grad(lambda v: mixed(v).sum())((X, N, "tag"))[0], jnp.cos(X) * 2)
print(f"  perturbed = {SEEN.pop('perturbed')}")
mixed.def_bwd(lambda r, g, p, vjp_arg: (jnp.cos(vjp_arg[0]) * vjp_arg[1] * g, jnp.zeros(()), None))
check("bwd returns an array for the int32 leaf", lambda: eqx.filter_grad(lambda v: mixed(v).sum())((X, N, "tag")))
mixed.def_bwd(lambda r, g, p, vjp_arg: (jnp.cos(vjp_arg[0]) * vjp_arg[1] * g,))
check("bwd returns a 1-tuple for a 3-tuple vjp_arg", lambda: eqx.filter_grad(lambda v: mixed(v).sum())((X, N, "tag")))
mixed.def_bwd(lambda r, g, p, vjp_arg: jnp.cos(vjp_arg[0]) * vjp_arg[1] * g)
check("bwd returns a bare array for a tuple vjp_arg", lambda: eqx.filter_grad(lambda v: mixed(v).sum())((X, N, "tag")))
mixed.def_bwd(lambda r, g, p, vjp_arg: None)
check("bwd returns None (whole vjp_arg zero)", lambda: eqx.filter_grad(lambda v: mixed(v).sum())((X, N, "tag")))

print("## 4. JAX-style rules (the protocol of jax.custom_vjp) given to filter_custom_vjp")
jax_fwd = lambda vjp_arg, scale, power=1: (fn(vjp_arg, scale), jnp.cos(vjp_arg[0]))  # noqa: E731
jax_bwd = lambda res, g: (res * g, None)  # noqa: E731
check("fwd without perturbed", lambda: jax.grad(lambda x: make(fwd=jax_fwd).__call__((x, Y), 2.0).sum())(X))
check("bwd(res, g) without perturbed/vjp_arg/args", lambda: jax.grad(lambda x: make(bwd=jax_bwd)((x, Y), 2.0).sum())(X))


def bwd_tuple_per_arg(residuals, grad_obj, perturbed, vjp_arg, scale, *, power=1):
    cos_x, sin_x = residuals
    return ((cos_x * vjp_arg[1] * 2 * grad_obj, sin_x * 2 * grad_obj), None)  # one slot per argument, JAX-style


check("bwd returns one slot per argument ((dx, dy), None)", lambda: jax.grad(
    lambda x: make(bwd=bwd_tuple_per_arg)((x, Y), 2.0).sum())(X))


def bwd_wrong_order(grad_obj, residuals, perturbed, vjp_arg, scale, *, power=1):
    cos_x, sin_x = residuals
    return (cos_x * vjp_arg[1] * 2 * grad_obj, sin_x * 2 * grad_obj)


check("bwd(g, residuals, ...) swapped", lambda: jax.grad(lambda x: make(bwd=bwd_wrong_order)((x, Y), 2.0).sum())(X))
check("deprecated fn.defvjp(fwd(vjp_arg, ...), bwd(res, g, vjp_arg, ...))", lambda: jax.grad(lambda x: make(
    fwd=lambda v, s, power=1: (jnp.sin(v[0]) * v[1] * s, jnp.cos(v[0])),
    bwd=lambda r, g, v, s, power=1: (r * v[1] * s * g, None), use_defvjp=True)((x, Y), 2.0).sum())(X), REF_X)

print("## 5. registration and call forms")


@eqx.filter_custom_vjp
def only_fwd(x):
    return x


only_fwd.def_fwd(lambda p, x: (x, None))
check("call with def_fwd but no def_bwd", lambda: only_fwd(X))
check("vjp_arg passed by keyword", lambda: fn(vjp_arg=(X, Y), scale=2.0))
check("no arguments", lambda: fn())
check("jax.jvp through filter_custom_vjp", lambda: jax.jvp(lambda x: fn((x, Y), 2.0), (X,), (X,)))
