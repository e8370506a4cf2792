"""flax.nnx.custom_vjp: what bwd must return per argument kind (Module -> State, array -> array).

google/flax#4301: f(m, x) with m an nnx.Module and x a plain array; bwd returned the array's
cotangent wrapped as `nnx.State((x_grad,))`. Here every spelling of "a State for an array argument"
is tried in each mode, next to the right answers (a State for the Module, an array for the array).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from harness import check, header

header("flax.nnx.custom_vjp: bwd return kind per argument")

W0 = np.array([[0.5, -1.0], [0.25, 2.0], [1.5, 0.0]], np.float32)
B0 = np.array([0.1, -0.2], np.float32)


class Affine(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.asarray(W0))
        self.b = nnx.Param(jnp.asarray(B0))


def ref(x):
    y = np.asarray(x, np.float64) @ W0 + B0
    return (W0 @ (2 * y)).astype(np.float32), (np.asarray(x)[:, None] * (2 * y)[None, :], 2 * y)


WRAP = {
    "array (right)": lambda a: a,
    "nnx.State((x_g,))  [flax#4301]": lambda a: nnx.State((a,)),
    "nnx.State({'x': x_g})": lambda a: nnx.State({"x": a}),
    "nnx.State(x_g)": lambda a: nnx.State(a),
    "nnx.State({})": lambda a: nnx.State({}),
}


def affine_default(wrap):
    @nnx.custom_vjp
    def f(m, x):
        return x @ m.w[...] + m.b[...]

    def f_fwd(m, x):
        return f(m, x), (m, x)

    def f_bwd(res, g):
        m, x = res
        _, out_g = g
        m_g = nnx.State(dict(w=x[:, None] * out_g[None, :], b=out_g))
        return (m_g, wrap(m.w[...] @ out_g))

    f.defvjp(f_fwd, f_bwd)
    return f


def affine_simple(wrap, mode):
    @nnx.custom_vjp(**mode)
    def f(m, x):
        return x @ m.w[...] + m.b[...]

    def f_fwd(m, x):
        return f(m, x), (m, x)

    def f_bwd(res, g):
        m, x = res
        m_g = nnx.clone(m)
        m_g.w[...] = x[:, None] * g[None, :]
        m_g.b[...] = g
        return (m_g, wrap(m.w[...] @ g))

    f.defvjp(f_fwd, f_bwd)
    return f


def runs(f, x):
    gx, (gw, gb) = ref(x)
    xs = jnp.asarray(x)
    check("    jax.grad wrt x", lambda: jax.grad(lambda x: jnp.sum(f(Affine(), x) ** 2))(xs), gx)
    check("    jax.jit(jax.grad) wrt x", lambda: jax.jit(jax.grad(lambda x: jnp.sum(f(Affine(), x) ** 2)))(xs), gx)

    def params():
        grads = nnx.grad(lambda m: jnp.sum(f(m, xs) ** 2), graph_updates=GU[0])(Affine())
        leaf = (lambda n: grads[n][...]) if isinstance(grads, nnx.State) else (lambda n: getattr(grads, n)[...])
        return leaf("w"), leaf("b")

    check("    nnx.grad wrt the Module (x constant)", params, (gw, gb))
    check("    eager call (no differentiation)", lambda: f(Affine(), xs), xs @ W0 + B0)


GU = [True]
X3 = np.array([1.0, -0.5, 2.0], np.float32)
print("## 1. default mode (graph=True, graph_updates=True): f(m: Module, x: array), bwd -> (State, <x entry>)")
for name, wrap in WRAP.items():
    print(f"  # x entry: {name}")
    runs(affine_default(wrap), X3)

print("## 2. simple modes: bwd -> (Module clone, <x entry>)")
for mode in ({"graph_updates": False}, {"graph": False}):
    GU[0] = False
    for name in ("array (right)", "nnx.State((x_g,))  [flax#4301]", "nnx.State({'x': x_g})"):
        print(f"  # {mode}, x entry: {name}")
        runs(affine_simple(WRAP[name], mode), X3)
GU[0] = True


print("## 3. default mode, arrays only: f(x, y) = sin(x) * y, bwd -> (<x entry>, dy)")
XX = jnp.array([0.5, 1.0, 2.0])


def arrays_only(wrap):
    @nnx.custom_vjp
    def f(x, y):
        return jnp.sin(x) * y

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        _, out_g = g
        return (wrap(cos_x * y * out_g), jnp.sum(sin_x * out_g))

    f.defvjp(lambda x, y: (f(x, y), (jnp.cos(x), jnp.sin(x), y)), f_bwd)
    return f


for name in ("array (right)", "nnx.State((x_g,))  [flax#4301]", "nnx.State({'x': x_g})"):
    print(f"  # x entry: {name}")
    f = arrays_only(WRAP[name])
    check("    jax.grad wrt x", lambda: jax.grad(lambda x: f(x, 2.0).sum())(XX), jnp.cos(XX) * 2.0)
    check("    jax.grad wrt y only", lambda: jax.grad(lambda y: f(XX, y).sum())(2.0), jnp.sum(jnp.sin(XX)))


print("## 4. default mode, a Module argument: State (right) vs array vs State of the wrong keys")


def module_only(kind):
    @nnx.custom_vjp
    def f(m, x):
        return x @ m.w[...] + m.b[...]

    def f_bwd(res, g):
        m, x = res
        _, out_g = g
        gw, gb = x[:, None] * out_g[None, :], out_g
        m_g = {"state": nnx.State(dict(w=gw, b=gb)), "state-tuple": nnx.State(((("w",), gw), (("b",), gb))),
               "dict": dict(w=gw, b=gb)}[kind]
        return (m_g, m.w[...] @ out_g)

    f.defvjp(lambda m, x: (f(m, x), (m, x)), f_bwd)
    return f


for kind in ("state", "dict"):
    print(f"  # Module entry: {kind}")
    runs(module_only(kind), X3)


print("## 5. default mode, nnx.State((x_g,)) by the shape of x (dict() reads the tuple as key-value pairs)")
for shape in ((), (2,), (3,), (2, 2)):
    f = arrays_only(WRAP["nnx.State((x_g,))  [flax#4301]"])
    xs = jnp.ones(shape)
    check(f"  x of shape {shape}: jax.grad wrt x", lambda: jax.grad(lambda x: f(x, 2.0).sum())(xs))
