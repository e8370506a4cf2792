"""Fixes are withheld inside tests that expect the error.

JAX's own test suite (and every library's) defines broken custom derivatives on purpose and asserts
the error they raise (`with self.assertRaisesRegex(...)`, `pytest.raises`, `@expectedFailure`).
The diagnostic stays true, but "fixing" such a rule makes the test fail: measured on the JAX tree,
a VJP307 fix turned the three variants of `test_vjp_bwd_returns_non_tuple_error` red. So a
finding inside a function that expects an error keeps its message and loses its fix.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from typing import Collection, List, Optional, Tuple

from vjplint.diagnostics import Diagnostic
from vjplint.model.semantic import walk

_EXPECTING_CALLS = frozenset({
    "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assertRaisesWithPredicateMatch",
    "assertWarns", "assertWarnsRegex", "raises",  # pytest.raises
})
_EXPECTING_DECORATORS = frozenset({"expectedFailure", "xfail"})
NOTE = " (no automatic fix: the enclosing test expects this error)"


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _expects_error(function: ast.AST) -> bool:
    if any(_name(d) in _EXPECTING_DECORATORS for d in function.decorator_list):
        return True
    return any(node.__class__ is ast.Call and _name(node.func) in _EXPECTING_CALLS  # type: ignore[attr-defined]
               for node in walk(function))


def expecting_spans(module: ast.Module, rows: Optional[Collection[int]] = None) -> List[Tuple[int, int]]:
    """Line spans of the outermost functions and methods that assert an error somewhere in their
    body (a nested helper's rule is covered by its enclosing test). With `rows`, only the spans
    holding one of them (a function holding none is not searched)."""
    spans: List[Tuple[int, int]] = []
    wanted = sorted(rows) if rows is not None else None  # a bisection per function, not a scan of the rows
    stack: List[ast.AST] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            last = node.end_lineno or node.lineno
            if wanted is not None:
                at = bisect.bisect_left(wanted, first)
                if at == len(wanted) or wanted[at] > last:
                    continue
            if _expects_error(node):
                spans.append((first, last))
        elif isinstance(node, (ast.ClassDef, ast.If, ast.Try, ast.With)):
            stack.extend(ast.iter_child_nodes(node))
    return spans


# Every name above holds one of these: a text without them expects no error anywhere.
_EXPECTING_WORDS = re.compile("assert|raises|expectedFailure|xfail")


def withhold_fixes(diagnostics: List[Diagnostic], module: ast.Module, text: Optional[str] = None) -> List[Diagnostic]:
    """`diagnostics`, those inside a function that expects an error without their fix. `text`,
    the module's source when known: without any of the names, no function expects one."""
    rows = {d.location.row for d in diagnostics if d.fix is not None}
    if not rows or (text is not None and _EXPECTING_WORDS.search(text) is None):
        return diagnostics
    spans = expecting_spans(module, rows)
    if not spans:
        return diagnostics
    kept = []
    for d in diagnostics:
        if d.fix is not None and any(start <= d.location.row <= end for start, end in spans):
            d = dataclasses.replace(d, fix=None, message=d.message + NOTE)
        kept.append(d)
    return kept
