"""flax.nnx.custom_vjp: protocol in each mode, nondiff slots, arity and structure misuse."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from harness import check, header

header("flax.nnx.custom_vjp")
X = jnp.array([0.5, 1.0, 2.0])
SEEN: dict = {}


def sin_mul(mode: dict, nondiff=()):
    """f(x, y) = sin(x) * y on arrays; bwd written for the mode's protocol."""

    @nnx.custom_vjp(nondiff_argnums=nondiff, **mode)
    def f(x, y):
        return jnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):
        SEEN["g"] = jax.tree.map(lambda a: type(a).__name__, g, is_leaf=lambda a: a is None)
        cos_x, sin_x, y = res
        out_g = g[1] if mode.get("graph_updates", True) and mode.get("graph", True) else g
        return (cos_x * y * out_g, jnp.sum(sin_x * out_g))

    f.defvjp(f_fwd, f_bwd)
    return f


REF_X = jnp.cos(X) * 2.0  # d/dx sum(sin(x) * 2)
MODES = {"default (graph=True, graph_updates=True)": {}, "graph_updates=False": {"graph_updates": False},
         "graph=False": {"graph": False}}
print("## 1. arrays only, no nondiff: what bwd's g is, what bwd returns")
for name, mode in MODES.items():
    f = sin_mul(mode)
    print(f"  type: {type(f).__name__}  ({name})")
    check(f"  grad_x {name}", lambda: jax.grad(lambda x: f(x, 2.0).sum())(X), REF_X)
    print(f"  bwd received g = {SEEN.pop('g', None)}")
    check(f"  jit(grad_x) {name}", lambda: jax.jit(jax.grad(lambda x: f(x, 2.0).sum()))(X), REF_X)
    check(f"  nnx.jit(nnx.grad) {name}", lambda: nnx.jit(nnx.grad(lambda x: f(x, 2.0).sum()))(X), REF_X)


print("## 2. a JAX-style bwd (g used as the output cotangent) in the default mode")
@nnx.custom_vjp
def g2(x):
    return jnp.sin(x)
g2.defvjp(lambda x: (g2(x), jnp.cos(x)), lambda res, g: (res * g,))
check("  grad, bwd multiplies the (updates, out_g) pair", lambda: jax.grad(lambda x: g2(x).sum())(X), jnp.cos(X))
@nnx.custom_vjp(graph_updates=False)
def g2b(x):
    return jnp.sin(x)
g2b.defvjp(lambda x: (g2b(x), jnp.cos(x)), lambda res, g: (res * g,))
check("  same bwd with graph_updates=False", lambda: jax.grad(lambda x: g2b(x).sum())(X), jnp.cos(X))


print("## 3. nondiff_argnums=(0,) holding an array (bwd(a, res, g))")
for name, mode in MODES.items():
    @nnx.custom_vjp(nondiff_argnums=(0,), **mode)
    def h(a, x):
        return a * jnp.sin(x)
    def h_fwd(a, x):
        return h(a, x), jnp.cos(x)
    def h_bwd(a, res, g, _updates=mode.get("graph_updates", True) and mode.get("graph", True)):
        out_g = g[1] if _updates else g
        return (a * res * out_g,)
    h.defvjp(h_fwd, h_bwd)
    A = jnp.float32(2.0)
    check(f"  eager grad_x, a concrete ({name})", lambda: jax.grad(lambda x: h(A, x).sum())(X), REF_X)
    check(f"  jit, a passed as jit arg ({name})", lambda: jax.jit(lambda a, x: h(a, x))(A, X), 2 * jnp.sin(X))
    check(f"  jit(grad_x), a passed as arg ({name})", lambda: jax.jit(jax.grad(lambda x, a: h(a, x).sum()))(X, A),
          REF_X)
    check(f"  nnx.jit, a passed as arg ({name})", lambda: nnx.jit(lambda a, x: h(a, x))(A, X), 2 * jnp.sin(X))
    check(f"  jit, a closed over (concrete) ({name})", lambda: jax.jit(lambda x: h(A, x))(X), 2 * jnp.sin(X))
    check(f"  jit, a = 2.0 Python float ({name})", lambda: jax.jit(lambda x: h(2.0, x))(X), 2 * jnp.sin(X))


