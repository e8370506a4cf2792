"""Counting parameters and returned values the way JAX calls custom-derivative rules.

Shared by the structure rules (VJP3xx); other rules import it, so this API stays stable
(fields and functions may be added, never changed):

- `Arity(required, maximum, names, defaulted, vararg, bound, self_name, partial_names,
  kwonly_required)` with `.accepts(n)`, `.count_text()`, `.params_text()`, `.binding_text()`.
- `function_arity(fn, bound=0, bound_keywords=())`, `rule_arity(model, rule)`: the positional
  arguments a rule accepts once `functools.partial` and method binding (`self.fwd`) apply;
  None when unknown (unresolved, decorated, re-bound, a broken partial).
- `primal_signature(model, d)` (None when a decorator applied before custom_vjp may change
  it), `nondiff_positions(model, d)` (None unless every entry is a valid index),
  `primal_arg_counts(model, d)` / `primal_arg_count(model, d)` (k: positional arguments JAX
  binds, defaults filled in; with `*args`, from agreeing call sites of a private or local
  function), `differentiable_names(model, d)` (the D names bwd returns cotangents for).
- `vjp_rules(model, d)` (every call-form `defvjp` as (registration, fwd, bwd)),
  `checked_vjp_rules(model, d)` (minus swapped registrations, placeholders as None),
  `swap_evidence(model, d, fwd, bwd)`, `is_placeholder(fn)`.
- `returns_of(fn)`, `sequence_length(model, expr, fn)`, `not_a_sequence(model, expr, fn, arrays)`,
  `primal_returns_array(model, d)`: what a `return` provably is.
- `name_anchor(model, fn)`, `source_text(model, first, last)`, `text_between(model, a, b)`,
  `plural(n, word)`, `rule_label(rule, role)`, `python_arity_error(label, arity, n)`,
  `is_transform_argument(model, node)`, `COTANGENT_NAMES`, `RESIDUAL_NAMES`, `SIGNATURE_KEEPING`.

Facts (jax-facts sections 5-8): fwd is called with every primal argument positionally, defaults
filled in (`inspect.signature(...).bind(...).apply_defaults()`); bwd is called as
`bwd(*nondiff_in_sorted_order, residuals, cotangent)` and returns one entry per differentiable
positional argument, as a tuple or list.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Iterator, List, Optional, Sequence, Set, Tuple

from vjplint.collect import PARTIAL, TRANSFORMS, constant_value
from vjplint.model import (
    CustomDerivative,
    FileModel,
    Registration,
    RuleFunction,
    Signature,
)
from vjplint.semantic import FUNCTION_TYPES, FunctionNode

# Decorators that keep a function's signature as JAX sees it.
SIGNATURE_KEEPING = frozenset({"builtins.staticmethod", "jax.jit", "jax.named_call"})


@dataclass(frozen=True)
class Arity:
    """How many positional arguments a callable accepts: `required` up to `maximum` (None: `*args`)."""

    required: int
    maximum: Optional[int]
    names: Tuple[str, ...]  # positional parameter names left after binding
    defaulted: Tuple[str, ...] = ()
    vararg: Optional[str] = None
    bound: int = 0  # leading arguments bound by functools.partial or a bound method
    self_name: Optional[str] = None  # the bound `self`/`cls` of a method, if any
    partial_names: Tuple[str, ...] = ()  # parameters bound by functools.partial (positional or keyword)
    kwonly_required: Tuple[str, ...] = ()  # keyword-only parameters without a default, not bound: JAX never passes them

    def accepts(self, n: int) -> bool:
        return self.required <= n and (self.maximum is None or n <= self.maximum)

    def count_text(self) -> str:
        """'2 positional parameters', '1 to 3 ...', 'at least 1 ...'."""
        if self.maximum is None:
            return f"at least {plural(self.required, 'positional parameter')}"
        if self.required == self.maximum:
            return plural(self.maximum, "positional parameter")
        return f"{self.required} to {plural(self.maximum, 'positional parameter')}"

    def binding_text(self) -> str:
        """' besides `self`', ' after functools.partial binds `fn`', or ''."""
        parts = []
        if self.self_name:
            parts.append(f" besides `{self.self_name}`")
        if self.partial_names:
            parts.append(" after functools.partial binds " + ", ".join(f"`{n}`" for n in self.partial_names))
        return ",".join(parts)

    def params_text(self) -> str:
        names = [f"{n}=…" if n in self.defaulted else n for n in self.names]
        if self.vararg:
            names.append(f"*{self.vararg}")
        return f"({', '.join(names)})"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def function_arity(fn: FunctionNode, bound: int = 0, bound_keywords: Sequence[str] = ()) -> Optional[Arity]:
    """Arity of `fn` after `bound` leading positional arguments and `bound_keywords` are bound."""
    sig = Signature.of(fn)
    defaulted = set(sig.positional[len(sig.positional) - sig.n_defaults:])
    names = list(sig.positional)
    if bound > len(names) and not sig.vararg:
        return None  # the partial itself is broken; another problem
    names = names[bound:]
    cut = next((i for i, n in enumerate(names) if n in bound_keywords), None)
    if cut is not None:
        # A keyword-bound parameter stops positional filling; later ones can only come by keyword.
        if any(n not in defaulted and n not in bound_keywords for n in names[cut:]):
            return None
        names = names[:cut]
        kwonly = tuple(n for n in sig.kwonly if n not in sig.defaults and n not in bound_keywords)
        return Arity(sum(n not in defaulted for n in names), len(names), tuple(names),
                     tuple(n for n in names if n in defaulted), None, bound, kwonly_required=kwonly)
    required = sum(n not in defaulted for n in names)
    maximum = None if sig.vararg else len(names)
    kwonly = tuple(n for n in sig.kwonly if n not in sig.defaults and n not in bound_keywords)
    return Arity(required, maximum, tuple(names), tuple(n for n in names if n in defaulted), sig.vararg, bound,
                 kwonly_required=kwonly)


def _decorator_names(model: FileModel, fn: FunctionNode) -> List[str]:
    result = []
    for decorator in getattr(fn, "decorator_list", []):
        target = decorator
        if isinstance(decorator, ast.Call):
            q = model.index.qualname(decorator.func)
            target = decorator.args[0] if q in PARTIAL and decorator.args else decorator.func
        result.append(model.index.qualname(target) or "?")
    return result


def _innermost(model: FileModel, expr: ast.expr, depth: int = 0) -> Tuple[Optional[ast.expr], int, Tuple[str, ...]]:
    """Strip `functools.partial` layers and simple name aliases; (callee, bound positional, bound keywords)."""
    if depth > 4:
        return None, 0, ()
    if isinstance(expr, ast.Call):
        if model.index.qualname(expr.func) in PARTIAL and expr.args:
            if any(isinstance(a, ast.Starred) for a in expr.args) or any(k.arg is None for k in expr.keywords):
                return None, 0, ()
            inner, n, kws = _innermost(model, expr.args[0], depth + 1)
            return inner, n + len(expr.args) - 1, kws + tuple(k.arg for k in expr.keywords if k.arg)
        return None, 0, ()
    if isinstance(expr, ast.Name):
        bindings = model.index.lookup(expr.id, model.index.scope_of(expr))
        if len(bindings) != 1:
            return None, 0, ()  # conditional or re-bound definitions: unknown
        b = bindings[0]
        if b.kind == "assign" and isinstance(b.value, (ast.Call, ast.Name, ast.Lambda)):
            return _innermost(model, b.value, depth + 1)
    return expr, 0, ()


def rule_arity(model: FileModel, rule: Optional[RuleFunction]) -> Optional[Arity]:
    """Positional arguments the rule accepts as JAX calls it; None when not statically known."""
    if rule is None or rule.node is None or rule.is_none:
        return None
    callee, bound, keywords = _innermost(model, rule.expr)
    if callee is None:
        return None
    fn = rule.node
    partial_bound = bound
    decorators = _decorator_names(model, fn)
    if any(q not in SIGNATURE_KEEPING and q != "builtins.classmethod" for q in decorators):
        return None
    owner = model.index.parent(fn)
    is_method = isinstance(owner, ast.ClassDef)
    if is_method and len(model.index.scopes[owner].bindings.get(fn.name, [])) != 1:  # type: ignore[union-attr]
        return None  # property setters, overloads, redefinitions
    if is_method and isinstance(callee, ast.Attribute):
        via_instance = _is_instance_access(model, callee)
        if via_instance is None:
            return None
        if "builtins.classmethod" in decorators or (via_instance and "builtins.staticmethod" not in decorators):
            bound += 1
    elif "builtins.classmethod" in decorators:
        return None
    arity = function_arity(fn, bound, keywords)
    if arity is None:
        return None
    positional = Signature.of(fn).positional
    self_name = positional[0] if bound > partial_bound and positional else None
    skip = 1 if self_name else 0
    partial_names = tuple(positional[skip:bound]) + tuple(k for k in keywords if k in positional)
    return replace(arity, self_name=self_name, partial_names=partial_names)


def _is_instance_access(model: FileModel, attr: ast.Attribute) -> Optional[bool]:
    """True for `self.m`, False for `ClassName.m`, None otherwise."""
    if not isinstance(attr.value, ast.Name):
        return None
    bindings = model.index.lookup(attr.value.id, model.index.scope_of(attr))
    if len(bindings) != 1:
        return None
    if bindings[0].kind == "class":
        return False
    if bindings[0].kind == "param":
        owner = model.index.parent(model.index.parent(bindings[0].node))  # arg -> arguments -> def
        return "builtins.classmethod" not in _decorator_names(model, owner)  # type: ignore[arg-type]
    return None


def rule_label(rule: RuleFunction, role: str) -> str:
    """'fwd `f_fwd`' or 'the fwd lambda'."""
    if rule.name:
        return f"{role} `{rule.name}`"
    if isinstance(rule.node, ast.Lambda):
        return f"the {role} lambda"
    return role


# -- the primal ------------------------------------------------------------------------------
def primal_signature(model: FileModel, d: CustomDerivative) -> Optional[Signature]:
    """The primal's signature, or None when a decorator applied before custom_vjp may change it."""
    fn = d.primal
    if fn is None:
        return None
    decorators = list(getattr(fn, "decorator_list", []))
    if d.anchor in decorators:
        decorators = decorators[decorators.index(d.anchor) + 1:]  # applied before custom_vjp
    elif d.anchor is fn:
        decorators = []
    for decorator in decorators:
        if (model.index.qualname(decorator) or "?") not in SIGNATURE_KEEPING:
            return None
    return Signature.of(fn)


