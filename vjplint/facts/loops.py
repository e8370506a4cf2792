"""Where a value reaches a `lax.while_loop`: directly, through the local functions handed to the
loop, or through a helper of the same module called with it. A while_loop has no transpose rule,
so a jvp rule whose tangent goes through one breaks reverse mode (docs/facts/scripts/
hazard_key_and_while.py, jax-ml/jax#18311); a `fori_loop` with static bounds is a scan and
transposes, so it is not followed."""

from __future__ import annotations

import ast
from typing import Callable, Iterable, List, Optional, Set, Tuple

from vjplint.semantic import FUNCTION_TYPES, FunctionNode, SemanticIndex

WHILE_LOOP = "jax.lax.while_loop"
MAX_DEPTH = 3  # helpers followed, one inside the other


def reads(node: ast.AST, names: Set[str]) -> bool:
    """Whether `node` (a lambda or nested def included) reads one of `names`."""
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names for n in ast.walk(node))


def module_function(index: SemanticIndex, func: ast.expr) -> Optional[FunctionNode]:
    """The one `def` a called name binds to in this module (None for anything else)."""
    if not isinstance(func, ast.Name):
        return None
    bindings = index.lookup(func.id, index.scope_of(func))
    if len(bindings) == 1 and bindings[0].kind == "def" and isinstance(bindings[0].node, ast.FunctionDef):
        return bindings[0].node
    return None


def while_loop_route(index: SemanticIndex, fn: FunctionNode, params: Set[str],
                     quote: Callable[[ast.AST], str], depth: int = 0) -> Optional[Tuple[ast.Call, List[str]]]:
    """The `lax.while_loop` call a value of `params` (names in `fn`) flows into, with the helpers
    it passes through (`` `series` (line 12) ``, outermost first), or None."""
    if depth > MAX_DEPTH:
        return None
    names = _tainted(fn, params)
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        arguments: Iterable[ast.expr] = (*node.args, *(k.value for k in node.keywords))
        if index.qualname(node.func) == WHILE_LOOP:
            if any(reads(a, names) for a in arguments):
                return node, []
            continue
        target = module_function(index, node.func)
        if target is None or target is fn or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        positional = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
        hit = {p for p, a in zip(positional, node.args) if reads(a, names)}
        hit |= {k.arg for k in node.keywords if k.arg is not None and reads(k.value, names)}
        if not hit:
            continue
        found = while_loop_route(index, target, hit, quote, depth + 1)
        if found is not None:
            return found[0], [f"`{target.name}` (line {target.lineno})", *found[1]]
    return None


def _tainted(fn: FunctionNode, params: Set[str]) -> Set[str]:
    """`params` and the names assigned from them in `fn`, the local functions that read them
    included (a closure over the value carries it)."""
    names = set(params)
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            new: List[str] = []
            if isinstance(node, ast.Assign) and reads(node.value, names):
                new = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            elif isinstance(node, FUNCTION_TYPES) and node is not fn and not isinstance(node, ast.Lambda):
                if reads(node, names):
                    new = [node.name]
            for name in new:
                if name not in names:
                    names.add(name)
                    changed = True
    return names