print("## 4. Modules and Variables")


class Foo(nnx.Module):
    def __init__(self, x, y):
        self.x = nnx.Param(x)
        self.y = nnx.Param(y)


REF_M = (jnp.cos(1.0) * 2.0, jnp.sin(1.0))


def module_fn(mode, bwd_kind):
    @nnx.custom_vjp(**mode)
    def f(m):
        return jnp.sin(m.x[...]) * m.y[...]

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]), jnp.sin(m.x[...]), m)

    def f_bwd(res, g):
        cos_x, sin_x, m = res
        if bwd_kind == "state":  # default mode: g = (input_updates_g, out_g); return a State per Module
            (m_g,), out_g = g
            SEEN["m_g"] = type(m_g).__name__
            m_g = jax.tree.map(lambda a: a, m_g)
            m_g["x"][...] = cos_x * out_g * m.y[...]
            m_g["y"][...] = sin_x * out_g
            return (m_g,)
        if bwd_kind == "module":  # simple modes: g = out_g; return a Module-shaped tangent
            m_g = nnx.clone(m)
            m_g.x[...] = cos_x * g * m.y[...]
            m_g.y[...] = sin_x * g
            return (m_g,)
        if bwd_kind == "module-in-default":
            (m_g,), out_g = g
            m_g2 = nnx.clone(m)
            m_g2.x[...] = cos_x * out_g * m.y[...]
            m_g2.y[...] = sin_x * out_g
            return (m_g2,)
        if bwd_kind == "array":
            out_g = g[1] if isinstance(g, tuple) else g
            return (cos_x * out_g,)
        if bwd_kind == "bare":
            (m_g,), out_g = g
            return m_g

    f.defvjp(f_fwd, f_bwd)
    return f


def leaf(tree, name):
    """nnx.grad gives a State in the default mode and a Module otherwise."""
    return (tree[name] if isinstance(tree, nnx.State) else getattr(tree, name))[...]


def mgrad(f, graph_updates=True, graph=True):
    m = Foo(jnp.array(1.0), jnp.array(2.0))
    grads = nnx.grad(f, graph=graph, graph_updates=graph_updates)(m)
    print(f"    nnx.grad returned a {type(grads).__name__}")
    return (leaf(grads, "x"), leaf(grads, "y"))


check("  default mode, bwd returns (State,)", lambda: mgrad(module_fn({}, "state")), REF_M)
print(f"  bwd's input_updates_g entry for the Module: {SEEN.pop('m_g', None)}")
check("  default mode, bwd returns (Module clone,)", lambda: mgrad(module_fn({}, "module-in-default")), REF_M)
check("  default mode, bwd returns a bare State (no tuple)", lambda: mgrad(module_fn({}, "bare")), REF_M)
check("  default mode, bwd returns (array,) for a Module", lambda: mgrad(module_fn({}, "array")), REF_M)
check("  graph_updates=False, bwd returns (Module clone,)",
      lambda: mgrad(module_fn({"graph_updates": False}, "module"), graph_updates=False), REF_M)
check("  graph=False, bwd returns (Module clone,)",
      lambda: mgrad(module_fn({"graph": False}, "module"), graph=False), REF_M)
check("  graph_updates=False, bwd returns (array,)",
      lambda: mgrad(module_fn({"graph_updates": False}, "array"), graph_updates=False), REF_M)


def int_nondiff_module(mode):
    @nnx.custom_vjp(nondiff_argnums=(0,), **mode)
    def f(m, x):
        return m.x[...] * x
    f.defvjp(lambda m, x: (f(m, x), None), lambda m, res, g: (m.x[...] * (g[1] if not mode else g),))
    return f(Foo(jnp.array(1.0), jnp.array(2.0)), X)


check("  int nondiff_argnums on a Module arg, default mode", lambda: int_nondiff_module({}))
check("  int nondiff_argnums on a Module arg, graph_updates=False",
      lambda: int_nondiff_module({"graph_updates": False}), X)
check("  int nondiff_argnums on a Module arg, graph=False", lambda: int_nondiff_module({"graph": False}), X)


