"""A custom_jvp rule registered with `defjvp(rule, symbolic_zeros=True)` that uses an input's
tangent without checking for `SymbolicZero` (VJP327, jax-ml/jax#14570, #14833).

`f(x, gate) = x * sigmoid(gate)`; the rule computes the tangent `op(tx, s) + x*s*(1-s)*tgate`
where `op` is the operation under test on the tangent of the first or second input. Each case is
run with every way of choosing the differentiated inputs: `grad` w.r.t. the first, the second and
both, `jvp` through a closure that fixes one input, `jvp` with both tangents given, `jacfwd`, and
`jit(grad)`; then the registration spellings and the guarded forms."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero, zero_from_primal

from harness import check, header

header("symbolic zero tangents reaching a custom_jvp rule")

X = jnp.array([1.0, -0.5, 2.0])
G = jnp.array([0.0, 1.0, -1.0])
S = jax.nn.sigmoid(G)
DX = S                      # d/dx sum(x * sigmoid(g))
DG = X * S * (1.0 - S)      # d/dg


def ways(label: str, f, dx_ref=DX, dg_ref=DG) -> None:
    """`f(x, g)` under every way of choosing the differentiated inputs."""
    loss = lambda x, g: jnp.sum(f(x, g))  # noqa: E731
    check(f"{label}: grad x only", lambda: jax.grad(loss, 0)(X, G), dx_ref)
    check(f"{label}: grad g only", lambda: jax.grad(loss, 1)(X, G), dg_ref)
    check(f"{label}: grad both", lambda: jax.grad(loss, (0, 1))(X, G), (dx_ref, dg_ref))
    check(f"{label}: jit(grad x only)", lambda: jax.jit(jax.grad(loss, 0))(X, G), dx_ref)
    check(f"{label}: jvp x only", lambda: jax.jvp(lambda x: loss(x, G), (X,), (jnp.ones(3),))[1],
          jnp.sum(dx_ref))
    check(f"{label}: jvp both tangents", lambda: jax.jvp(loss, (X, G), (jnp.ones(3), jnp.ones(3)))[1],
          jnp.sum(dx_ref) + jnp.sum(dg_ref))
    check(f"{label}: jacfwd x only", lambda: jax.jacfwd(loss, 0)(X, G), dx_ref)
    check(f"{label}: jacfwd both", lambda: jax.jacfwd(loss, (0, 1))(X, G), (dx_ref, dg_ref))


def unguarded_tg(x, s, tg):
    return x * s * (1.0 - s) * tg


def guarded_tg(x, s, tg):
    return jnp.zeros_like(x) if isinstance(tg, SymbolicZero) else x * s * (1.0 - s) * tg


def make(tx_term, tg_term=guarded_tg, symbolic_zeros=True, spelling="call"):
    @jax.custom_jvp
    def gated(x, g):
        return x * jax.nn.sigmoid(g)

    def rule(primals, tangents):
        x, g = primals
        tx, tg = tangents
        s = jax.nn.sigmoid(g)
        return gated(x, g), tx_term(tx, s) + tg_term(x, s, tg)

    if spelling == "call":
        gated.defjvp(rule, symbolic_zeros=symbolic_zeros)
    elif spelling == "partial":
        partial(gated.defjvp, symbolic_zeros=symbolic_zeros)(rule)
    elif spelling == "decorator":
        gated.defjvp(rule)
    return gated


print("## 1. the unguarded product rule (both tangents unguarded), by registration spelling")
ways("flag, f.defjvp(rule, symbolic_zeros=True)", make(lambda tx, s: tx * s, unguarded_tg))
ways("flag, partial(f.defjvp, symbolic_zeros=True)", make(lambda tx, s: tx * s, unguarded_tg, spelling="partial"))
ways("no flag, @f.defjvp", make(lambda tx, s: tx * s, unguarded_tg, spelling="decorator"))
ways("flag False, f.defjvp(rule, symbolic_zeros=False)", make(lambda tx, s: tx * s, unguarded_tg, symbolic_zeros=False))
ways("only tx unguarded (tg guarded)", make(lambda tx, s: tx * s))


print("## 2. operations on a SymbolicZero tangent (the first input's, given by grad g only; tg guarded)")
OPS = [
    ("tx * s", lambda tx, s: tx * s),
    ("s * tx", lambda tx, s: s * tx),
    ("tx * 1.0 * s", lambda tx, s: tx * 1.0 * s),
    ("tx + 0.0", lambda tx, s: (tx + 0.0) * s),
    ("tx - 0.0", lambda tx, s: (tx - 0.0) * s),
    ("-tx", lambda tx, s: -(-tx) * s),
    ("tx / (1/s)", lambda tx, s: tx / (1.0 / s)),
    ("tx ** 1", lambda tx, s: tx ** 1 * s),
    ("jnp.multiply(tx, s)", lambda tx, s: jnp.multiply(tx, s)),
    ("jax.lax.mul(tx, s)", lambda tx, s: jax.lax.mul(tx, s)),
    ("jnp.where(s > 0, tx, 0.0) * s", lambda tx, s: jnp.where(s > 0, tx, 0.0) * s),
    ("jnp.asarray(tx) * s", lambda tx, s: jnp.asarray(tx) * s),
    ("tx.sum() * 0 + tx * s", lambda tx, s: tx.sum() * 0.0 + tx * s),
    ("tx[...] * s", lambda tx, s: tx[...] * s),
    ("tx.astype(s.dtype) * s", lambda tx, s: tx.astype(s.dtype) * s),
    ("tx.reshape(s.shape) * s", lambda tx, s: tx.reshape(s.shape) * s),
    ("jnp.zeros_like(tx) + s * 0 + ...", lambda tx, s: jnp.zeros_like(tx) + (s * jnp.ones_like(s))),
    ("jnp.zeros(tx.shape, tx.dtype) + s", lambda tx, s: jnp.zeros(tx.shape, tx.dtype) + s),
    ("jax.tree.map(lambda t: t * s, tx)", lambda tx, s: jax.tree.map(lambda t: t * s, tx)),
]
for label, op in OPS:
    f = make(op)
    loss = lambda x, g: jnp.sum(f(x, g))  # noqa: E731
    # the reference is only meaningful for the ops that equal tx * s; the rest show OK/RAISE only
    check(f"{label}: grad g only", lambda: jax.grad(loss, 1)(X, G))


print("## 3. attributes of a SymbolicZero tangent (read in the rule, result not used)")


def probe(reader):
    def tx_term(tx, s):
        reader(tx)
        return s * 0.0 if isinstance(tx, SymbolicZero) else tx * s
    return make(tx_term)


for label, reader in [("tx.shape", lambda t: t.shape), ("tx.dtype", lambda t: t.dtype),
                      ("tx.ndim", lambda t: t.ndim), ("tx.size", lambda t: t.size),
                      ("tx.aval", lambda t: t.aval), ("len(tx)", lambda t: len(t)),
                      ("jnp.shape(tx)", lambda t: jnp.shape(t)), ("tx.T", lambda t: t.T),
                      ("jnp.zeros_like(tx)", lambda t: jnp.zeros_like(t)), ("tx.sum()", lambda t: t.sum()),
                      ("tx is None", lambda t: t is None), ("str(tx)", lambda t: str(t)),
                      ("jnp.ones_like(tx)", lambda t: jnp.ones_like(t)),
                      ("jnp.full_like(tx, 0.0)", lambda t: jnp.full_like(t, 0.0)),
                      ("jnp.empty_like(tx)", lambda t: jnp.empty_like(t)),
                      ("jnp.ndim(tx)", lambda t: jnp.ndim(t)), ("jnp.size(tx)", lambda t: jnp.size(t)),
                      ("jnp.result_type(tx)", lambda t: jnp.result_type(t)),
                      ("jnp.isscalar(tx)", lambda t: jnp.isscalar(t)),
                      ("jax.typeof(tx)", lambda t: jax.typeof(t)),
                      ("tx.at", lambda t: t.at), ("bool(tx)", lambda t: bool(t)),
                      ("tx == 0", lambda t: t == 0)]:
    f = probe(reader)
    check(f"{label}: grad g only", lambda: jax.grad(lambda x, g: jnp.sum(f(x, g)), 1)(X, G), DG)


print("## 4. tangents passed through or returned as they are")


@jax.custom_jvp
def first(x, g):
    return x + 0.0 * g


@partial(first.defjvp, symbolic_zeros=True)
def _first_jvp(primals, tangents):
    tx, _ = tangents
    return first(*primals), tx          # the first tangent returned as it is


ways("return tx as it is", first, jnp.ones(3), jnp.zeros(3))


@jax.custom_jvp
def pair(x, g):
    return x, g


@partial(pair.defjvp, symbolic_zeros=True)
def _pair_jvp(primals, tangents):
    return pair(*primals), tangents     # the tangents tuple returned as it is


ways("return (tx, tg) tuple as it is", lambda x, g: sum(pair(x, g)), jnp.ones(3), jnp.ones(3))


@jax.custom_jvp
def swap(x, g):
    return g, x


@partial(swap.defjvp, symbolic_zeros=True)
def _swap_jvp(primals, tangents):
    tx, tg = tangents
    return swap(*primals), (tg, tx)     # rearranged, unused otherwise


ways("return (tg, tx) rearranged", lambda x, g: sum(swap(x, g)), jnp.ones(3), jnp.ones(3))


print("## 5. guarded forms (tg guarded with isinstance throughout)")


def guarded_isinstance(tx, s):
    return s * 0.0 if isinstance(tx, SymbolicZero) else tx * s


def guarded_type_is(tx, s):
    return jnp.zeros_like(s) if type(tx) is SymbolicZero else tx * s


def guarded_class(tx, s):
    return jnp.zeros_like(s) if tx.__class__.__name__ == "SymbolicZero" else tx * s


def materialised(tx, s):
    if isinstance(tx, SymbolicZero):
        tx = jnp.zeros(tx.shape, tx.dtype)
    return tx * s


def guarded_module(tx, s):
    return jnp.zeros_like(s) if isinstance(tx, jax.custom_derivatives.SymbolicZero) else tx * s


for label, term in [("isinstance(tx, SymbolicZero)", guarded_isinstance), ("type(tx) is SymbolicZero", guarded_type_is),
                    ("tx.__class__.__name__ check", guarded_class), ("materialised then used", materialised),
                    ("isinstance(tx, jax.custom_derivatives.SymbolicZero)", guarded_module)]:
    ways(label, make(term))


@jax.custom_jvp
def gated_zfp(x, g):
    return x * jax.nn.sigmoid(g)


@partial(gated_zfp.defjvp, symbolic_zeros=True)
def _gated_zfp_jvp(primals, tangents):
    x, g = primals
    tx, tg = tangents
    # zero_from_primal(...) gives real zeros for the inputs whose tangent is symbolic
    tx = zero_from_primal(x) if isinstance(tx, SymbolicZero) else tx
    tg = zero_from_primal(g) if isinstance(tg, SymbolicZero) else tg
    s = jax.nn.sigmoid(g)
    return gated_zfp(x, g), tx * s + x * s * (1.0 - s) * tg


ways("zero_from_primal for SymbolicZero tangents", gated_zfp)


print("## 6. one differentiable argument: an array, or a pair of arrays")


@jax.custom_jvp
def sq(x):
    return x * x


@partial(sq.defjvp, symbolic_zeros=True)
def _sq_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    return sq(x), 2.0 * x * tx          # unguarded, but the only input


check("one array argument, unguarded: grad", lambda: jax.grad(lambda x: jnp.sum(sq(x)))(X), 2.0 * X)
check("one array argument, unguarded: jvp", lambda: jax.jvp(sq, (X,), (jnp.ones(3),))[1], 2.0 * X)
check("one array argument, unguarded: jacfwd", lambda: jnp.diag(jax.jacfwd(sq)(X)), 2.0 * X)
check("one array argument, unguarded: f(x, const) via closure grad",
      lambda: jax.grad(lambda x: jnp.sum(sq(x) * G))(X), 2.0 * X * G)


@jax.custom_jvp
def gated_pair(p):
    x, g = p
    return x * jax.nn.sigmoid(g)


@partial(gated_pair.defjvp, symbolic_zeros=True)
def _gated_pair_jvp(primals, tangents):
    (p,), (tp,) = primals, tangents
    (x, g), (tx, tg) = p, tp
    s = jax.nn.sigmoid(g)
    return gated_pair(p), tx * s + x * s * (1.0 - s) * tg


check("one pair argument, unguarded: grad of the pair",
      lambda: jax.grad(lambda p: jnp.sum(gated_pair(p)))((X, G)), (DX, DG))
check("one pair argument, unguarded: grad of x only (g closed over)",
      lambda: jax.grad(lambda x: jnp.sum(gated_pair((x, G))))(X), DX)


print("## 7. nondiff_argnums leaves one differentiable argument")


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def scaled(x, k):
    return x * k


@partial(scaled.defjvp, symbolic_zeros=True)
def _scaled_jvp(k, primals, tangents):
    (x,), (tx,) = primals, tangents
    return scaled(x, k), tx * k


check("nondiff k, one differentiable x, unguarded: grad", lambda: jax.grad(lambda x: jnp.sum(scaled(x, 3.0)))(X),
      3.0 * jnp.ones(3))
