from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

# Functions (and attributes) whose result is real whatever their input.
REALIZING = frozenset({"real", "imag", "abs", "absolute", "angle"})
# Functions that mark their argument as complex data (`jnp.conj(z)`, `z.imag`).
COMPLEX_MARKS = frozenset({"conj", "conjugate", "real", "imag", "angle"})
# Functions that keep their input's kind (complex in, complex out).
KEEPING = frozenset({"sum", "mean", "prod", "exp", "log", "sin", "cos", "tanh", "sqrt", "square", "conj",
                     "conjugate", "multiply", "add", "subtract", "divide", "negative", "dot", "vdot", "matmul",
                     "einsum", "where", "reshape", "ravel", "squeeze", "expand_dims", "transpose", "cumsum"})
ARRAY_PREFIXES = ("jax.numpy.", "numpy.", "jax.lax.")
SHAPE_ERROR = ("`TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
               "dtypes. Expected float32[] (tangent type of float32[]) but got complex64[]`")


class JvpComplexTangentRealOutput(Rule):
    """## What it does
    Flags a custom_jvp rule whose primal output is real (it ends in `jnp.real`, `jnp.imag`,
    `jnp.abs` or `.real`, possibly summed) computed from a complex input (the primal applies
    `jnp.conj`, `jnp.real`, `.imag`... to it), while the rule's tangent is complex: it multiplies
    the input's tangent, the input or a `jnp.conj` of it (or a `1j`) and never takes the real part.
    A warning: that the input is complex is read from the primal's `jnp.conj`/`jnp.real`/`.imag`
    of it, not from its dtype.

    ## Why is this bad?
    A real primal output needs a real tangent of the same dtype. Measured on JAX 0.10.2
    (`docs/facts/scripts/jvp_complex_tangent.py`): eager calls work, but `grad`, `jvp` and
    `jit(grad)` raise

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes. Expected float32[] (tangent type of float32[]) but got complex64[].

    (jax-ml/jax#2488). The derivative of `|z|**2` along `dz` is `2 * Re(conj(z) * dz)`.

    ## Example
    ```python
    @jax.custom_jvp
    def energy(z):
        return jnp.sum(jnp.real(z * jnp.conj(z)))

    @energy.defjvp
    def energy_jvp(primals, tangents):
        (z,), (z_dot,) = primals, tangents
        return energy(z), jnp.sum(2.0 * jnp.conj(z) * z_dot)
    ```

    ## Use instead
    ```python
        return energy(z), jnp.sum(2.0 * jnp.real(jnp.conj(z) * z_dot))
    ```

    ## Fix safety
    No fix: which part of the complex expression is the derivative is the author's choice.
    """

    CODE = "VJP331"
    NAME = "jvp-complex-tangent-real-output"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def energy(z):
    return jnp.sum(jnp.real(z * jnp.conj(z)))

@energy.defjvp
def energy_jvp(primals, tangents):
    (z,), (z_dot,) = primals, tangents
    return energy(z), jnp.sum(2.0 * jnp.conj(z) * z_dot)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def energy(z):
    return jnp.sum(jnp.real(z * jnp.conj(z)))

@energy.defjvp
def energy_jvp(primals, tangents):
    (z,), (z_dot,) = primals, tangents
    return energy(z), jnp.sum(2.0 * jnp.real(jnp.conj(z) * z_dot))
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        sig = d.signature
        if d.primal is None or d.nondiff or d.nondiff_unresolved or sig is None or sig.vararg:
            return
        real_out = _real_output(self.model, d.primal)
        if real_out is None:
            return
        complex_params = _complex_params(self.model, d.primal, sig.positional)  # may be none: a `1j` is enough
        for reg, rule in self.model.facts.jvp_rules(d):
            if rule.node is None or rule.bound_positional or not self.model.facts.registered_here(d, reg.node):
                continue
            self._check_rule(d, rule, sig.positional, complex_params, real_out)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, params: List[str], complex_params: Set[str],
                    real_out: ast.expr) -> None:
        assert rule.node is not None
        rule_params = rule.signature.positional  # type: ignore[union-attr]
        if len(rule_params) != 2:
            return
        kinds = _Kinds(self.model, rule.node, _unpacked(self.model, rule.node, rule_params, params, complex_params))
        for ret in self.model.facts.returns_of(rule.node):
            if not isinstance(ret.value, ast.Tuple) or len(ret.value.elts) != 2:
                continue
            tangent = ret.value.elts[1]
            why = kinds.complex_why(tangent)
            if why is None:
                continue
            self.report(tangent, f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns the tangent "
                                 f"`{self.quote(tangent, 50)}`, which is complex ({why}), for a real primal output "
                                 f"(`{self.quote(real_out, 40)}`): a real output needs a real tangent, so "
                                 f"differentiating `{d.name}` (grad, jvp) with a complex input may raise {SHAPE_ERROR}; take the real part "
                                 f"of the tangent (`jnp.real(...)`), as the derivative of a real function is")


