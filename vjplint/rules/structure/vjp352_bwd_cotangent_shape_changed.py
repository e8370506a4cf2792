from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.shapes import ShapeChange
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._cotangent_leaves import bound_value, elements, leaves, returned_values

SHAPE_ERROR = ("`ValueError: Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
               "primal function, but at output[i] ... so the shapes do not match`")


class BwdCotangentShapeChanged(Rule):
    """## What it does
    Flags a custom_vjp bwd rule whose cotangent for a differentiable argument ends in an
    operation that changes its shape away from the argument's: a flattening (`ct.reshape(-1)`,
    `ct.ravel()`, `ct.flatten()`, `jnp.ravel(ct)`), a transpose (`ct.T`, `ct.transpose()`,
    `jnp.swapaxes(ct, ...)`), a reduction that keeps a size-1 axis (`jnp.sum(ct, axis=0,
    keepdims=True)`, `ct.mean(0, keepdims=True)`), or one that adds axes (`jnp.atleast_1d(ct)`,
    `jnp.atleast_2d`, `jnp.expand_dims(ct, 0)`, `ct[None]`). The cotangent is read through a returned name,
    a helper bwd delegates to, dtype casts, negation and products with a number, and the leaves
    of a tuple, dict, NamedTuple or `tree_map`; arithmetic with another array stops it (a
    reshaped value times a full-shape one broadcasts back). What the code shows of the argument
    decides: a flattening or transpose is an error where the argument provably has two axes or
    more (an `einsum` term, a matrix function, `x.shape[1]`), or every call of the function in
    the module passes it with a rank other than 1 that the code shows (`f(jnp.outer(a, b))`,
    `f(jnp.sum(v))`, `jax.grad(f)(0.3)`), and a warning ("may") where it
    has axes (indexed, reduced over a named axis): both are no-ops on a 1-D argument, which stays
    silent. An `atleast_Nd` is an error where the argument has fewer than N axes, an
    `expand_dims` or `[None]` where it is a scalar, as every call passes it or as a `lax.cond`
    predicate in the primal or fwd shows (`lax.cond(x > 0, ...)`: JAX requires a scalar
    predicate); elsewhere both are left alone (a no-op on an argument with the axes, or axes put
    back after a reduction). A `keepdims` reduction is a warning where the primal never broadcasts the argument
    against another array (then it has the output's axes, and a size-1 axis is wrong unless the
    argument already has it). Silent: an argument the primal reshapes, flattens or transposes
    itself (the bwd undoes it), a transpose of a value whose layout its author chose (a product,
    `(a @ b).T`, or what a solver, a helper or a reshape returns), and a parameter the primal broadcasts (a bias of shape `(1, n)`).

    ## Why is this bad?
    JAX checks each cotangent's shape against its argument's. Measured on JAX 0.10.2
    (fixtures/rules/VJP352): `grad`, `jit(grad)` and `vmap(grad)` raise

        ValueError: Custom VJP bwd rule must produce an output with the same type as the args
        tuple of the primal function, but at output[0] the bwd rule produced an output of type
        float32[12] corresponding to an input of type float32[3,4], so the shapes do not match

    and a transpose of a square matrix passes the check and gives the transposed gradient.

    ## Example
    ```python
    def mm_bwd(res, g):
        a, b = res
        return (jnp.einsum("ij,kj->ik", g, b).reshape(-1), a.T @ g)
    ```

    ## Use instead
    ```python
    def mm_bwd(res, g):
        a, b = res
        return (jnp.einsum("ij,kj->ik", g, b), a.T @ g)
    ```

    ## Fix safety
    No fix: whether the shape change is a slip or the argument really has that shape is the
    author's to say.
    """

    CODE = "VJP352"
    NAME = "bwd-cotangent-shape-changed"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def mm(a, b):
    return jnp.einsum("ij,jk->ik", a, b)

def mm_fwd(a, b):
    return mm(a, b), (a, b)

def mm_bwd(res, g):
    a, b = res
    return (jnp.einsum("ik,jk->ij", g, b).reshape(-1), jnp.einsum("ij,ik->jk", a, g))

