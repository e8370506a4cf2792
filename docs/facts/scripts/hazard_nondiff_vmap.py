"""A custom_jvp / custom_vjp with nondiff_argnums handed to `jax.vmap` whose in_axes batch the
nondiff position (or default in_axes=0, which batches every argument): what fails, and when?"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("vmap batching a nondiff position of custom_jvp / custom_vjp")
N = jnp.array([1, 2, 3], jnp.int32)
X = jnp.array([0.5, 1.0, 2.0])
NF = jnp.array([1.0, 2.0, 3.0])


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def pw(n, x):
    return x ** n


@pw.defjvp
def _pw_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return pw(n, x), n * x ** (n - 1) * t


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def sc(n, x):
    return n * x


sc.defvjp(lambda n, x: (n * x, None), lambda n, _, g: (n * g,))

print("## 1. custom_jvp, jax.vmap(f, in_axes=(0, None)): n batched")
vb = jax.vmap(pw, in_axes=(0, None))
check("primal, eager", lambda: vb(N, X))
check("primal, jax.jit(vmap)", lambda: jax.jit(vb)(N, X))
check("grad of sum(vmap(f)(n, x)) w.r.t. x", lambda: jax.grad(lambda x: vb(N, x).sum())(X))
check("grad of jax.jit(vmap(f)) w.r.t. x", lambda: jax.grad(lambda x: jax.jit(vb)(N, x).sum())(X))
check("jax.jvp of vmap(f)", lambda: jax.jvp(lambda x: vb(N, x), (X,), (jnp.ones_like(X),)))
check("jax.jacfwd of vmap(f)", lambda: jax.jacfwd(lambda x: vb(N, x).sum())(X))
check("vmap(grad(f)) (grad inside, n batched outside)", lambda: jax.vmap(
    jax.grad(lambda n, x: pw(n, x).sum(), argnums=1), in_axes=(0, None))(N, X))
check("default in_axes=0: jax.vmap(f)(n, xs), primal", lambda: jax.vmap(pw)(N, X))
check("default in_axes=0, grad", lambda: jax.grad(lambda x: jax.vmap(pw)(N, x).sum())(X))
check("in_axes=0 (an int), grad", lambda: jax.grad(lambda x: jax.vmap(pw, in_axes=0)(N, x).sum())(X))
print("## 2. custom_jvp look-alikes")
check("in_axes=(None, 0): n a Python int, grad", lambda: jax.grad(
    lambda x: jax.vmap(pw, in_axes=(None, 0))(2, x).sum())(X))
check("vmap of a lambda closing over a Python n, grad", lambda: jax.grad(
    lambda x: jax.vmap(lambda x: pw(2, x))(x).sum())(X))
check("jax.jit(f) (n traced by jit, not batched), grad", lambda: jax.grad(
    lambda x: jax.jit(pw)(2, x).sum())(X))
print("## 3. custom_vjp, the same call patterns")
vs = jax.vmap(sc, in_axes=(0, None))
check("primal, eager", lambda: vs(NF, X))
check("primal, jax.jit(vmap)", lambda: jax.jit(vs)(NF, X))
check("grad", lambda: jax.grad(lambda x: vs(NF, x).sum())(X))
check("default in_axes=0, primal", lambda: jax.vmap(sc)(NF, X))
check("in_axes=(None, 0), grad (look-alike)", lambda: jax.grad(
    lambda x: jax.vmap(sc, in_axes=(None, 0))(2.0, x).sum())(X))
@jax.jit
def _staged(x):
    return vb(N, x)


print("## 4. custom_jvp: where the staging is (jit) decides")
check("jax.jit(grad(vmap(f))) (jit outside grad)", lambda: jax.jit(jax.grad(lambda x: vb(N, x).sum()))(X))
check("grad(g), g jitted, calling vmap(f) in its body", lambda: jax.grad(lambda x: _staged(x).sum())(X))
check("grad(vmap(jit(f))) (jit inside vmap)", lambda: jax.grad(lambda x: jax.vmap(
    jax.jit(pw), in_axes=(0, None))(N, x).sum())(X))
check("jvp of jax.jit(vmap(f))", lambda: jax.jvp(lambda x: jax.jit(vb)(N, x), (X,), (jnp.ones_like(X),)))
check("grad of jax.checkpoint(vmap(f))", lambda: jax.grad(lambda x: jax.checkpoint(vb)(N, x).sum())(X))
check("grad of jax.jit(vmap(f, in_axes=(None, 0))) with n=2 a Python int (look-alike)",
      lambda: jax.grad(lambda x: jax.jit(jax.vmap(pw, in_axes=(None, 0)), static_argnums=0)(2, x).sum())(X))
