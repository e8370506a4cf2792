"""What a fix rewrites, as something that can be run: the *target* of a diagnostic at a line.

`--fix --verify` proves each rewrite by running its target on JAX (vjplint.verify), and keeps
the old code of a target whose rewrite is not proven (`fix_text(..., exclude=...)`), so both
sides must name targets the same way:

* a custom_vjp/custom_jvp defined at module level (or in a class body) whose definition, rules
  or registration hold the line: its name (`clip` or `Ops.clip`), the function the harness calls;
* otherwise the module-level function (or `Class.method`) whose body holds the line, e.g. the
  function that defines a custom_vjp inside itself (VJP201) or a helper sniffing tracers (VJP402);
* otherwise `MODULE` (""): a module-level statement (VJP401's flag setting).
"""

from __future__ import annotations

import ast
from typing import Iterable, List, Optional, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.run_facts import RunFacts, NO_FACTS
from vjplint.facts.collect import Recognizer, collect
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import SourceError, parse

MODULE = ""


def _span(node: ast.AST) -> Tuple[int, int]:
    first = min([getattr(node, "lineno", 0), *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return first, getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)


def derivative_spans(d: CustomDerivative) -> List[Tuple[int, int]]:
    """The rows of everything that defines `d`: primal, creation, registrations, rules."""
    nodes: List[ast.AST] = [d.anchor, d.creation]
    if d.primal is not None:
        nodes.append(d.primal)
    for reg in d.registrations:
        nodes.append(reg.node)
        nodes.extend(r.node for r in reg.rules if r.node is not None)
    return [_span(n) for n in nodes if hasattr(n, "lineno")]


def qualname(d: CustomDerivative) -> str:
    return f"{d.class_node.name}.{d.name}" if d.class_node is not None else d.name


def _inside(line: int, spans: Iterable[Tuple[int, int]]) -> bool:
    return any(a <= line <= b for a, b in spans)


def enclosing_function(module: ast.Module, line: int) -> Optional[str]:
    """The module-level function, or `Class.method`, whose definition holds `line`."""
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and _inside(line, [_span(stmt)]):
            return stmt.name
        if isinstance(stmt, ast.ClassDef) and _inside(line, [_span(stmt)]):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _inside(line, [_span(item)]):
                    return f"{stmt.name}.{item.name}"
            return None
    return None


def target_of(model: FileModel, module: ast.Module, line: int) -> Optional[str]:
    """The target a diagnostic at `line` belongs to (see the module docstring); None when it is
    inside a class body but in no method (nothing to run)."""
    for d in model.derivatives:
        if d.enclosing is None and _inside(line, derivative_spans(d)):
            return qualname(d)
    name = enclosing_function(module, line)
    if name is not None:
        return name
    if any(isinstance(s, ast.ClassDef) and _inside(line, [_span(s)]) for s in module.body):
        return None
    return MODULE


def model_of(text: str, config, facts: "Optional[RunFacts]" = None) -> Optional[Tuple[FileModel, ast.Module]]:
    """The whole module's model (not the linter's focused one), or None if it does not parse."""
    try:
        module = parse(text)
    except SourceError:
        return None

    recognizer = Recognizer.for_run(config, facts or NO_FACTS)
    return collect(module, source_lines(text), recognizer), module
