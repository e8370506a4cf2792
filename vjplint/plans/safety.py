"""Whether the residual-plus-None fix can be offered for a derivative, and how safely.

The decision is the planner's: a fix is offered exactly when `residual_plan.plan()` can build
the rewrite, so the rule never promises a fix the transform cannot make.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple, Union

from vjplint.diagnostics import Applicability, Diagnostic, Edit, Evidence, ResidualPlusNone, edit_order
from vjplint.plans.residual_plan import Plan, Refusal, model_digest, plan
from vjplint.model.file_model import CustomDerivative, FileModel


def residual_fix_offer(model: FileModel, d: CustomDerivative, moved: Sequence[int],
                       confident: bool) -> Tuple[Optional[Applicability], str, Optional[Plan]]:
    """(applicability or None, the reason shown when no fix is offered, the plan when one is).

    Safe: the plan needs no binding or indexing, the rules are used only by this custom_vjp,
    and the inference is confident (VJP101). Unsafe: weaker inference (VJP102) or a return
    that must be bound/indexed. None: the rules live elsewhere, are shared, or a return
    cannot be rewritten. The plan travels with the fix (`ResidualPlusNone.planned`), so that
    applying it does not plan again.
    """
    if d.api != "jax":  # the plan rewrites to JAX's protocol; nnx's and linen's bwd conventions differ
        return None, f"the rewrite assumes JAX's bwd protocol, and {d.label}'s differs", None

    result = model.facts.derived(_planned, d, tuple(sorted(moved)))  # the rule asks, the codemod again
    if isinstance(result, str):
        return None, result, None
    if not confident or not result.safe:
        return Applicability.UNSAFE, "", result
    return Applicability.SAFE, "", result


def carried_plan(model: FileModel, target: str, line: int, positions: Sequence[int], planned: Optional[Plan]
                 ) -> ResidualPlusNone:
    """The fix's plan object, carrying the plan made now and the digest of the lines it was made from."""
    return ResidualPlusNone(target, line, tuple(positions), planned=planned,
                            planned_on=model.facts.of_model(model_digest) if planned is not None else "")


def _planned(model: FileModel, d: CustomDerivative, moved: Tuple[int, ...]) -> Union[Plan, str]:
    """The residual-plus-None plan of `d` moving `moved`, or the reason the planner refused."""
    try:
        return plan(model, d, moved)
    except Refusal as exc:
        return str(exc)


def rewrite_draws(model: FileModel, edits: Sequence[Edit], code: str, finding: Callable[[Optional[Evidence]], bool],
                  relint: "Optional[Callable[[str, str], List[Diagnostic]]]") -> bool:
    """Whether rule `code` reports, on `model`'s text with `edits` applied (1-based rows and
    code-point columns, end exclusive, disjoint), a finding whose evidence (`Diagnostic.evidence`,
    the rule's typed account, never its message's words) satisfies `finding`: how a fix learns,
    before it is offered, that its result would draw a finding (run once per offered fix of the
    rules that ask, which are rare). `relint` lints a text with one rule (the engine's, handed to
    the rules as RuleOptions.relint); without it nothing is known: False."""
    return bool(rewrite_rows(model, edits, code, finding, relint))


def rewrite_rows(model: FileModel, edits: Sequence[Edit], code: str, finding: Callable[[Optional[Evidence]], bool],
                 relint: "Optional[Callable[[str, str], List[Diagnostic]]]") -> List[int]:
    """The rows (of the rewritten text) where rule `code` reports such a finding (see `rewrite_draws`)."""
    if relint is None:
        return []

    lines = list(model.lines)
    for edit in sorted(edits, key=edit_order, reverse=True):  # from the end, so earlier positions hold
        r1, c1, r2, c2, new = (edit.location.row, edit.location.column, edit.end_location.row,
                               edit.end_location.column, edit.content)
        head, tail = lines[r1 - 1][:c1 - 1], lines[r2 - 1][c2 - 1:]
        lines[r1 - 1:r2] = (head + new + tail).split("\n")
    return [d.location.row for d in relint(code, "\n".join(lines) + "\n") if d.code == code and finding(d.evidence)]