def module_nondiff_jit(mode):
    @nnx.custom_vjp(nondiff_argnums=(0,), **mode)
    def f(m, x):
        return m.x[...] * x
    f.defvjp(lambda m, x: (f(m, x), None), lambda m, res, g: (m.x[...] * g,))
    m = Foo(jnp.array(1.0), jnp.array(2.0))
    return nnx.jit(lambda m, x: f(m, x), **mode)(m, X)


check("  Module in int nondiff slot under nnx.jit, graph_updates=False",
      lambda: module_nondiff_jit({"graph_updates": False}), X)
check("  Module in int nondiff slot under nnx.jit, graph=False", lambda: module_nondiff_jit({"graph": False}), X)


def variable_nondiff(mode, jit):
    v = nnx.BatchStat(jnp.array(3.0))
    @nnx.custom_vjp(nondiff_argnums=(1,), **mode)
    def f(x, state):
        return x * state[...]
    f.defvjp(lambda x, s: (f(x, s), None), lambda s, res, g: (s[...] * g,))
    fn = lambda x: jax.grad(lambda x: f(x, v).sum())(x)  # noqa: E731
    return (nnx.jit(fn, **mode) if jit else fn)(X)


check("  Variable in nondiff slot, eager grad, graph_updates=False",
      lambda: variable_nondiff({"graph_updates": False}, False), 3.0 * jnp.ones(3))
check("  Variable in nondiff slot, nnx.jit(grad), graph_updates=False",
      lambda: variable_nondiff({"graph_updates": False}, True), 3.0 * jnp.ones(3))


def variable_nondiff_arg(mode):
    v = nnx.BatchStat(jnp.array(3.0))
    @nnx.custom_vjp(nondiff_argnums=(1,), **mode)
    def f(x, state):
        return x * state[...]
    f.defvjp(lambda x, s: (f(x, s), None), lambda s, res, g: (s[...] * g,))
    return nnx.jit(lambda x, v: f(x, v), **mode)(X, v)


check("  Variable passed through nnx.jit into nondiff slot, graph_updates=False",
      lambda: variable_nondiff_arg({"graph_updates": False}), 3.0 * X)
check("  same, graph=False", lambda: variable_nondiff_arg({"graph": False}), 3.0 * X)


def state_nondiff(jit):
    m = Foo(jnp.array(1.0), jnp.array(2.0))
    graphdef, state_x, state_rest = nnx.split(m, nnx.PathContains("x"), ...)
    @nnx.custom_vjp(nondiff_argnums=(1,), graph_updates=False)
    def f(sx, rest):
        mm = nnx.merge(graphdef, sx, rest)
        return jnp.sin(mm.x[...]) * mm.y[...]
    def f_bwd(rest, res, g):
        cos_x, sx = res
        mm = nnx.merge(graphdef, sx, rest)
        gx = nnx.clone(sx)
        gx.x[...] = cos_x * g * mm.y[...]
        return (gx,)
    f.defvjp(lambda sx, rest: (f(sx, rest), (jnp.cos(nnx.merge(graphdef, sx, rest).x[...]), sx)), f_bwd)
    loss = jax.grad(lambda sx, rest: f(sx, rest), argnums=0)
    return (jax.jit(loss) if jit else loss)(state_x, state_rest)["x"][...]


check("  State of arrays in nondiff slot (flax test pattern), eager grad", lambda: state_nondiff(False),
      jnp.cos(1.0) * 2.0)
check("  same, jax.jit(grad) with the State as a jit argument", lambda: state_nondiff(True), jnp.cos(1.0) * 2.0)


print("## 5. DiffState in nondiff_argnums")
x_only = nnx.DiffState(0, nnx.PathContains("x"))
def diffstate_fn(mode, delete_y=True):
    @nnx.custom_vjp(nondiff_argnums=(x_only,), **mode)
    def f(m):
        return jnp.sin(m.x[...]) * m.y[...]
    def f_bwd(res, g):
        (m_g,), out_g = g
        SEEN["keys"] = sorted(m_g.keys())
        cos_x, m = res
        m_g = jax.tree.map(lambda a: a, m_g)
        m_g["x"][...] = cos_x * out_g * m.y[...]
        if delete_y:
            del m_g["y"]
        return (m_g,)
    f.defvjp(lambda m: (f(m), (jnp.cos(m.x[...]), m)), f_bwd)
    return f