def nondiff_positions(model: FileModel, d: CustomDerivative) -> Optional[Tuple[int, ...]]:
    """Sorted nondiff positions when every entry is a valid index; None otherwise (VJP103's
    cases, where what the author meant and what JAX does differ, are left to VJP103)."""
    if d.nondiff_unresolved:
        return None
    if "nondiff_argnums" in d.keywords:
        value = constant_value(model.index, d.keywords["nondiff_argnums"])
        if not isinstance(value, (tuple, list)):  # a bare int: JAX ignores 0 and crashes on others (VJP103)
            return None
        sig = primal_signature(model, d)
        for item in value:
            if type(item) is not int or item < 0:
                return None
            if sig is not None and not sig.vararg and item >= len(sig.positional):
                return None
    return d.nondiff


def primal_arg_counts(model: FileModel, d: CustomDerivative) -> Optional[Set[int]]:
    """Every number of positional arguments JAX binds for the primal (defaults filled in).

    A single value without `*args`. With `*args` the in-file call sites decide, but only when
    the function cannot be called from elsewhere (private or local) and no call hides its
    arguments (`f(*xs)`, `f(**kw)`)."""
    sig = primal_signature(model, d)
    if sig is None:
        return None
    if not sig.vararg:
        return {len(sig.positional)}
    if not (d.name.startswith("_") or d.enclosing is not None) or not d.call_sites or _escapes(model, d):
        return None
    counts = set()
    own = {id(d.primal), *(id(r.node) for reg in d.registrations for r in reg.rules if r.node is not None)}
    for site in d.call_sites:
        call = site.call
        if any(id(f) in own for f in _enclosing_functions(model, call)):
            continue  # `f(*args)` inside its own rules forwards the arguments; it does not decide them
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        counts.add(max(len(call.args) + site.positional_offset, len(sig.positional)))
    return counts or None


