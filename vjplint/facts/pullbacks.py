"""Where a custom derivative's rules hold a `jax.vjp` pullback: made in the same function, or
saved by a custom_vjp's fwd in its residuals and read back in bwd. Read by VJP326 (how many
arguments a pullback gets) and VJP322 (what shape its cotangent has)."""

from __future__ import annotations

import ast
from typing import Dict, NamedTuple, Optional

from vjplint.model.file_model import FileModel, RuleFunction
from vjplint.model.semantic import FunctionNode
from vjplint.facts.registry import query

VJP = "jax.vjp"


class Pullback(NamedTuple):
    origin: str  # how the name came to hold it, for messages: "`jax.vjp(f, x)` (line 4)"
    # The pullback is of fwd's primal output (`return jax.vjp(f, x)`, or `out, pull = jax.vjp(...)`
    # with fwd returning `out` first): it wants a cotangent shaped like bwd's `g`.
    of_output: bool = False


def _vjp_call(model: FileModel, value: ast.AST) -> bool:
    return isinstance(value, ast.Call) and model.index.qualname(value.func) == VJP and \
        not any(k.arg == "has_aux" for k in value.keywords)


@query
def made_here(model: FileModel, fn: FunctionNode) -> Dict[str, Pullback]:
    """Names bound once in `fn` to the pullback of a `jax.vjp` call there."""
    found: Dict[str, Pullback] = {}
    for name, (node, call, _) in _vjp_bindings(model, fn).items():
        found[name] = Pullback(f"`{model.quote(call, 40)}` (line {node.lineno})")
    return found


def _vjp_bindings(model: FileModel, fn: FunctionNode) -> Dict[str, tuple]:
    """pullback name -> (assignment, the jax.vjp call, the name its output is bound to or None)."""
    found: Dict[str, tuple] = {}
    for node in model.facts.own_nodes(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        name: Optional[str] = None
        out: Optional[str] = None
        if isinstance(value, ast.Call) and model.index.qualname(value.func) == VJP and \
                isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) in (2, 3) and \
                isinstance(target.elts[1], ast.Name):
            name, call = target.elts[1].id, value
            first = target.elts[0]
            if len(target.elts) == 2 and isinstance(first, ast.Name) and _vjp_call(model, value) \
                    and bound_once(model, fn, first.id):
                out = first.id
        elif isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call) and \
                model.index.qualname(value.value.func) == VJP and isinstance(value.slice, ast.Constant) \
                and value.slice.value == 1 and isinstance(target, ast.Name):
            name, call = target.id, value.value
        if name is not None and bound_once(model, fn, name):
            found[name] = (node, call, out)
    return found


@query
def bound_once(model: FileModel, fn: FunctionNode, name: str) -> bool:
    scope = model.index.scopes.get(fn)
    return scope is not None and len(scope.bindings.get(name, [])) == 1


@query
def saved(model: FileModel, fwd: RuleFunction, bwd: FunctionNode, res: str, fwd_label: str) -> Dict[str, Pullback]:
    """bwd's names holding a pullback fwd saved in its residuals: `res` itself, or the names
    bwd unpacks from it (`pull, x = res`). Every return of fwd must save it at the same place."""
    assert fwd.node is not None
    bindings = _vjp_bindings(model, fwd.node)
    places: Optional[Dict[Optional[int], Pullback]] = None  # residual position (None: all of it)
    for _, value in model.facts.returns_of(fwd.node):
        here: Dict[Optional[int], Pullback] = {}
        if value is not None and _vjp_call(model, value):  # `return jax.vjp(f, x)`: (output, pullback)
            here[None] = Pullback(f"`{model.quote(value, 40)}` (line {value.lineno}), which {fwd_label} returns "
                                  f"as its output and residuals", of_output=True)
        elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2:
            first, kept = value.elts

            def pullback(name: str) -> Pullback:
                node, call, out = bindings[name]
                return Pullback(f"`{model.quote(call, 40)}` (line {node.lineno}), which {fwd_label} saves in its "
                                f"residuals", of_output=out is not None and isinstance(first, ast.Name)
                                and first.id == out)

            if isinstance(kept, ast.Name) and kept.id in bindings:
                here[None] = pullback(kept.id)
            elif isinstance(kept, (ast.Tuple, ast.List)):
                here = {i: pullback(e.id) for i, e in enumerate(kept.elts)
                        if isinstance(e, ast.Name) and e.id in bindings}
        else:
            return {}
        places = here if places is None else {k: v for k, v in here.items() if places.get(k) == v}
    if not places or not bound_once(model, bwd, res):
        return {}
    if None in places:
        return {res: places[None]}
    found: Dict[str, Pullback] = {}
    for node in model.facts.own_nodes(bwd):  # `pull, x = res`
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name) \
                and node.value.id == res and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            for i, e in enumerate(node.targets[0].elts):
                if i in places and isinstance(e, ast.Name) and bound_once(model, bwd, e.id):
                    found[e.id] = places[i]
    return found