def diffstate_grad(delete_y=True):
    f = diffstate_fn({}, delete_y)
    m = Foo(jnp.array(1.0), jnp.array(2.0))
    return nnx.grad(f, argnums=x_only)(m)["x"][...]


check("  DiffState(0, 'x'), bwd deletes the non-diff 'y' entry", diffstate_grad, jnp.cos(1.0) * 2.0)
print(f"  input_updates_g State keys: {SEEN.pop('keys', None)}")
check("  DiffState(0, 'x'), bwd keeps 'y' (returns the full State)", lambda: diffstate_grad(False), jnp.cos(1.0) * 2.0)
check("  DiffState with graph_updates=False (at decoration)", lambda: diffstate_fn({"graph_updates": False}))
check("  DiffState with graph=False (at decoration)", lambda: diffstate_fn({"graph": False}))


print("## 6. updates_g keyword (Variable mutated in f)")


class Bar(nnx.Module):
    def __init__(self):
        self.x = nnx.Param(jnp.array(1.0))
        self.z = nnx.BatchStat(jnp.array(0.0))


def updates_fn(declare):
    @nnx.custom_vjp(graph_updates=False)
    def f(m):
        m.z[...] += 1.0
        return jnp.sin(m.x[...])
    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]), m)
    def bwd_plain(res, g):
        cos_x, m = res
        m_g = nnx.clone(m)
        m_g.x[...] = cos_x * g
        return (m_g,)
    def bwd_updates(res, g, *, updates_g):
        SEEN["updates_g"] = jax.tree.map(lambda a: type(a).__name__, updates_g, is_leaf=lambda a: a is None)
        return bwd_plain(res, g)
    f.defvjp(f_fwd, bwd_updates if declare else bwd_plain)
    return nnx.grad(f, graph_updates=False)(Bar()).x[...]


check("  bwd(res, g) without updates_g", lambda: updates_fn(False), jnp.cos(1.0))
check("  bwd(res, g, *, updates_g)", lambda: updates_fn(True), jnp.cos(1.0))
print(f"  updates_g received: {SEEN.pop('updates_g', None)}")


print("## 7. arity and structure mismatches (arrays f(x, y), grad w.r.t. x)")


def misuse(mode, fwd, bwd, nondiff=()):
    @nnx.custom_vjp(nondiff_argnums=nondiff, **mode)
    def f(x, y):
        return jnp.sin(x) * y
    f.defvjp(fwd, bwd)
    return jax.grad(lambda x: f(x, 2.0).sum())(X)


good_fwd = lambda x, y: (jnp.sin(x) * y, (jnp.cos(x), y))  # noqa: E731  (y is a Python float: bwd gives None)
for name, mode in MODES.items():
    simple = not (mode.get("graph_updates", True) and mode.get("graph", True))
    out = (lambda g: g) if simple else (lambda g: g[1])
    check(f"  correct: bwd(res, g) -> (dx, None) ({name})",
          lambda: misuse(mode, good_fwd, lambda r, g: (r[0] * r[1] * out(g), None)), REF_X)
    check(f"  bwd(g) one param ({name})", lambda: misuse(mode, good_fwd, lambda g: (g, g)))
    check(f"  bwd returns 1-tuple for 2 args ({name})",
          lambda: misuse(mode, good_fwd, lambda r, g: (r[0] * r[1] * out(g),)))
    check(f"  bwd returns 3-tuple for 2 args ({name})",
          lambda: misuse(mode, good_fwd, lambda r, g: (r[0] * r[1] * out(g), None, None)))
    check(f"  fwd with 1 param for 2 args ({name})",
          lambda: misuse(mode, lambda x: (jnp.sin(x), None), lambda r, g: (out(g), None)))
    check(f"  fwd returns a bare value ({name})",
          lambda: misuse(mode, lambda x, y: jnp.sin(x) * y, lambda r, g: (out(g), None)))
    check(f"  nondiff=(1,), bwd(res, g) forgets it ({name})",
          lambda: misuse(mode, good_fwd, lambda r, g: (r[0] * r[1] * out(g),), nondiff=(1,)))
    check(f"  nondiff=(1,), bwd returns a slot for it ({name})",
          lambda: misuse(mode, good_fwd, lambda y, r, g: (r[0] * y * out(g), None), nondiff=(1,)))
    check(f"  nondiff=(1,), bwd(y, res, g) -> 1-tuple ({name})",
          lambda: misuse(mode, good_fwd, lambda y, r, g: (r[0] * y * out(g),), nondiff=(1,)), REF_X)