def _enclosing_functions(model: FileModel, node: ast.AST) -> Iterator[ast.AST]:
    for ancestor in model.index.ancestors(node):
        if isinstance(ancestor, FUNCTION_TYPES):
            yield ancestor


def primal_arg_count(model: FileModel, d: CustomDerivative) -> Optional[int]:
    counts = primal_arg_counts(model, d)
    return counts.pop() if counts is not None and len(counts) == 1 else None


def differentiable_names(model: FileModel, d: CustomDerivative) -> Optional[List[str]]:
    """Names of the D positions bwd returns cotangents for (`args[i]` for `*args` extras)."""
    k = primal_arg_count(model, d)
    nondiff = nondiff_positions(model, d)
    sig = primal_signature(model, d)
    if k is None or nondiff is None or sig is None:
        return None
    names = [sig.positional[i] if i < len(sig.positional) else f"{sig.vararg}[{i - len(sig.positional)}]"
             for i in range(k)]
    return [n for i, n in enumerate(names) if i not in nondiff]


def _escapes(model: FileModel, d: CustomDerivative) -> bool:
    """True when the derivative's name is used other than being called or registered."""
    calls = {id(s.call.func) for s in d.call_sites}
    for node in ast.walk(d.enclosing or model.module):
        if isinstance(node, ast.Name) and node.id == d.name and isinstance(node.ctx, ast.Load):
            parent = model.index.parent(node)
            if id(node) in calls:
                continue
            if isinstance(parent, ast.Attribute) and parent.attr in ("defvjp", "defjvp", "defjvps"):
                continue
            return True
    return False


