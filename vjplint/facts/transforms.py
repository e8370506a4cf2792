"""What a transformation applied to a function does with that function's arguments.

A table of transformation KINDS, not a list a rule keeps: each entry says how the transformation
receives the wrapped function's arguments, and which of them it leaves as Python values.

- `traces`: every argument becomes an abstract array (`jax.jit`, `jax.checkpoint`/`jax.remat`,
  flax's `nnx.jit`/`nnx.remat`): a function, a string or a dtype raises `... is not a valid JAX
  type` / `Error interpreting argument ... as an abstract array`, an int used as a shape or an
  axis or a flag tested by `if` becomes a tracer (a concretization error). `static_argnums` /
  `static_argnames` (jit, checkpoint) exempt positions.
- `maps`: every argument is mapped along an axis (`jax.vmap`, `jax.pmap`, `nnx.vmap`): a function
  raises, a Python scalar raises (`rank ... at least 1`); `in_axes` with `None` at a position
  leaves that argument unmapped, a Python value included (measured: /tmp/kinds11/probes/B16).
- `vectorizes`: `jnp.vectorize` turns every argument into an array and, without `signature`,
  runs the function on 0-d elements of their broadcast (a function raises `... with dtype object
  is not a valid JAX array type`; a use of an argument's axes raises on the 0-d element);
  `excluded` exempts positions; with `signature` the core dimensions are kept.
- `filters`: equinox's `filter_jit`/`filter_vmap`/`filter_pmap`/`filter_checkpoint` trace only
  the array leaves: a function, a flag, a string or an int stays a Python value (correct).

Measured on JAX 0.10.2, equinox 0.13.8, flax 0.12.8: docs/facts/jax-errors.md, "Transformations
around the creator: routes (kinds11)".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.jaxapi import PARTIAL
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.facts.registry import query

TRACES, MAPS, VECTORIZES, FILTERS = "traces", "maps", "vectorizes", "filters"
KINDS = {
    **dict.fromkeys(("jax.jit", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint",
                     "jax.ad_checkpoint.remat", "jax.experimental.pjit.pjit", "flax.nnx.jit", "flax.nnx.remat",
                     "flax.linen.jit"), TRACES),
    **dict.fromkeys(("jax.vmap", "jax.pmap", "flax.nnx.vmap", "flax.nnx.pmap"), MAPS),
    "jax.numpy.vectorize": VECTORIZES,
    **dict.fromkeys(("equinox.filter_jit", "equinox.filter_vmap", "equinox.filter_pmap", "equinox.filter_checkpoint"),
                    FILTERS),
}
# Keywords naming the positions (or parameter names) a transformation leaves as Python values.
STATIC_POSITIONS = ("static_argnums", "excluded")
STATIC_NAMES = ("static_argnames",)


@dataclass(frozen=True)
class Transform:
    name: str                       # the transformation's qualified name, "jax.jit"
    kind: str                       # TRACES, MAPS, VECTORIZES or FILTERS
    node: ast.expr                  # the decorator or call that applies it (for the message)
    static: FrozenSet[int]          # positions left as Python values
    static_names: FrozenSet[str]    # parameter names left as Python values
    signature: bool = False         # `jnp.vectorize(signature=...)`: core dimensions kept

    def passes(self, position: int, name: str) -> bool:
        """Whether the argument at `position` (parameter `name`) reaches the function as a Python value."""
        return self.kind == FILTERS or position in self.static or name in self.static_names


@query
def transform_of(model: FileModel, expr: ast.expr) -> Optional[Transform]:
    """The transformation a decorator applies (`@jax.jit`, `@partial(jax.jit, static_argnums=0)`,
    `@jax.jit(static_argnames=...)`, `@fast` with `fast = jax.jit`, `@partial(jax.vmap, in_axes=(None, 0))`),
    or None when `expr` is none of the table's, or its static arguments are not written as constants."""
    keywords: Tuple[ast.keyword, ...] = ()
    target = expr
    if isinstance(expr, ast.Call):
        q = model.index.qualname(expr.func)
        if q in PARTIAL and len(expr.args) == 1:
            target, keywords = expr.args[0], tuple(expr.keywords)
        elif q in KINDS and not expr.args:
            target, keywords = expr.func, tuple(expr.keywords)  # `@jax.jit(static_argnums=0)`, `@eqx.filter_vmap(...)`
        else:
            return None
    q = model.index.qualname(target)
    return _made(q, expr, keywords) if q in KINDS else None


@query
def transformed_function(model: FileModel, call: ast.expr) -> Optional[Tuple[Transform, FunctionNode]]:
    """`jax.jit(g, static_argnums=0)` / `jax.vmap(lambda fn, x: ...)`: the transformation and the def or lambda
    it is applied to (a name bound once to one of the module's functions, or a lambda)."""
    if not (isinstance(call, ast.Call) and len(call.args) == 1):
        return None
    q = model.index.qualname(call.func)
    fn = named_function(model.index, call.args[0])
    if q not in KINDS or fn is None:
        return None
    made = _made(q, call, tuple(call.keywords))
    return None if made is None else (made, fn)


def _made(q: str, node: ast.expr, keywords: Tuple[ast.keyword, ...]) -> Optional[Transform]:
    static: set = set()
    names: set = set()
    signature = False
    for k in keywords:
        if k.arg in STATIC_POSITIONS or k.arg in STATIC_NAMES:
            values = _constants(k.value)
            if values is None:
                return None  # a static spec the source does not spell: nothing to decide
            (static if k.arg in STATIC_POSITIONS else names).update(values)
        elif k.arg == "in_axes" and KINDS[q] == MAPS:
            axes = k.value
            if isinstance(axes, ast.Constant) and axes.value is None:
                return None  # nothing mapped
            if isinstance(axes, (ast.Tuple, ast.List)):
                static.update(i for i, e in enumerate(axes.elts) if isinstance(e, ast.Constant) and e.value is None)
            elif not isinstance(axes, ast.Constant):
                return None
        elif k.arg == "signature":
            signature = True
    return Transform(q, KINDS[q], node, frozenset(i for i in static if isinstance(i, int)),
                     frozenset(n for n in names if isinstance(n, str)), signature)


def _constants(e: ast.expr) -> Optional[set]:
    if isinstance(e, ast.Constant):
        return {e.value}
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)) and all(isinstance(x, ast.Constant) for x in e.elts):
        return {x.value for x in e.elts}  # type: ignore[attr-defined]
    return None