mm.defvjp(mm_fwd, mm_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def affine(x, b):
    return x * 2.0 + b

def affine_fwd(x, b):
    return affine(x, b), None

def affine_bwd(res, g):
    return (2.0 * g, jnp.sum(g, axis=0, keepdims=True))

affine.defvjp(affine_fwd, affine_bwd)
''']

    def check(self) -> None:
        facts = self.model.facts
        for d, fwd, bwd, _ in facts.registered_bwds(lambda d: bool(facts.differentiable_names(d))):
            assert bwd.node is not None
            names = facts.differentiable_names(d) or ()
            for value, _ in returned_values(self.model, bwd.node):
                found = elements(self.model, value)
                if found is None or len(found) != len(names):
                    continue
                for element, name in zip(found, names):
                    for leaf in leaves(self.model, element):
                        change = facts.shape_change(leaf)
                        if change is not None and change.kind != "keepdims" and \
                                leaf is not bound_value(self.model, element):
                            continue  # a leaf of a container: what the code shows of the argument is not its
                        if change is None:
                            continue
                        verdict = self._verdict(d, fwd, name, change)
                        if verdict is not None:
                            severity, why = verdict
                            shown = element if leaf is bound_value(self.model, element) else leaf
                            self.report(leaf, self._message(d, bwd, shown, name, change, why, severity),
                                        severity=severity)
                            break

    def _places(self, d: CustomDerivative, fwd: Optional[RuleFunction], name: str):
        """(function, the parameter's name there): the primal, and fwd at the same position."""
        assert d.primal is not None
        places = [(d.primal, name)]
        sig = self.model.signature(d.primal).positional
        if fwd is not None and fwd.node is not None and name in sig:
            fwd_params = self.model.signature(fwd.node).positional[fwd.bound_positional:]
            if len(fwd_params) == len(sig):
                places.append((fwd.node, fwd_params[sig.index(name)]))
        return places

    def _verdict(self, d: CustomDerivative, fwd: Optional[RuleFunction], name: str,
                 change: ShapeChange) -> Optional[Tuple[Severity, str]]:
        facts = self.model.facts
        places = self._places(d, fwd, name)
        if change.kind == "keepdims":
            if any(facts.broadcast_partner(fn, p) is not None for fn, p in places):
                return None  # the argument may be broadcast in the primal: a size-1 axis may be its own
            return Severity.WARNING, (f"`{d.name}` never broadcasts `{name}` against another array, so its "
                                      f"cotangent has `{name}`'s axes, and axis {change.axis} has length 1 only "
                                      f"if `{name}`'s does")
        if any(facts.reshaped_in(fn, p) is not None for fn, p in places):
            return None  # the primal reshapes the argument: the bwd may undo it
        if change.kind in ("atleast", "expand"):
            return self._axes_added(d, name, places, change)
        if change.kind == "transpose" and facts.layout_operand(change.operand):
            return None
        axes = facts.param_axes(d, name)
        noop = "1-D" if change.kind == "flatten" else "1-D (or a square matrix, where it silently transposes the gradient)"
        called = facts.called_rank(d, name)
        if axes is None and called is not None and (called[0] != 1 if change.kind == "flatten" else called[0] >= 2):
            return Severity.ERROR, (f"every call of `{d.name}` here passes `{name}` with rank {called[0]} "
                                    f"(`{self.quote(called[1], 40)}`, line {called[1].lineno}), and this differs unless it is {noop}")
        if axes is None:
            return None  # nothing shows the argument is not 1-D, where both are no-ops
        if axes.least >= 2:
            return Severity.ERROR, f"{axes.why}, so it has two axes or more, and this differs unless it is {noop}"
        return Severity.WARNING, f"{axes.why}, so it has axes, and this is a no-op only when `{name}` is {noop}"

    def _axes_added(self, d: CustomDerivative, name: str, places, change: ShapeChange) -> Optional[Tuple[Severity, str]]:
        """`atleast_Nd` on the cotangent of an argument the code shows to have fewer than N axes,
        `expand_dims`/`[None]` on one it shows to be a scalar: the result has more axes."""
        called = self.model.facts.called_rank(d, name)
        if called is not None:
            rank, why = called[0], (f"every call of `{d.name}` here passes `{name}` with rank {called[0]} "
                                    f"(`{self.quote(called[1], 40)}`, line {called[1].lineno})")
        else:
            shown = next(((fn, e) for fn, p in places
                          for e in [self.model.facts.scalar_evidence(fn, p)] if e is not None), None)
            if shown is None:
                return None
            rank, why = 0, (f"`{self.quote(shown[1], 40)}` (line {shown[1].lineno}) is a `lax.cond` predicate, which "
                            f"JAX requires to be a scalar, so `{name}` is one")
        if change.kind == "atleast" and rank < (change.axis or 1) or change.kind == "expand" and rank == 0:
            return Severity.ERROR, f"{why}, and the result has more axes than `{name}`"
        return None

    def _message(self, d: CustomDerivative, bwd: RuleFunction, leaf: ast.expr, name: str, change: ShapeChange,
                 why: str, severity: Severity) -> str:
        verb = "differentiating" if severity is Severity.ERROR else "unless it is, differentiating"
        undo = {"flatten": f"drop the flattening (or `.reshape({name}.shape)` with `{name}`'s shape saved)",
                "transpose": "drop the transpose (or transpose what it is computed from)",
                "keepdims": "drop the reduction, or keep only the axes broadcasting added to the argument",
                "atleast": "drop the call: a cotangent has its argument's shape, a scalar's is a scalar",
                "expand": "drop the added axis: a cotangent has its argument's shape"}[change.kind]
        op = "it" if change.op is leaf else f"`{self.quote(change.op, 40)}`"
        return (f"{rule_label(bwd, 'bwd')} returns `{self.quote(leaf, 40)}` as the cotangent of `{name}`: "
                f"{op} {change.effect()}, but the cotangent must have `{name}`'s shape "
                f"({why}); {verb} `{d.name}` {'raises' if severity is Severity.ERROR else 'may raise'} "
                f"{SHAPE_ERROR}; {undo}")