# -- registrations ---------------------------------------------------------------------------
def vjp_rules(model: FileModel, d: CustomDerivative) -> Iterator[Tuple[Registration, Optional[RuleFunction],
                                                                        Optional[RuleFunction]]]:
    """Every call-form `defvjp` registration of `d`, with its fwd and bwd."""
    if d.kind != "vjp":
        return
    for reg in d.registrations:
        if reg.method == "defvjp" and not reg.as_decorator:
            fwd = reg.rules[0] if len(reg.rules) > 0 else None
            bwd = reg.rules[1] if len(reg.rules) > 1 else None
            yield reg, fwd, bwd


def checked_vjp_rules(model: FileModel, d: CustomDerivative) -> Iterator[Tuple[Registration, Optional[RuleFunction],
                                                                                Optional[RuleFunction]]]:
    """`vjp_rules` minus registrations whose rules look swapped (VJP309 reports those), with
    placeholder rules (`lambda *_: ...`, `assert False`) replaced by None: they never run."""
    for reg, fwd, bwd in vjp_rules(model, d):
        if fwd is not None and bwd is not None and swap_evidence(model, d, fwd, bwd) is not None:
            continue
        yield reg, (None if fwd is None or is_placeholder(fwd.node) else fwd), \
            (None if bwd is None or is_placeholder(bwd.node) else bwd)


_FWD_NAME = re.compile(r"fwd|forward", re.IGNORECASE)
_BWD_NAME = re.compile(r"bwd|backward|(^|_)rev(erse)?(_|$)", re.IGNORECASE)  # JAX's own code says `f_rev`
COTANGENT_NAMES = frozenset({
    "g", "ct", "cts", "cot", "cotangent", "cotangents", "ct_out", "cts_out", "out_ct", "g_out", "gout",
    "grad", "grads", "grad_out", "out_grad", "dout", "d_out", "dy", "ybar", "y_bar", "out_bar", "upstream",
    "ct_y", "g_y", "dL_dy", "grad_output", "grad_outputs", "output_grad",
})
RESIDUAL_NAMES = frozenset({"res", "resid", "residual", "residuals", "saved", "ctx", "cache", "saved_tensors"})