print("## 8. registration and call forms")


def no_defvjp(mode):
    @nnx.custom_vjp(**mode)
    def f(x):
        return x
    return f(X)


check("  call before defvjp, default mode", lambda: no_defvjp({}))
check("  call before defvjp, graph_updates=False", lambda: no_defvjp({"graph_updates": False}))


def defvjp_decorator():
    @nnx.custom_vjp
    def f(x):
        return x

    @f.defvjp
    def f_fwd(x):
        return x, None
    return f


check("  @f.defvjp as a decorator", defvjp_decorator)
f_plain = nnx.custom_vjp(lambda x, y: jnp.sin(x) * y)
f_plain.defvjp(good_fwd, lambda r, g: (r[0] * r[1] * g[1], None))
check("  f = nnx.custom_vjp(fn) call form", lambda: jax.grad(lambda x: f_plain(x, 2.0).sum())(X), REF_X)
f_kw = nnx.custom_vjp(nondiff_argnums=(1,))(lambda x, n: jnp.sin(x) * n)
f_kw.defvjp(good_fwd, lambda n, r, g: (r[0] * n * g[1],))
check("  nnx.custom_vjp(nondiff_argnums=(1,))(fn)", lambda: jax.grad(lambda x: f_kw(x, 2.0).sum())(X), REF_X)
check("  keyword call f(x, y=2.0)", lambda: jax.grad(lambda x: f_plain(x, y=2.0).sum())(X), REF_X)
check("  defvjp returns", lambda: type(f_plain.defvjp(good_fwd, lambda r, g: (g[1], None))).__name__)


class WithMethod(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.array(2.0))

    def __call__(self, x):
        return self.w[...] * x


check("  nnx.custom_vjp(module.__call__) bound method", lambda: nnx.custom_vjp(WithMethod().__call__))


class Decorated(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.array(2.0))

    @nnx.custom_vjp
    def __call__(self, x):
        return self.w[...] * x


def decorated_method():
    Decorated.__call__.defvjp(lambda self, x: (self(x), None), lambda res, g: (g[0][0], g[1]))
    return Decorated()(X)


check("  @nnx.custom_vjp on a method, called m(x)", decorated_method)


print("## 9. closures over tracers (f, fwd and bwd close over an outer c)")


def closure_outer(c, x, mode):
    @nnx.custom_vjp(**mode)
    def f(x):
        return c * jnp.sin(x)
    simple = not (mode.get("graph_updates", True) and mode.get("graph", True))
    f.defvjp(lambda x: (f(x), jnp.cos(x)), lambda res, g: (c * res * (g if simple else g[1]),))
    return f(x).sum()


for name, mode in MODES.items():
    check(f"  grad_x, c concrete ({name})", lambda: jax.grad(closure_outer, argnums=1)(2.0, X, mode), REF_X)
    check(f"  jit(grad_x), c a jit tracer ({name})",
          lambda: jax.jit(lambda c, x: jax.grad(closure_outer, argnums=1)(c, x, mode))(2.0, X), REF_X)
    check(f"  grad_x(jit), c a jit tracer ({name})",
          lambda: jax.grad(lambda x: jax.jit(lambda c, x: closure_outer(c, x, mode))(2.0, x))(X), REF_X)
    check(f"  grad_c (c differentiated) ({name})", lambda: jax.grad(closure_outer)(2.0, X, mode))
    check(f"  grad_c(jit) ({name})", lambda: jax.grad(lambda c: jax.jit(
        lambda c: closure_outer(c, X, mode))(c))(2.0))
