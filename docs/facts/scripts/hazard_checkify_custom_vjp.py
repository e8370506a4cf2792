"""VJP608: checkify composed with jit (or checkpoint) around a custom_vjp / custom_jvp function,
differentiated (jax-ml/jax#35871). Every line is `grad` of sum(y) for `err, y = h(x)` unless the
label names another transformation; FOREACH = ValueError: foreach() argument 2 is shorter than argument 1."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental import checkify

from harness import check, header

header("checkify, jit and custom derivatives, differentiated")

X = jnp.array([0.3, -1.2, 2.5])
ONES = jnp.ones(3)
F, U, N, D, IDX = (checkify.float_checks, checkify.user_checks, checkify.nan_checks, checkify.div_checks,
                   checkify.index_checks)
A, AUTO = checkify.all_checks, checkify.automatic_checks


@jax.custom_vjp
def log_cosh(x):  # the report's shape: NaN-capable primitives inside the primal
    return jnp.logaddexp(x, -x) - jnp.log(2.0)


log_cosh.defvjp(lambda x: (log_cosh(x), jnp.tanh(x)), lambda t, g: (t * g,))


@jax.custom_vjp
def neg(x):  # no primitive checkify checks
    return -x


neg.defvjp(lambda x: (-x, None), lambda _, g: (-g,))


@jax.custom_vjp
def twice(x):  # mul: a NaN check inside the primal
    return x * 2.0


twice.defvjp(lambda x: (x * 2.0, None), lambda _, g: (2.0 * g,))


@jax.custom_vjp
def neg_checked(x):  # a user check inside the primal
    checkify.check(jnp.all(x < 100.0), "big")
    return -x


neg_checked.defvjp(lambda x: (-x, None), lambda _, g: (-g,))


@jax.custom_vjp
def neg_fwd_sin(x):  # a NaN-capable primitive only in fwd
    return -x


neg_fwd_sin.defvjp(lambda x: (-x, jnp.sin(x)), lambda _, g: (-g,))


@jax.custom_jvp
def jneg(x):
    return -x


jneg.defjvp(lambda p, t: (-p[0], -t[0]))


@jax.custom_jvp
def jsin(x):
    return jnp.sin(x)


jsin.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))


@jax.custom_jvp
def jneg_checked(x):
    checkify.check(jnp.all(x < 100.0), "big")
    return -x


jneg_checked.defjvp(lambda p, t: (-p[0], -t[0]))


def user_before(g):
    def f(x):
        checkify.check(jnp.all(x < 100.0), "big")
        return g(x)
    return f


def user_after(g):
    def f(x):
        y = g(x)
        checkify.check(jnp.all(y < 100.0), "big")
        return y
    return f


def debug_before(g):
    def f(x):
        checkify.debug_check(jnp.all(x < 100.0), "big")
        return g(x)
    return f


def grad_of(h):
    return lambda: jax.grad(lambda x: jnp.sum(h(x)[1]))(X)


def jit_ck(f, errors):
    return jax.jit(checkify.checkify(f, errors=errors))


print("## 1. the report's shape: log_cosh (custom_vjp) under float_checks, staged several ways")
STAGINGS = {
    "checkify(f)": lambda f, e: checkify.checkify(f, errors=e),
    "jit(checkify(f))": lambda f, e: jax.jit(checkify.checkify(f, errors=e)),
    "checkify(jit(f))": lambda f, e: checkify.checkify(jax.jit(f), errors=e),
    "checkpoint(checkify(f))": lambda f, e: jax.checkpoint(checkify.checkify(f, errors=e)),
    "jit(vmap(checkify(f)))": lambda f, e: jax.jit(jax.vmap(checkify.checkify(f, errors=e))),
    "vmap(jit(checkify(f)))": lambda f, e: jax.vmap(jax.jit(checkify.checkify(f, errors=e))),
    "jit(lambda x: checkify(f)(x))": lambda f, e: jax.jit(lambda x: checkify.checkify(f, errors=e)(x)),
}
REF = jnp.tanh(X)
for label, stage in STAGINGS.items():
    h = stage(log_cosh, F)
    check(f"{label}: eager", lambda: h(X)[1])
    check(f"{label}: grad", grad_of(h), REF)
    check(f"{label}: value_and_grad", lambda: jax.value_and_grad(lambda x: jnp.sum(h(x)[1]))(X)[1], REF)
    check(f"{label}: vjp", lambda: jax.vjp(lambda x: h(x)[1], X)[1](ONES)[0], REF)
    check(f"{label}: jacrev", lambda: jnp.diag(jax.jacrev(lambda x: h(x)[1])(X)), REF)
    check(f"{label}: jit(grad)", lambda: jax.jit(jax.grad(lambda x: jnp.sum(h(x)[1])))(X), REF)
    check(f"{label}: jvp", lambda: jax.jvp(lambda x: h(x)[1], (X,), (ONES,))[1], REF)

print("## 2. the errors set: jit(checkify(log_cosh, errors=E)); log_cosh has no division, index or user check")
for label, errors in (("user_checks", U), ("nan_checks", N), ("div_checks", D), ("index_checks", IDX),
                      ("float_checks", F), ("automatic_checks", AUTO), ("all_checks", A),
                      ("all_checks - float_checks", A - F), ("float_checks | user_checks", F | U)):
    check(f"errors={label}", grad_of(jit_ck(log_cosh, errors)), REF)
check("errors not given (user_checks)", grad_of(jax.jit(checkify.checkify(log_cosh))), REF)

print("## 3. where the check is, custom_vjp, jit(checkify(g, errors=E))")
CASES = [
    ("neg, float: no check anywhere", neg, F),
    ("twice, float: x * 2.0 inside the primal", twice, F),
    ("twice, user: no check", twice, U),
    ("neg_checked, user: checkify.check inside the primal", neg_checked, U),
    ("neg_fwd_sin, float: jnp.sin only in fwd", neg_fwd_sin, F),
    ("neg(jnp.sin(x)), float: a check before the call", lambda x: neg(jnp.sin(x)), F),
    ("jnp.sin(neg(x)), float: a check after the call", lambda x: jnp.sin(neg(x)), F),
    ("neg(x) + jnp.sin(x), float: after, independent", lambda x: neg(x) + jnp.sin(x), F),
    ("neg(jnp.sin(x)), all_checks - float_checks", lambda x: neg(jnp.sin(x)), A - F),
    ("checkify.check then neg, user", user_before(neg), U),
    ("neg then checkify.check, user", user_after(neg), U),
    ("checkify.debug_check then neg, user", debug_before(neg), U),
    ("neg(x / 2.0), div", lambda x: neg(x / 2.0), D),
    ("neg(x - jnp.mean(x)), div", lambda x: neg(x - jnp.mean(x)), D),
    ("neg(x // 2.0), div", lambda x: neg(x // 2.0), D),
    ("neg(x * 2.0), div: no division", lambda x: neg(x * 2.0), D),
    ("neg(broadcast(x[jnp.argmax(x)])), index", lambda x: neg(jnp.broadcast_to(x[jnp.argmax(x)], (3,))), IDX),
    ("neg(x.at[1].set(0.0)), index", lambda x: neg(x.at[1].set(0.0)), IDX),
    ("neg(broadcast(jnp.take(x, 1))), index", lambda x: neg(jnp.broadcast_to(jnp.take(x, 1), (3,))), IDX),
    ("neg(broadcast(x[1])), index: a static index", lambda x: neg(jnp.broadcast_to(x[1], (3,))), IDX),
    ("neg(concatenate(x[0:2], x[2:])), index: static slices", lambda x: neg(jnp.concatenate([x[0:2], x[2:]])), IDX),
    ("neg(reshape(x, (x.shape[0] * 2 // 2,))), float: shape arithmetic",
     lambda x: neg(jnp.reshape(x, (x.shape[0] * 2 // 2,))), F),
]
for label, f, errors in CASES:
    check(label, grad_of(jit_ck(f, errors)))
check("neg_checked, user, without jit", grad_of(checkify.checkify(neg_checked)))

print("## 4. custom_jvp")
for label, f, errors in (("jneg, float: no check", jneg, F),
                         ("jneg(jnp.sin(x)), float: a check before the call", lambda x: jneg(jnp.sin(x)), F),
                         ("checkify.check then jneg, user", user_before(jneg), U),
                         ("jsin, float: jnp.sin inside the primal", jsin, F),
                         ("jneg_checked, user: checkify.check inside the primal", jneg_checked, U)):
    h = jit_ck(f, errors)
    check(f"{label}: grad", grad_of(h))
    check(f"{label}: jvp", lambda: jax.jvp(lambda x: h(x)[1], (X,), (ONES,))[1])
check("jsin, float, without jit: grad", grad_of(checkify.checkify(jsin, errors=F)))

print("## 5. jit (or control flow) inside checkify, checkify(g, errors=float_checks), no outer jit")
for label, g in (("checkify(jit(log_cosh))", jax.jit(log_cosh)),
                 ("checkify(checkpoint(neg . sin))", jax.checkpoint(lambda x: neg(jnp.sin(x)))),
                 ("g: jnp.sin, then jit(neg)", lambda x: jax.jit(neg)(jnp.sin(x))),
                 ("g: jit(jnp.sin), then neg", lambda x: neg(jax.jit(jnp.sin)(x))),
                 ("g: jit(lambda y: neg(jnp.sin(y)))", lambda x: jax.jit(lambda y: neg(jnp.sin(y)))(x)),
                 ("g: lax.cond around neg(jnp.sin(y))",
                  lambda x: jax.lax.cond(True, lambda y: neg(jnp.sin(y)), lambda y: y, x)),
                 ("g: lax.scan around neg(jnp.sin(y))",
                  lambda x: jax.lax.scan(lambda c, y: (c, neg(jnp.sin(y))), 0.0, x)[1]),
                 ("g: vmap(neg . sin)", jax.vmap(lambda x: neg(jnp.sin(x))))):
    check(label, grad_of(checkify.checkify(g, errors=F)))

print("## 6. where the differentiation goes (f = neg . sin, float_checks)")
f = lambda x: neg(jnp.sin(x))  # noqa: E731
loss = lambda x: jnp.sum(f(x))  # noqa: E731
ck = checkify.checkify(f, errors=F)
check("jit(grad(checkify(f)))", lambda: jax.jit(jax.grad(lambda x: jnp.sum(ck(x)[1])))(X))
check("checkify(grad(f))", lambda: checkify.checkify(jax.grad(loss), errors=F)(X)[1])
check("jit(checkify(grad(f)))", lambda: jax.jit(checkify.checkify(jax.grad(loss), errors=F))(X)[1])
check("jit(checkify(jit(grad(f))))", lambda: jax.jit(checkify.checkify(jax.jit(jax.grad(loss)), errors=F))(X)[1])
check("checkify(grad(jit(f)))", lambda: checkify.checkify(jax.grad(jax.jit(loss)), errors=F)(X)[1])
check("grad(jit(checkify(f)))", grad_of(jax.jit(ck)))
check("jit(grad(jit(checkify(f))))", lambda: jax.jit(jax.grad(lambda x: jnp.sum(jax.jit(ck)(x)[1])))(X))
check("jit(grad(checkify(jit(f))))",
      lambda: jax.jit(jax.grad(lambda x: jnp.sum(checkify.checkify(jax.jit(f), errors=F)(x)[1])))(X))
check("hessian(jit(checkify(f)))", lambda: jax.hessian(lambda x: jnp.sum(jax.jit(ck)(x)[1]))(X))
check("linearize(jit(checkify(f))) applied", lambda: jax.linearize(lambda x: jax.jit(ck)(x)[1], X)[1](ONES))
check("vmap(jit(checkify(f))), not differentiated", lambda: jax.vmap(lambda x: jax.jit(ck)(x)[1])(X))

print("## 7. plain functions, jit(checkify(g, errors=float_checks)): library custom_jvps count too")
for label, g in (("jnp.sin", jnp.sin), ("x * x", lambda x: x * x),
                 ("jax.nn.relu(jnp.sin(x))", lambda x: jax.nn.relu(jnp.sin(x))),
                 ("jax.nn.sigmoid", jax.nn.sigmoid), ("jax.nn.silu", jax.nn.silu), ("jax.nn.gelu", jax.nn.gelu),
                 ("jax.nn.logsumexp(x) * x", lambda x: jax.nn.logsumexp(x) * x),
                 ("jnp.logaddexp(x, -x)", lambda x: jnp.logaddexp(x, -x)), ("jax.nn.softplus", jax.nn.softplus),
                 ("jax.nn.log_sigmoid", jax.nn.log_sigmoid),
                 ("jax.scipy.special.entr(jnp.abs(x))", lambda x: jax.scipy.special.entr(jnp.abs(x)))):
    check(label, grad_of(jit_ck(g, F)))

print("## 8. decorators")


@jax.jit
@checkify.checkify
def deco_user(x):
    checkify.check(jnp.all(x < 100.0), "big")
    return neg(x)


@jax.jit
@partial(checkify.checkify, errors=F)
def deco_float(x):
    return log_cosh(x)


@checkify.checkify
@jax.jit
def deco_inner(x):
    checkify.check(jnp.all(x < 100.0), "big")
    return neg(x)


check("@jax.jit @checkify.checkify: check, then neg", grad_of(deco_user))
check("@jax.jit @partial(checkify.checkify, errors=float_checks): log_cosh", grad_of(deco_float), REF)
check("@checkify.checkify @jax.jit: check, then neg", grad_of(deco_inner))

print("## 9. the error itself still works when not differentiated")
check("jit(checkify(log_cosh)) on NaN: err.get()", lambda: str(jit_ck(log_cosh, F)(jnp.array([jnp.nan]))[0].get()))