def _name_role(rule: RuleFunction) -> Optional[str]:
    name = rule.name or ""
    fwd, bwd = bool(_FWD_NAME.search(name)), bool(_BWD_NAME.search(name))
    return "fwd" if fwd and not bwd else "bwd" if bwd and not fwd else None


def swap_evidence(model: FileModel, d: CustomDerivative, fwd: RuleFunction, bwd: RuleFunction) -> Optional[str]:
    """Why `defvjp(first, second)` looks like `defvjp(bwd, fwd)`; None when it does not."""
    if fwd.is_none or bwd.is_none:
        return None
    first_role, second_role = _name_role(fwd), _name_role(bwd)
    if first_role == "bwd" and second_role == "fwd":
        return f"the first is named `{fwd.name}` and the second `{bwd.name}`"
    if first_role == "fwd" or second_role == "bwd":
        return None  # names say the order is right
    k = primal_arg_count(model, d)
    nondiff = nondiff_positions(model, d)
    first, second = rule_arity(model, fwd), rule_arity(model, bwd)
    if k is None or nondiff is None or first is None or second is None:
        return None
    nd2 = len(nondiff) + 2
    if k == nd2:
        return None  # arities cannot tell them apart
    if first.accepts(nd2) and not first.accepts(k) and second.accepts(k) and not second.accepts(nd2):
        return (f"the first takes {first.count_text()} {first.params_text()}, as many as bwd receives, and the "
                f"second {second.count_text()} {second.params_text()}, as many as fwd receives")
    return None


# -- returns ---------------------------------------------------------------------------------
def returns_of(fn: FunctionNode) -> List[Tuple[ast.AST, Optional[ast.expr]]]:
    """(node to report, returned expression or None for a bare `return`) for each return of `fn`;
    empty for generators. A lambda's body counts as its return."""
    if isinstance(fn, ast.Lambda):
        return [(fn.body, fn.body)]
    found: List[Tuple[ast.AST, Optional[ast.expr]]] = []
    stack: List[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return []
        if isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            found.append((node.value if node.value is not None else node, node.value))
        stack.extend(ast.iter_child_nodes(node))
    found.sort(key=lambda r: (r[0].lineno, r[0].col_offset))  # type: ignore[attr-defined]
    return found


def _single_local_value(model: FileModel, name: str, fn: FunctionNode) -> Optional[ast.expr]:
    """The value of `name` when `fn` assigns it exactly once as `name = value`."""
    scope = model.index.scopes.get(fn)
    if scope is None or name in scope.globals_ or name in scope.nonlocals:
        return None
    bindings = scope.bindings.get(name, [])
    if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].node, ast.Assign):
        return bindings[0].value
    return None


def sequence_length(model: FileModel, expr: ast.expr, fn: FunctionNode,
                    depth: int = 0) -> Optional[Tuple[int, bool, ast.expr]]:
    """(length, exact, literal) for a tuple/list literal, or a name assigned once to a tuple
    literal; `exact` is False with starred elements (length is then a lower bound)."""
    if depth > 3:
        return None
    if isinstance(expr, (ast.Tuple, ast.List)):
        fixed = sum(not isinstance(e, ast.Starred) for e in expr.elts)
        extra = 0
        exact = True
        for element in expr.elts:
            if isinstance(element, ast.Starred):
                inner = sequence_length(model, element.value, fn, depth + 1) \
                    if isinstance(element.value, (ast.Name, ast.Tuple, ast.List)) else None
                if inner is None or not inner[1]:
                    exact = False
                    extra += inner[0] if inner else 0
                else:
                    extra += inner[0]
        return fixed + extra, exact, expr
    if isinstance(expr, ast.Name):
        value = _single_local_value(model, expr.id, fn)
        if isinstance(value, ast.Tuple):
            return sequence_length(model, value, fn, depth + 1)
    return None


