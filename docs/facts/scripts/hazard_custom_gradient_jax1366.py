"""jax.custom_gradient and jax-ml/jax#1366 ("nondifferentiable_argnums for jax.custom_gradient"):
(A) a Python callable passed as a positional argument of a custom_gradient function, which has no
nondiff_argnums (VJP108); (B) a custom_gradient defined inside a function whose returned output or
pullback is computed outside it, by `jax.vjp` or otherwise, from the values the enclosing function
also passes to it as arguments (VJP201)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("jax.custom_gradient: callables as arguments, output/pullback computed outside (jax-ml/jax#1366)")
A = jnp.array([1.0, 2.0, -1.0])
B = jnp.array([0.5, -1.5, 3.0])


def weighted(a, b):
    return a * b + 0.5 * a


DA = 0.5 * (B + 0.5)  # half of d/da sum(weighted)
DB = 0.5 * A

# ---------------------------------------------------------------------------------------------
print("## A. a callable in a positional argument of a custom_gradient function")


@jax.custom_gradient
def halved_grad(op, a, b):
    out, op_vjp = jax.vjp(op, a, b)
    return out, lambda g: (None,) + tuple(0.5 * c for c in op_vjp(g))


def loss_with(op):
    return lambda a, b: jnp.sum(halved_grad(op, a, b))


for label, op in (("def", weighted), ("lambda", lambda a, b: a * b + 0.5 * a),
                  ("functools.partial", partial(jnp.multiply)), ("jnp.multiply", jnp.multiply),
                  ("jax.tree_util.Partial", jax.tree_util.Partial(weighted))):
    ref = DA if label in ("def", "lambda", "jax.tree_util.Partial") else 0.5 * B
    check(f"callable {label}: eager", lambda: loss_with(op)(A, B))
    check(f"callable {label}: jit", lambda: jax.jit(loss_with(op))(A, B))
    check(f"callable {label}: grad wrt a", lambda: jax.grad(loss_with(op))(A, B), ref)


@jax.custom_gradient
def apply_scaled(fn, x):
    """The body calls the parameter directly; the vjp returns None for it."""
    return fn(x), lambda g: (None, 0.5 * jnp.cos(x) * g)


check("body calls its parameter, jnp.sin passed: eager", lambda: apply_scaled(jnp.sin, A))
check("body calls its parameter, Partial passed: eager", lambda: apply_scaled(jax.tree_util.Partial(jnp.sin), A))
check("body calls its parameter, Partial passed: grad", lambda: jax.grad(
    lambda x: jnp.sum(apply_scaled(jax.tree_util.Partial(jnp.sin), x)))(A), 0.5 * jnp.cos(A))


def make_halved_grad(op):
    """Look-alike (the workaround in the report): the callable is closed over, not passed."""
    @jax.custom_gradient
    def inner(a, b):
        out, op_vjp = jax.vjp(op, a, b)
        return out, lambda g: tuple(0.5 * c for c in op_vjp(g))
    return inner


closed = make_halved_grad(weighted)
check("callable closed over by a factory: eager", lambda: jnp.sum(closed(A, B)))
check("callable closed over by a factory: jit", lambda: jax.jit(lambda a, b: jnp.sum(closed(a, b)))(A, B))
check("callable closed over by a factory: grad", lambda: jax.grad(lambda a, b: jnp.sum(closed(a, b)))(A, B), DA)
check("callable closed over by a factory: grad(jit)",
      lambda: jax.grad(jax.jit(lambda a, b: jnp.sum(closed(a, b))))(A, B), DA)


@jax.custom_gradient
def int_power(x, n):
    """A Python int in a custom_gradient slot, used as a Python value (VJP108's other half)."""
    k = int(n)
    return x ** k, lambda g: (g * k * x ** (k - 1), None)


check("int(n) of an argument: eager", lambda: int_power(A, 3))
check("int(n) of an argument: grad", lambda: jax.grad(lambda x: jnp.sum(int_power(x, 3)))(A), 3 * A ** 2)
check("int(n) of an argument: jit, n closed over", lambda: jax.jit(lambda x: int_power(x, 3))(A))

# ---------------------------------------------------------------------------------------------
print("## B. a custom_gradient whose output or pullback is computed outside it")


def outer_vjp_both(a, b):
    """The eval case: output and pullback from a jax.vjp in the enclosing function."""
    out, op_vjp = jax.vjp(weighted, a, b)

    @jax.custom_gradient
    def inner(a_, b_):
        return out, lambda g: tuple(0.5 * c for c in op_vjp(g))
    return jnp.sum(inner(a, b))


def outer_vjp_pullback_only(a, b):
    """Only the pullback comes from outside; the output is computed inside from the arguments."""
    _, op_vjp = jax.vjp(weighted, a, b)

    @jax.custom_gradient
    def inner(a_, b_):
        return weighted(a_, b_), lambda g: tuple(0.5 * c for c in op_vjp(g))
    return jnp.sum(inner(a, b))


def outer_vjp_output_only(a, b):
    """Only the output comes from the outer jax.vjp; the pullback is built inside."""
    out, _ = jax.vjp(weighted, a, b)

    @jax.custom_gradient
    def inner(a_, b_):
        _, vjp_ = jax.vjp(weighted, a_, b_)
        return out, lambda g: tuple(0.5 * c for c in vjp_(g))
    return jnp.sum(inner(a, b))


def outer_value_output(a, b):
    """The output is an outer value computed with jnp from the arguments (no jax.vjp)."""
    out = a * b + 0.5 * a

    @jax.custom_gradient
    def inner(a_, b_):
        return out, lambda g: (0.5 * g * (b_ + 0.5), 0.5 * g * a_)
    return jnp.sum(inner(a, b))


def outer_value_vjp_only(a, b):
    """Only the vjp function reads an outer jnp value computed from the arguments (no jax.vjp)."""
    da = 0.5 * (b + 0.5)
    db = 0.5 * a

    @jax.custom_gradient
    def inner(a_, b_):
        return weighted(a_, b_), lambda g: (g * da, g * db)
    return jnp.sum(inner(a, b))


def outer_value_vjp_only_other(a, b, c):
    """The vjp function reads an outer value computed from a parameter the custom_gradient is not given."""
    s = 0.5 * c

    @jax.custom_gradient
    def inner(a_, b_):
        return weighted(a_, b_), lambda g: (g * s * (b_ + 0.5), g * s * a_)
    return jnp.sum(inner(a, b))


def inside_vjp(a, b):
    """Look-alike: the pullback is built inside the custom_gradient with jax.vjp on its arguments."""
    @jax.custom_gradient
    def inner(a_, b_):
        out, op_vjp = jax.vjp(weighted, a_, b_)
        return out, lambda g: tuple(0.5 * c for c in op_vjp(g))
    return jnp.sum(inner(a, b))


def outer_vjp_of_constant(a, b):
    """Look-alike: the outer jax.vjp is on a module constant, not on what is passed in."""
    _, const_vjp = jax.vjp(jnp.sin, B)

    @jax.custom_gradient
    def inner(a_, b_):
        return weighted(a_, b_), lambda g: (0.5 * g * (b_ + 0.5), 0.5 * g * a_ + 0.0 * const_vjp(g)[0])
    return jnp.sum(inner(a, b))


def run(name, fn, dab):
    print(f"### {name}")
    value = jnp.sum(weighted(A, B))
    check(f"{name}: eager", lambda: fn(A, B), value)
    check(f"{name}: jit", lambda: jax.jit(fn)(A, B), value)
    check(f"{name}: grad wrt a", lambda: jax.grad(fn)(A, B), dab[0])
    check(f"{name}: grad wrt (a, b)", lambda: jax.grad(fn, (0, 1))(A, B), dab)
    check(f"{name}: jit(grad)", lambda: jax.jit(jax.grad(fn))(A, B), dab[0])
    check(f"{name}: grad(jit)", lambda: jax.grad(jax.jit(fn))(A, B), dab[0])
    check(f"{name}: vmap(grad)", lambda: jax.vmap(jax.grad(fn))(jnp.stack([A, A]), jnp.stack([B, B])),
          jnp.stack([dab[0], dab[0]]))


run("outer jax.vjp gives output and pullback", outer_vjp_both, (DA, DB))
run("outer jax.vjp gives the pullback only", outer_vjp_pullback_only, (DA, DB))
run("outer jax.vjp gives the output only", outer_vjp_output_only, (DA, DB))
run("outer jnp value is the output", outer_value_output, (DA, DB))
run("outer jnp values read by the vjp only", outer_value_vjp_only, (DA, DB))
run("outer value of another parameter read by the vjp only",
    lambda a, b: outer_value_vjp_only_other(a, b, jnp.float32(1.0)), (DA, DB))
run("jax.vjp inside the custom_gradient", inside_vjp, (DA, DB))
run("outer jax.vjp of a module constant", outer_vjp_of_constant, (DA, DB))