def _complex_params(model: FileModel, fn: FunctionNode, params: List[str]) -> Set[str]:
    """Parameters the primal marks as complex: `jnp.conj(z)`, `jnp.real(z * w)`, `z.imag`."""
    found: Set[str] = set()
    for node in model.facts.own_nodes(fn):
        marked: Optional[ast.expr] = None
        if isinstance(node, ast.Call) and len(node.args) == 1:
            q = model.index.qualname(node.func) or ""
            if q.startswith(ARRAY_PREFIXES) and q.rsplit(".", 1)[-1] in COMPLEX_MARKS:
                marked = node.args[0]
            elif isinstance(node.func, ast.Attribute) and not q and node.func.attr in ("conj", "conjugate"):
                marked = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in ("real", "imag"):
            marked = node.value
        if marked is not None:
            found |= {n.id for n in walk(marked) if isinstance(n, ast.Name) and n.id in params}
    return found


def _real_output(model: FileModel, fn: FunctionNode) -> Optional[ast.expr]:
    """The primal's one return when it is real by construction (a real part, an absolute value,
    summed or scaled by numbers)."""
    returns = model.facts.returns_of(fn)
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = returns[0].value
    return value if _realized(model, value) else None


def _realized(model: FileModel, e: ast.expr) -> bool:
    if isinstance(e, ast.Attribute) and e.attr in ("real", "imag"):
        return True
    if isinstance(e, ast.Call):
        q = model.index.qualname(e.func) or ""
        tail = q.rsplit(".", 1)[-1]
        if q.startswith(ARRAY_PREFIXES) and tail in REALIZING:
            return True
        if q.startswith(ARRAY_PREFIXES) and tail in ("sum", "mean") and e.args:
            return _realized(model, e.args[0])
        if isinstance(e.func, ast.Attribute) and not q and e.func.attr in ("sum", "mean"):
            return _realized(model, e.func.value)
        return False
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div, ast.Pow, ast.Add, ast.Sub)):
        sides = [s for s in (e.left, e.right) if not (isinstance(s, ast.Constant) and isinstance(s.value, (int, float)))]
        return bool(sides) and all(_realized(model, s) for s in sides)
    return False


def _unpacked(model: FileModel, fn: FunctionNode, rule_params: List[str], params: List[str],
              complex_params: Set[str]) -> Dict[str, str]:
    """Names the rule binds to complex primals or their tangents: 'the complex input `z`',
    'the tangent of the complex input `z`'."""
    primals, tangents = rule_params
    sources = {primals: [(p, f"the complex input `{p}`") for p in params],
               tangents: [(p, f"the tangent `{{name}}` of the complex input `{p}`") for p in params]}
    out: Dict[str, str] = {}

    def bind(target: ast.expr, items: List[Tuple[str, str]]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(items):
            for t, (p, why) in zip(target.elts, items):
                if isinstance(t, ast.Name) and p in complex_params:
                    out[t.id] = why.format(name=t.id)

    for node in model.facts.own_nodes(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(value, ast.Name) and value.id in sources:
            bind(target, sources[value.id])
        elif isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                if isinstance(v, ast.Name) and v.id in sources:
                    bind(t, sources[v.id])
    return out


class _Kinds:
    """Whether an expression of the rule is complex, following names bound once."""

    def __init__(self, model: FileModel, fn: FunctionNode, complex_names: Dict[str, str]) -> None:
        self.model = model
        self.complex_names = complex_names
        self.bound: Dict[str, List[ast.expr]] = {}
        for node in model.facts.own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.bound.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                for n in walk(node.target):
                    if isinstance(n, ast.Name):
                        self.bound.setdefault(n.id, []).extend([node.target, node.target])

    def complex_why(self, e: ast.expr, depth: int = 0) -> Optional[str]:
        """Why `e` is complex (the first complex part found), or None when it is not provably."""
        if depth > 8:
            return None
        if isinstance(e, ast.Constant) and isinstance(e.value, complex):
            return f"the imaginary literal `{e.value!r}`"
        if isinstance(e, ast.Name):
            if e.id in self.complex_names and e.id not in self.bound:
                return self.complex_names[e.id]
            values = self.bound.get(e.id, [])
            return self.complex_why(values[0], depth + 1) if len(values) == 1 else None
        if isinstance(e, ast.UnaryOp):
            return self.complex_why(e.operand, depth + 1)
        if isinstance(e, ast.BinOp):
            return self.complex_why(e.left, depth + 1) or self.complex_why(e.right, depth + 1)
        if isinstance(e, ast.Attribute) and e.attr in ("real", "imag"):
            return None
        if isinstance(e, ast.Call):
            q = self.model.index.qualname(e.func) or ""
            tail = q.rsplit(".", 1)[-1]
            if q.startswith(ARRAY_PREFIXES) and tail in KEEPING and not e.keywords:
                for a in e.args:
                    why = self.complex_why(a, depth + 1)
                    if why is not None:
                        return f"`{self.model.quote(e, 30)}` of {why}" if tail in ("conj", "conjugate") else why
                return None
            if isinstance(e.func, ast.Attribute) and not q and e.func.attr in ("sum", "mean", "conj", "conjugate"):
                return self.complex_why(e.func.value, depth + 1)
        return None