# jnp/lax/nn functions that return one array (never a tuple or list).
ARRAY_FUNCTIONS = frozenset("""
abs absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh around array asarray bitwise_and
bitwise_not bitwise_or bitwise_xor broadcast_to cbrt ceil clip concatenate conj conjugate copysign cos cosh
cumprod cumsum deg2rad diag diagonal divide dot einsum equal exp exp2 expand_dims expm1 eye flip floor
floor_divide fmax fmin full full_like greater greater_equal heaviside hypot imag inner isfinite isinf isnan
kron ldexp less less_equal linspace log log10 log1p log2 logaddexp logical_and logical_not logical_or
logical_xor matmul max maximum mean min minimum mod moveaxis multiply nan_to_num negative nextafter
not_equal ones ones_like outer power prod rad2deg real reciprocal remainder repeat reshape rint round sign
signbit sin sinc sinh sqrt square squeeze stack std subtract sum swapaxes take take_along_axis tan tanh
tensordot tile trace transpose tril triu true_divide var vdot zeros zeros_like relu sigmoid softplus
log_sigmoid softmax log_softmax gelu silu swish elu selu celu leaky_relu logsumexp one_hot rsqrt mul sub
div neg pow integer_pow dot_general convert_element_type broadcast_in_dim erf erfc erf_inv lgamma digamma
""".split())
ARRAY_METHODS = frozenset({"astype", "reshape", "sum", "mean", "transpose", "dot", "conj", "ravel", "flatten",
                           "squeeze", "prod", "max", "min", "clip", "cumsum", "std", "var", "swapaxes"})
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.special.")
ARITHMETIC = "an arithmetic result, never a tuple"


def not_a_sequence(model: FileModel, expr: Optional[ast.expr], fn: FunctionNode,
                   arrays: Set[str] = frozenset(), depth: int = 0) -> Optional[str]:  # type: ignore[assignment]
    """Why `expr` can never evaluate to a tuple or list ('None', 'an array'); None when it may."""
    if depth > 4:
        return None
    if expr is None or isinstance(expr, ast.Constant) and expr.value is None:
        return "None"
    if isinstance(expr, ast.Constant):
        return "a constant"
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return "a dict"
    if isinstance(expr, (ast.Set, ast.SetComp)):
        return "a set"
    if isinstance(expr, ast.GeneratorExp):
        return "a generator"
    if isinstance(expr, (ast.Compare, ast.JoinedStr)) or isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return "a bool" if not isinstance(expr, ast.JoinedStr) else "a string"
    if isinstance(expr, ast.UnaryOp):  # -t, +t, ~t raise for a tuple or list
        inner = not_a_sequence(model, expr.operand, fn, arrays, depth + 1)
        return "an array" if inner == "an array" else ARITHMETIC
    if isinstance(expr, ast.IfExp):
        a = not_a_sequence(model, expr.body, fn, arrays, depth + 1)
        b = not_a_sequence(model, expr.orelse, fn, arrays, depth + 1)
        return a if a is not None and a == b else ("a value that is not a tuple" if a and b else None)
    if isinstance(expr, ast.BinOp):
        sides = [not_a_sequence(model, s, fn, arrays, depth + 1) for s in (expr.left, expr.right)]
        if "an array" in sides:
            return "an array"  # arithmetic with an array gives an array (or raises)
        if not isinstance(expr.op, (ast.Add, ast.Mult)):
            return ARITHMETIC  # tuples and lists support no other operator
        numbers = (int, float, complex) if isinstance(expr.op, ast.Add) else (float, complex)
        if any(isinstance(side, ast.Constant) and isinstance(side.value, numbers) and not isinstance(side.value, bool)
               for side in (expr.left, expr.right)):
            return ARITHMETIC  # `t + 1` and `2.0 * t` raise for a tuple; `2 * t` would repeat it
        return None
    if isinstance(expr, ast.Call):
        func = expr.func
        q = model.index.qualname(func) or ""
        if q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in ARRAY_FUNCTIONS:
            if not any(k.arg == "return_sign" for k in expr.keywords):  # logsumexp(..., return_sign=True)
                return "an array"
            return None
        if isinstance(func, ast.Attribute) and func.attr in ARRAY_METHODS and not q.startswith(("jax.", "numpy.")):
            base = not_a_sequence(model, func.value, fn, arrays, depth + 1)
            return "an array" if base == "an array" or func.attr in ("astype", "reshape") else None
        return None
    if isinstance(expr, ast.Attribute) and expr.attr in ARRAY_ATTRIBUTES:
        return "an array" if not_a_sequence(model, expr.value, fn, arrays, depth + 1) == "an array" else None
    if isinstance(expr, ast.Name):
        if expr.id in arrays:
            return "an array"
        value = _single_local_value(model, expr.id, fn)
        if value is not None:
            inner = not_a_sequence(model, value, fn, arrays, depth + 1)
            return inner if inner == "an array" else None
    return None


