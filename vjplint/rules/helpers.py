"""What rules share besides the facts (`vjplint.facts`): message wording, and the reporting of
VJP101/VJP102, two levels of one verdict."""

from __future__ import annotations

import ast
from typing import ClassVar, List, Optional, Tuple

from vjplint.diagnostics import NoAutomaticFix
from vjplint.facts import Arity, plural
from vjplint.plans.safety import carried_plan, residual_fix_offer
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode

# JAX's error when bwd's output does not match the primal's positional arguments.
BWD_TREE = ("`TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) structure "
            "as the args tuple of the primal function ...`")


def function_name(fn: Optional[FunctionNode]) -> str:
    if fn is None or isinstance(fn, ast.Lambda):
        return "<lambda>"
    return fn.name


def rule_label(rule: RuleFunction, role: str) -> str:
    """'fwd `f_fwd`' or 'the fwd lambda'."""
    if rule.name:
        return f"{role} `{rule.name}`"
    if isinstance(rule.called, ast.Lambda):  # a lambda delegating to a helper is still one
        return f"the {role} lambda"
    return role


def python_arity_error(label: str, arity: Arity, n: int) -> str:
    """Python's own TypeError text for calling a function of `arity` with `n` positional arguments."""
    if arity.accepts(n) and arity.kwonly_required:
        missing = [f"'{m}'" for m in arity.kwonly_required]
        listed = missing[0] if len(missing) == 1 else (
            " and ".join(missing) if len(missing) == 2 else ", ".join(missing[:-1]) + ", and " + missing[-1])
        return (f"TypeError: {label}() missing {plural(len(missing), 'required keyword-only argument')}: "
                f"{listed}")
    if arity.maximum is not None and n > arity.maximum:
        shift = arity.bound  # Python counts bound leading arguments too
        low, high = arity.required + shift, arity.maximum + shift
        takes = f"{low}" if low == high else f"from {low} to {high}"
        word = "argument" if high == 1 and low == high else "arguments"
        were = "was" if n + shift == 1 else "were"
        return f"TypeError: {label}() takes {takes} positional {word} but {n + shift} {were} given"
    missing = [name for name in arity.names[n:] if name not in arity.defaulted]
    quoted = [f"'{m}'" for m in missing]
    listed = quoted[0] if len(quoted) == 1 else (
        " and ".join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
    return f"TypeError: {label}() missing {plural(len(missing), 'required positional argument')}: {listed}"


class NondiffVerdictRule(Rule):
    """VJP101 and VJP102: report the nondiff positions whose verdict (`vjplint.facts.infer`) is the
    rule's LEVEL, offering the residual-plus-None fix."""

    FIX = "residual-plus-None"
    LEVEL: ClassVar[str]  # "array" (VJP101) or "maybe" (VJP102)

    def check(self) -> None:
        for d in self.model.derivatives:
            if d.kind != "vjp":
                continue
            verdicts = self.model.facts.verdicts(d)
            fixable = [v for v in verdicts if v.level == "array"]
            for v in verdicts:
                if v.level == self.LEVEL:
                    self._report(d, v, verdicts, confident=bool(fixable) and self.LEVEL == "array")

    def _report(self, d: CustomDerivative, v: Verdict, verdicts: List[Verdict], confident: bool) -> None:
        sig = d.signature
        assert sig is not None
        keyword = self.model.facts.nondiff_keyword(d, v.position)
        moved = tuple(x.position for x in verdicts if x.level == "array" or
                      (x.level == "maybe" and self.LEVEL == "maybe" and x.position == v.position))
        # A call of this module passes the slot a traced value (VJP104 reports it): that call raises
        # today, so moving the value is safe even though the slot's verdict is only "maybe".
        proven = self.LEVEL == "maybe" and (any(e.traced_at for e in v.evidence) or
                                            self.model.facts.nondiff_traced_call(d, v.position, v.name) is not None)
        applicability, why_not, planned = residual_fix_offer(self.model, d, moved, confident or proven)
        # A moved value becomes a traced residual: a use as a Python value would then fail.
        static_use = next((e for x in verdicts if x.position in moved for e in x.evidence
                           if e.from_usage and e.kind == "static"), None)
        if applicability is not None and static_use is not None:
            applicability, why_not = None, (f"it {static_use.reason}, which fails once the value is traced "
                                            f"as a residual")
        record = next((e.unfixable for x in verdicts if x.position in moved for e in x.evidence if e.unfixable), "")
        if applicability is not None and record:
            applicability, why_not = None, record
        plain = self.fix_refused(d, moved) if applicability is not None else ""
        if plain:
            applicability, why_not = None, plain
        message = self.message(v, keyword, d)
        self.report(
            sig.param_nodes[v.name],
            message + ("" if applicability else f" (no automatic fix: {why_not})"),
            fix=self.planning(applicability,
                              f"Move {_names(d, moved)} out of {keyword} into the residuals (bwd returns None for them)",
                              carried_plan(self.model, d.name, d.anchor.lineno, moved, planned))
            if applicability is not None else None,
            evidence=None if applicability else NoAutomaticFix(why_not, len(message)),
        )

    def fix_refused(self, d: CustomDerivative, moved: Tuple[int, ...]) -> str:
        """Why the values at `moved` cannot leave nondiff_argnums, beyond the plan's own reasons
        ("": they can). The nondiff family says so for objects JAX would reject as data."""
        return ""

    def message(self, v: Verdict, keyword: str, d: CustomDerivative) -> str:
        raise NotImplementedError


def _names(d: CustomDerivative, positions: Tuple[int, ...]) -> str:
    sig = d.signature
    names = [f"`{sig.positional[p]}`" for p in positions] if sig else []
    return ", ".join(names) or "the arrays"


def statement_of(model: FileModel, node: ast.AST) -> ast.AST:
    """The statement holding `node` (a decorator's statement is its function)."""
    while not isinstance(node, ast.stmt):
        parent = model.index.parent(node)
        if parent is None:
            return node
        node = parent
    return node


def block_of(model: FileModel, statement: ast.AST) -> Optional[List[ast.stmt]]:
    """The statement list (`body`, `orelse`, `finalbody`) that holds `statement`."""
    parent = model.index.parent(statement)
    for field in ("body", "orelse", "finalbody"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and any(s is statement for s in body):
            return body
    return None


# Fixed float dtypes a cast can name, by how JAX and NumPy spell them.
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
_DTYPE_PREFIXES = ("jax.numpy.", "numpy.", "jax.dtypes.", "ml_dtypes.")


def fixed_float_cast(model: FileModel, e: ast.expr) -> Optional[str]:
    """The fixed float dtype `e` is cast to at its outermost operation, if any: `v.astype(jnp.float32)`,
    `v.astype("bfloat16")`, `jnp.float16(v)`, `jnp.asarray(v, jnp.bfloat16)` / `dtype=`; a dtype read
    from a value (`x.dtype`), a name or a parameter is not fixed."""
    if not isinstance(e, ast.Call):
        return None
    if isinstance(e.func, ast.Attribute) and e.func.attr == "astype" and len(e.args) == 1 and not e.keywords:
        return _dtype_named(model, e.args[0])
    q = model.index.qualname(e.func) or ""
    if q.startswith(_DTYPE_PREFIXES) and q.rsplit(".", 1)[-1] in FLOAT_DTYPES and len(e.args) == 1 \
            and not e.keywords:
        return q.rsplit(".", 1)[-1]  # `jnp.float32(ct)`
    if q in ("jax.numpy.asarray", "jax.numpy.array", "numpy.asarray", "numpy.array"):
        for k in e.keywords:
            if k.arg == "dtype":
                return _dtype_named(model, k.value)
        if len(e.args) == 2:
            return _dtype_named(model, e.args[1])
    return None


def _dtype_named(model: FileModel, e: ast.expr) -> Optional[str]:
    if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in FLOAT_DTYPES:
        return e.value
    q = model.index.qualname(e) or ""
    if q.startswith(_DTYPE_PREFIXES) and q.rsplit(".", 1)[-1] in FLOAT_DTYPES:
        return q.rsplit(".", 1)[-1]
    return None
