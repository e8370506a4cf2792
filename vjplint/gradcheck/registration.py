"""A custom derivative whose definition itself raises: the statement that creates it or registers
its rules (`f.defvjp(fwd, bwd)`, `@f.defjvp`, `@partial(jax.custom_vjp, nondiff_argnums=...)`)
raises when it runs, so the module cannot be imported, or the factory that makes it cannot be
called. JAX raises for the definition (a `defjvp` on a custom_vjp: "'custom_vjp' object has no
attribute 'defjvp'"; `defvjp(..., nondiff_argnums=...)`; `optimize_remat` with `symbolic_zeros`;
`defvjp` on what `jax.jit` returned), which is the rule's failure, not a reason to leave it
unchecked (issue #44: heldout3's and heldout4's `creator_swapped`, `jit_over_creator`,
`nondiff_to_registration`, `remat_symbolic_zeros` mutants).

Here: which definition a raising line belongs to (from the source alone), and the verdict."""

from __future__ import annotations

import ast
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence

REGISTRATION_METHODS = ("defvjp", "defjvp", "defjvps")
_LINE = re.compile(r"^line (\d+)$")


def raising_line(where: str) -> Optional[int]:
    """The line of the child's `where` ("line 12"), or None."""
    match = _LINE.match(where or "")
    return int(match.group(1)) if match else None


def definition_at(text: str, line: int, targets: Sequence[Any]) -> Optional[Any]:
    """The target (with `qualname` and `line`, its anchor's) whose creation or rule registration is the
    statement at `line`: a `X.defvjp(...)`/`X.defjvp(...)`/`X.defjvps(...)` call or decorator whose `X`
    names it (the last such definition before the line, by its name), or its own decorator or
    creation line. None when the line is anything else (an import, the module's own code)."""
    if line in {t.line for t in targets}:  # its creation: `@partial(jax.custom_vjp, ...)`, `f = custom_jvp(g)`
        return next(t for t in targets if t.line == line)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    names = set()
    for node in _nodes_at(tree, line):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr in REGISTRATION_METHODS:
                base = sub.value
                if isinstance(base, ast.Name):
                    names.add(base.id)
                elif isinstance(base, ast.Attribute):
                    names.add(base.attr)
    if not names:
        return None
    named = [t for t in targets if t.qualname.rsplit(".", 1)[-1] in names]
    before = [t for t in named if t.line <= line]
    if before:
        return max(before, key=lambda t: t.line)
    return named[0] if named else None


def _nodes_at(tree: ast.AST, line: int) -> List[ast.AST]:
    """The innermost statement whose lines hold `line`, and any decorator expression there."""
    best: Optional[ast.AST] = None
    found: List[ast.AST] = []
    for node in ast.walk(tree):
        for decorator in getattr(node, "decorator_list", ()) or ():
            if decorator.lineno <= line <= (decorator.end_lineno or decorator.lineno):
                found.append(decorator)
        if not isinstance(node, ast.stmt) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a def's body is not the statement; its decorators are looked at above
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or (node.end_lineno or node.lineno) - node.lineno <= \
                    (best.end_lineno or best.lineno) - best.lineno:  # type: ignore[attr-defined]
                best = node
    if best is not None and not isinstance(best, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
        found.append(best)
    return found


def failure(kind: str, line: int, detail: str, when: str) -> Dict[str, Any]:
    """The verdict of a definition whose creation or registration raises (`when`: "at import", or
    where the run called the factory): an error (VJP501 for a custom_vjp, VJP502 for a custom_jvp)."""
    hint = _hint(detail, kind)
    message = f"JAX raises when the definition or its rules are registered (line {line}, {when}): {detail}{hint}"
    return {"status": "failed", "reason": message, "inputs": [],
            "checks": [{"name": "registration", "status": "failed", "detail": message,
                        "code": "VJP501" if kind == "vjp" else "VJP502", "max_error": None}]}


def _hint(detail: str, kind: str) -> str:
    if "PjitFunction" in detail:
        return (" (what `jax.jit` returns has no rule methods: register the rules on the custom_vjp/custom_jvp "
                "object, then jit it)")
    if "has no attribute 'defvjp'" in detail and kind == "jvp":
        return " (a custom_jvp takes its rule with `defjvp`; `defvjp` is a custom_vjp's)"
    if ("has no attribute 'defjvp'" in detail or "has no attribute 'defjvps'" in detail) and kind == "vjp":
        return " (a custom_vjp takes its rules with `defvjp`; `defjvp` is a custom_jvp's)"
    return ""


def raised_in_run(raises: Iterable[Dict[str, Any]], real: str, text: str, targets: Sequence[Any]) -> Dict[int, Dict[str, Any]]:
    """The exceptions the project's run saw raised in this file (vjplint.record: a test that called a
    factory whose registration raises), by the index of the target they belong to."""
    found: Dict[int, Dict[str, Any]] = {}
    for r in raises:
        if r.get("file") != real or not isinstance(r.get("line"), int):
            continue
        t = definition_at(text, r["line"], targets)
        if t is not None:
            found.setdefault(targets.index(t), r)
    return found
