"""Issue 18, the rest: custom_jvp nondiff arrays by context (VJP106), a jvp rule whose primal output
is not the function's value (VJP603), compositions JAX cannot differentiate (VJP604, VJP605) and
non-JAX values in differentiable slots (VJP109)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("Hazard families: custom_jvp nondiff contexts, rule primal outputs, compositions, non-JAX values")

print("## A. custom_jvp with an array in nondiff_argnums, by calling context")


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def scaled(x, a):
    return a * jnp.sin(x)


@scaled.defjvp
def scaled_jvp(a, primals, tangents):
    (x,), (t,) = primals, tangents
    return scaled(x, a), a * jnp.cos(x) * t


X = jnp.array([0.3, 1.2])
A = jnp.array([2.0, -1.0])
REF = A * jnp.cos(X)
loss = lambda x, a: jnp.sum(scaled(x, a))  # noqa: E731
check("A1 eager grad, a concrete", lambda: jax.grad(loss)(X, A), REF)
check("A2 jit(grad), a a jit argument", lambda: jax.jit(jax.grad(loss))(X, A), REF)
check("A3 grad(jit), a a jit argument", lambda: jax.grad(jax.jit(loss))(X, A), REF)
check("A4 vmap(grad) over a", lambda: jax.vmap(jax.grad(loss))(X[None], A[None]), REF[None])


def scan_carry(x, a):
    def step(carry, _):
        v, m = carry
        return (scaled(v, m), m), None
    (out, _), _ = jax.lax.scan(step, (x, a), None, length=1)
    return jnp.sum(out)


def scan_closed(x, a):
    def step(v, _):
        return scaled(v, a), None
    out, _ = jax.lax.scan(step, x, None, length=1)
    return jnp.sum(out)


def scan_xs(x, a):
    def step(v, m):
        return scaled(v, m), None
    out, _ = jax.lax.scan(step, x, a[None])
    return jnp.sum(out)


check("A5 scan, a in the carry: forward only", lambda: scan_carry(X, A), jnp.sum(A * jnp.sin(X)))
check("A6 scan, a in the carry: grad", lambda: jax.grad(scan_carry)(X, A), REF)
check("A7 scan, a closed over by the body (an outer argument): grad", lambda: jax.grad(scan_closed)(X, A), REF)
check("A8 scan, a closed over, a a module constant: grad", lambda: jax.grad(lambda x: scan_closed(x, A))(X), REF)
check("A9 scan, a scanned over (xs): grad", lambda: jax.grad(scan_xs)(X, A), REF)
check("A10 fori_loop body, a an outer argument: grad",
      lambda: jax.grad(lambda x, a: jnp.sum(jax.lax.fori_loop(0, 1, lambda i, v: scaled(v, a), x)))(X, A), REF)
check("A11 cond branch, a an operand: grad",
      lambda: jax.grad(lambda x, a: jnp.sum(jax.lax.cond(True, scaled, lambda v, m: v, x, a)))(X, A), REF)

fj = jax.jit(scaled)
check("A12 jacobian(jit(f)), a a jit argument", lambda: jax.jacobian(fj)(X, A), jnp.diag(REF))
check("A13 jacfwd(jit(f))", lambda: jax.jacfwd(fj)(X, A), jnp.diag(REF))
check("A14 jacrev(jit(f))", lambda: jax.jacrev(fj)(X, A), jnp.diag(REF))
check("A15 grad(jit(f)) of a sum", lambda: jax.grad(lambda x, a: jnp.sum(fj(x, a)))(X, A), REF)
check("A16 jacobian(f), no jit", lambda: jax.jacobian(scaled)(X, A), jnp.diag(REF))
check("A17 jacobian(jit(f)), a closed over (static)", lambda: jax.jacobian(jax.jit(lambda x: scaled(x, A)))(X),
      jnp.diag(REF))
check("A18 jit(jacobian(f)), a a jit argument", lambda: jax.jit(jax.jacobian(scaled))(X, A), jnp.diag(REF))


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def take(x, idx):
    return x[idx]


@take.defjvp
def take_jvp(idx, primals, tangents):
    (x,), (t,) = primals, tangents
    return take(x, idx), t[idx]


IDX = jnp.array([1, 0])
check("A19 jacobian(jit(take)), int index array", lambda: jax.jacobian(jax.jit(take))(X, IDX),
      jnp.eye(2)[IDX])
check("A20 grad(jit(sum take))", lambda: jax.grad(jax.jit(lambda x, i: jnp.sum(take(x, i))))(X, IDX),
      jnp.ones(2))

print("## B. jvp rule whose primal output is not the function's value")


def make_rule(primal_out):
    @jax.custom_jvp
    def f(x):
        return jnp.log(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return primal_out(f, x, t), t / x
    return f


X0 = jnp.array(0.5)
for label, out in (("f(x) (correct)", lambda f, x, t: f(x)),
                   ("jnp.log(x) recomputed (correct)", lambda f, x, t: jnp.log(x)),
                   ("computed from the tangent: jnp.log(x) + t", lambda f, x, t: jnp.log(x) + t),
                   ("computed from the tangent: t / x", lambda f, x, t: t / x),
                   ("cleaned input: jnp.log(jnp.maximum(x, 1.0))", lambda f, x, t: jnp.log(jnp.maximum(x, 1.0))),
                   ("cleaned input: f(jnp.clip(x, 1.0, 2.0))", lambda f, x, t: f(jnp.clip(x, 1.0, 2.0)))):
    f = make_rule(out)
    print(f"### rule primal output {label}")
    check(f"B eager f(x) [{label[:20]}]", lambda: f(X0), jnp.log(X0))
    check(f"B jvp primal out [{label[:20]}]", lambda: jax.jvp(f, (X0,), (jnp.array(3.0),))[0], jnp.log(X0))
    check(f"B value_and_grad value [{label[:20]}]", lambda: jax.value_and_grad(f)(X0)[0], jnp.log(X0))
    check(f"B grad [{label[:20]}]", lambda: jax.grad(f)(X0), 1 / X0)
    check(f"B grad of downstream f(x)**2 [{label[:20]}]", lambda: jax.grad(lambda v: f(v) ** 2)(X0),
          2 * jnp.log(X0) / X0)
    check(f"B jacfwd on a vector [{label[:20]}]", lambda: jax.jacfwd(f)(jnp.array([0.5, 0.8])),
          jnp.diag(1 / jnp.array([0.5, 0.8])))

print("## C. a bwd that is itself a custom_vjp, returning None for the residuals it received")


def make_nested(second):
    @jax.custom_vjp
    def cube(x):
        return x ** 3

    def cube_fwd(x):
        return cube(x), (x,)

    @jax.custom_vjp
    def cube_bwd(saved, ct):
        (x,) = saved
        return (3.0 * x ** 2 * ct,)

    def cube_bwd_fwd(saved, ct):
        return cube_bwd(saved, ct), (saved, ct)

    def cube_bwd_bwd(res, dd):
        (x,), ct = res
        (dd,) = dd
        return second(x, ct, dd), 3.0 * x ** 2 * dd

    cube_bwd.defvjp(cube_bwd_fwd, cube_bwd_bwd)
    cube.defvjp(cube_fwd, cube_bwd)
    return cube


for label, second in (("(None,)", lambda x, ct, dd: (None,)),
                      ("(jnp.zeros_like(x),)", lambda x, ct, dd: (jnp.zeros_like(x),)),
                      ("(6 x ct dd,) (correct)", lambda x, ct, dd: (6.0 * x * ct * dd,))):
    cube = make_nested(second)
    check(f"C grad, inner bwd_bwd returns {label}", lambda: jax.grad(cube)(2.0), 12.0)
    check(f"C grad(grad), inner bwd_bwd returns {label}", lambda: jax.grad(jax.grad(cube))(2.0), 12.0)

print("## D. compositions")


def plain(x):
    return jnp.sin(x)


stacked = jax.custom_jvp(plain)
stacked.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
stacked = jax.custom_vjp(stacked)
stacked.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
X1 = jnp.array(0.7)
check("D1 custom_vjp rebound over custom_jvp: grad", lambda: jax.grad(stacked)(X1), jnp.cos(X1))
check("D1 ... jvp", lambda: jax.jvp(stacked, (X1,), (1.0,))[1], jnp.cos(X1))
check("D1 ... jacfwd", lambda: jax.jacfwd(stacked)(X1), jnp.cos(X1))
check("D1 ... hessian", lambda: jax.hessian(stacked)(X1), -jnp.sin(X1))
check("D1 ... grad(grad)", lambda: jax.grad(jax.grad(stacked))(X1), -jnp.sin(X1))


@jax.custom_vjp
@jax.custom_jvp
def deco(x):
    return jnp.sin(x)


deco.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
check("D2 @custom_vjp over @custom_jvp (no defjvp): eager", lambda: deco(X1), jnp.sin(X1))
check("D2 ... grad", lambda: jax.grad(deco)(X1), jnp.cos(X1))
check("D2 ... jvp", lambda: jax.jvp(deco, (X1,), (1.0,))[1], jnp.cos(X1))

inner_vjp = jax.custom_vjp(plain)
inner_vjp.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
outer_jvp = jax.custom_jvp(inner_vjp)
outer_jvp.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
check("D3 custom_jvp over custom_vjp: grad", lambda: jax.grad(outer_jvp)(X1), jnp.cos(X1))
check("D3 ... jvp", lambda: jax.jvp(outer_jvp, (X1,), (1.0,))[1], jnp.cos(X1))
check("D3 ... hessian", lambda: jax.hessian(outer_jvp)(X1), -jnp.sin(X1))

from jax.custom_batching import custom_vmap  # noqa: E402


@jax.custom_vjp
def add(a, b):
    return a + b


add.defvjp(lambda a, b: (a + b, None), lambda _, g: (g, g))
vmapped = custom_vmap(add)
vmapped.def_vmap(lambda axis_size, in_batched, a, b: (add(a, b), any(in_batched)))
A2, B2 = jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])
check("D4 custom_vmap around custom_vjp: eager", lambda: vmapped(A2, B2), A2 + B2)
check("D4 ... vmap", lambda: jax.vmap(vmapped)(A2, B2), A2 + B2)
check("D4 ... grad", lambda: jax.grad(lambda a, b: jnp.sum(vmapped(a, b)))(A2, B2), jnp.ones(2))
check("D4 ... jit(grad)", lambda: jax.jit(jax.grad(lambda a, b: jnp.sum(vmapped(a, b))))(A2, B2), jnp.ones(2))
check("D4 ... vjp", lambda: jax.vjp(vmapped, A2, B2)[1](jnp.ones(2)), (jnp.ones(2), jnp.ones(2)))


@custom_vmap
def batched_sin(x):
    return jnp.sin(x)


batched_sin.def_vmap(lambda axis_size, in_batched, x: (jnp.sin(x), in_batched[0]))
wrapped = jax.custom_vjp(lambda x: batched_sin(x))
wrapped.defvjp(lambda x: (batched_sin(x), x), lambda x, g: (jnp.cos(x) * g,))
check("D5 custom_vjp around custom_vmap: grad", lambda: jax.grad(lambda v: jnp.sum(wrapped(v)))(A2), jnp.cos(A2))
check("D5 ... vmap(grad)", lambda: jax.vmap(jax.grad(wrapped))(A2), jnp.cos(A2))



@custom_vmap
@jax.custom_vjp
def stacked_scale(x):
    return 3.0 * x


stacked_scale.fun.defvjp(lambda x: (3.0 * x, None), lambda _, g: (3.0 * g,))
stacked_scale.def_vmap(lambda axis_size, in_batched, x: (3.0 * x, in_batched[0]))
check("D6 @custom_vmap stacked above @custom_vjp: eager", lambda: stacked_scale(A2), 3 * A2)
check("D6 ... vmap", lambda: jax.vmap(stacked_scale)(A2), 3 * A2)
check("D6 ... grad", lambda: jax.grad(lambda v: jnp.sum(stacked_scale(v)))(A2), 3 * jnp.ones(2))

print("## E. non-JAX values in differentiable positions")


@jax.custom_vjp
def apply_vjp(x, cfg):
    return x * 2.0


apply_vjp.defvjp(lambda x, cfg: (x * 2.0, None), lambda _, g: (2.0 * g, None))


@jax.custom_jvp
def apply_jvp(x, cfg):
    return x * 2.0


apply_jvp.defjvp(lambda p, t: (p[0] * 2.0, 2.0 * t[0]))


class Plain:
    pass


for label, cfg in (("a string 'relu'", "relu"), ("a dict {'act': 'relu', 'w': 1.0}", {"act": "relu", "w": 1.0}),
                   ("a tuple (1.0, 'mean')", (1.0, "mean")), ("None", None), ("a tuple (1.0, None)", (1.0, None)),
                   ("a plain object", Plain()), ("a Python bool True", True), ("a dict of floats", {"w": 1.0})):
    check(f"E custom_vjp eager, cfg {label}", lambda: apply_vjp(X1, cfg), 2 * X1)
    check(f"E custom_vjp grad wrt x, cfg {label}", lambda: jax.grad(apply_vjp)(X1, cfg), 2.0)
    check(f"E custom_jvp eager, cfg {label}", lambda: apply_jvp(X1, cfg), 2 * X1)
    check(f"E custom_jvp grad wrt x, cfg {label}", lambda: jax.grad(apply_jvp)(X1, cfg), 2.0)

nd_vjp = jax.custom_vjp(lambda x, cfg: x * 2.0, nondiff_argnums=(1,))
nd_vjp.defvjp(lambda x, cfg: (x * 2.0, None), lambda cfg, _, g: (2.0 * g,))
check("E nondiff_argnums=(1,), cfg a string: grad", lambda: jax.grad(nd_vjp)(X1, "relu"), 2.0)
check("E nondiff_argnums=(1,), cfg a dict with a string: grad (unhashable)",
      lambda: jax.grad(nd_vjp)(X1, {"act": "relu"}), 2.0)
