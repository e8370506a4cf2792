"""A fwd output that only one branch of fwd returns (`if save_residuals: return (out, stats), res`),
and VJP318's wording for it: a finding true only for the callers that take that branch."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.facts.structure import FwdOutput, RegisteredBwd, describe
from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.rules.helpers import rule_label


def branch_test(model: FileModel, node: ast.AST, fwd: ast.AST) -> Optional[ast.expr]:
    """The test of the innermost `if` (or conditional expression) of fwd that holds `node`."""
    child, parent = node, model.index.parent(node)
    while parent is not None and parent is not fwd:
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            return parent.test
        child, parent = parent, model.index.parent(parent)
    return None


def branch_message(model: FileModel, d: CustomDerivative, reg: RegisteredBwd, out: FwdOutput, test: ast.expr,
                   use: ast.AST, where: str) -> str:
    g = reg.params[-1]
    return (f"{rule_label(reg.fwd, 'fwd')} returns {describe(out.structure)} as its primal output ({out.why}) on "
            f"one branch (`{model.quote(test, 40)}`, line {test.lineno}) and another output elsewhere, but "
            f"{rule_label(reg.bwd, 'bwd')} uses the cotangent `{g}` as one array (`{model.quote(use, 40)}`{where}, "
            f"line {use.lineno}): differentiating `{d.name}` may raise there (`AttributeError: 'tuple' object has no "
            f"attribute ...`, `TypeError: ... got <class 'tuple'>`) when the caller takes that branch: JAX hands bwd a cotangent "
            f"of the output's structure. If that branch is differentiated, unpack `{g}` in bwd there; if it never "
            f"is, raise a clear error for it in fwd")