def primal_returns_array(model: FileModel, d: CustomDerivative) -> bool:
    """True when every return of the primal is provably one array (so the cotangent is one too)."""
    if d.primal is None:
        return False
    returns = returns_of(d.primal)
    return bool(returns) and all(not_a_sequence(model, value, d.primal) == "an array" for _, value in returns)


# -- positions and source text ---------------------------------------------------------------
def name_anchor(model: FileModel, fn: FunctionNode) -> ast.AST:
    """A node spanning a def's name (the lambda itself for lambdas), for reporting."""
    if isinstance(fn, ast.Lambda) or not (0 < fn.lineno <= len(model.lines)):
        return fn
    line = model.lines[fn.lineno - 1].encode("utf-8")
    keyword = line.find(b"def", fn.col_offset)
    start = line.find(fn.name.encode("utf-8"), keyword + 3) if keyword >= 0 else -1
    if start < 0:
        return fn
    anchor = ast.Name(id=fn.name, ctx=ast.Load())
    anchor.lineno = anchor.end_lineno = fn.lineno
    anchor.col_offset, anchor.end_col_offset = start, start + len(fn.name.encode("utf-8"))
    return anchor


def _offset(model: FileModel, row: int, byte_col: int) -> Tuple[int, int]:
    line = model.lines[row - 1]
    return row, len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def source_text(model: FileModel, first: ast.AST, last: Optional[ast.AST] = None) -> str:
    """The source from the start of `first` to the end of `last` (default: `first`)."""
    last = last or first
    r0, c0 = _offset(model, first.lineno, first.col_offset)  # type: ignore[attr-defined]
    r1, c1 = _offset(model, last.end_lineno, last.end_col_offset)  # type: ignore[attr-defined]
    if r0 == r1:
        return model.lines[r0 - 1][c0:c1]
    parts = [model.lines[r0 - 1][c0:], *model.lines[r0:r1 - 1], model.lines[r1 - 1][:c1]]
    return "\n".join(parts)


def text_between(model: FileModel, left: ast.AST, right: ast.AST) -> str:
    """The source from the end of `left` to the start of `right`."""
    r0, c0 = _offset(model, left.end_lineno, left.end_col_offset)  # type: ignore[attr-defined]
    r1, c1 = _offset(model, right.lineno, right.col_offset)  # type: ignore[attr-defined]
    if r0 == r1:
        return model.lines[r0 - 1][c0:c1]
    return "\n".join([model.lines[r0 - 1][c0:], *model.lines[r0:r1 - 1], model.lines[r1 - 1][:c1]])


def is_transform_argument(model: FileModel, node: ast.AST) -> bool:
    """True when `node` is the function argument of jax.grad/jit/vmap/... (so it gets called)."""
    parent = model.index.parent(node)
    if not isinstance(parent, ast.Call):
        return False
    q = model.index.qualname(parent.func)
    return q in TRANSFORMS and TRANSFORMS[q] < len(parent.args) and parent.args[TRANSFORMS[q]] is node


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


def is_placeholder(fn: Optional[FunctionNode]) -> bool:
    """A stub that is never meant to run: `...`, `pass`, `raise ...` or `assert False` (after a
    docstring). Tests register such rules when only the primal is exercised."""
    if fn is None:
        return False
    if isinstance(fn, ast.Lambda):
        return isinstance(fn.body, ast.Constant) and fn.body.value is Ellipsis
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, (ast.Pass, ast.Raise)):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return True
    return isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant) and not stmt.test.value
