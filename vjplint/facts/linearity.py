"""How each expression of a jvp rule depends on its tangents (zero, constant, linear,
nonlinear, unknown), with where and why linearity is lost. Read by the rules on jvp rules
(VJP601's nonlinear tangents, VJP607's unsafe selections)."""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, AbstractSet, Dict, List, Optional, Sequence, Set

from vjplint.facts.loops import (WHILE_LOOP, ImportedLoops, imported_route, module_function,
                                 while_loop_route)
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query

if TYPE_CHECKING:
    from vjplint.model.file_model import FileModel

# Functions linear in their first argument (the others must not carry tangents).
LINEAR_FIRST = frozenset({
    "sum", "mean", "reshape", "transpose", "swapaxes", "moveaxis", "squeeze", "expand_dims", "ravel",
    "cumsum", "flip", "roll", "real", "imag", "conj", "conjugate", "negative", "broadcast_to", "tile",
    "repeat", "take", "trace", "diag", "diagonal", "tril", "triu", "atleast_1d", "atleast_2d", "asarray",
    "array", "reduce_sum", "convert_element_type", "pad",
})
# Bilinear: the product of their two arguments.
PRODUCTS = frozenset({"multiply", "dot", "matmul", "vdot", "inner", "outer", "tensordot", "kron", "mul"})
# Bilinear in their first two arguments, the others static (dimension numbers, precision).
CONTRACTIONS = frozenset({"dot_general", "batch_matmul"})
SUMS = frozenset({"add", "subtract", "sub"})
# Nonlinear: a tangent inside any of these is not transposable (measured for abs, sin, maximum,
# nan_to_num, integer_pow: hazard_nonlinear_jvp.py).
NONLINEAR = frozenset({
    "abs", "absolute", "sign", "sqrt", "cbrt", "rsqrt", "exp", "exp2", "log", "log1p", "log2", "log10", "expm1",
    "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh",
    "arctanh", "square", "power", "pow", "integer_pow", "maximum", "minimum", "max", "min", "amax", "amin", "clip",
    "nan_to_num", "round", "floor", "ceil", "logaddexp", "reciprocal", "prod", "relu", "sigmoid", "softplus",
    "gelu", "silu", "elu", "softmax", "log_softmax", "logsumexp", "norm", "erf", "erfc", "heaviside", "fmax", "fmin",
})
METHODS_LINEAR = frozenset({"astype", "reshape", "sum", "mean", "transpose", "squeeze", "ravel", "conj", "flatten",
                            "swapaxes", "cumsum"})
ZEROS = frozenset({"zeros_like", "zeros"})
SELECTS = frozenset({"where", "select"})  # (condition, on true, on false)
STOP_GRADIENT = ("jax.lax.stop_gradient", "jax._src.lax.lax.stop_gradient")
# Host callbacks: JAX cannot transpose them (measured, docs/facts/scripts/jvp_tangent_callback.py).
CALLBACKS = ("jax.pure_callback", "jax.experimental.io_callback", "jax.experimental.pure_callback")
NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.special.")


@dataclass
class Form:
    """What an expression is as a function of the input tangents."""

    kind: str  # "zero", "const" (no tangent), "linear", "nonlinear", "unknown"
    node: Optional[ast.AST] = None  # nonlinear: where linearity is lost
    why: str = ""  # nonlinear: how
    affine: bool = False  # nonlinear only because a tangent-free term is added
    transpose: bool = False  # linear maybe, but through a custom_vjp, which JAX cannot transpose
    loop: bool = False  # linear maybe, but through a lax.while_loop, which JAX cannot transpose
    stop: bool = False  # the value is right, but stop_gradient has no transpose rule
    select: bool = False  # a where/select whose condition is computed from a tangent
    callback: bool = False  # linear maybe, but through a host callback, which JAX cannot transpose


ZERO, CONST, LINEAR, UNKNOWN = Form("zero"), Form("const"), Form("linear"), Form("unknown")
_PART = ast.Constant(None)  # a name unpacked from a tangent-free value
# Statements whose body may not run; `match` exists from Python 3.10 (vjplint runs on 3.9 too).
_BRANCHES = tuple(getattr(ast, n) for n in ("If", "For", "AsyncFor", "While", "Match") if hasattr(ast, n))


class Linearity:
    """Classifies expressions of one jvp rule by how they depend on its tangents."""

    def __init__(self, model: "FileModel", fn: FunctionNode, tangents_param: str, given: AbstractSet[str] = frozenset(),
                 active: AbstractSet[ast.AST] = frozenset()) -> None:
        self.model, self.fn, self.param = model, fn, tangents_param
        self.index = model.index
        self.tangents: Set[str] = set(given)  # a helper's parameters that receive tangent terms
        self.active = {*active, fn}  # the functions being analysed: no recursion
        self.values: Dict[str, List[Optional[ast.expr]]] = {}
        self.parts: Dict[str, ast.expr] = {}  # a name unpacked from a call: `_, dt = while_loop(...)`
        self._seen: Set[str] = set()
        nodes = sorted(model.facts.own_nodes(fn), key=_source_order)
        for node in nodes:  # in source order: the unpacking of `tangents` comes before its uses
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
                for target in walk(getattr(node, "target", node)):
                    if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                        self.values.setdefault(target.id, []).append(None)  # not followed

    def _bind(self, target: ast.expr, value: Optional[ast.expr]) -> None:
        """Record `target = value`; names unpacked from the tangents parameter are tangents."""
        if isinstance(target, ast.Name):
            if value is not None and self._is_param(value):
                self.values.setdefault(target.id, []).append(None)  # the tangents tuple itself
            elif value is not None and self._is_param_item(value):
                self.tangents.add(target.id)
            else:
                self.values.setdefault(target.id, []).append(value)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if value is not None and self._is_param(value):
                for element in target.elts:
                    for name in walk(element):
                        if isinstance(name, ast.Name):
                            self.tangents.add(name.id)
                return
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for element, part in zip(target.elts, value.elts):
                    self._bind(element, part)
                return
            for name in walk(target):
                if isinstance(name, ast.Name) and isinstance(value, ast.Call):
                    self.parts[name.id] = value
                if isinstance(name, ast.Name):  # a part of `value`: tangent-free when all of it is
                    self.values.setdefault(name.id, []).append(
                        _PART if value is not None and self._tangent_free(value, 0) else None)

    def _is_param(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Name) and expr.id == self.param

    def _is_param_item(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Subscript) and self._is_param(expr.value)

    # -- the classification -------------------------------------------------------------------
    def form(self, expr: Optional[ast.expr], depth: int = 0) -> Form:
        if expr is None or depth > 12:
            return UNKNOWN
        if isinstance(expr, ast.Constant):
            return ZERO if expr.value == 0 and not isinstance(expr.value, bool) else CONST
        if isinstance(expr, ast.Name):
            return self._name(expr.id, depth)
        if isinstance(expr, ast.Subscript):
            if self._is_param_item(expr):
                return LINEAR
            return self.form(expr.value, depth + 1) if self._tangent_free(expr.slice, depth) else UNKNOWN
        if isinstance(expr, ast.Attribute):
            if expr.attr in ("shape", "dtype", "ndim", "size"):
                return CONST
            inner = self.form(expr.value, depth + 1)
            return inner if expr.attr in ("T", "real", "imag", "mT") or inner.kind in ("const", "zero") else UNKNOWN
        if isinstance(expr, ast.UnaryOp):
            inner = self.form(expr.operand, depth + 1)
            return inner if isinstance(expr.op, (ast.USub, ast.UAdd)) else (inner if inner.kind == "const" else UNKNOWN)
        if isinstance(expr, ast.BinOp):
            return self._binop(expr, depth)
        if isinstance(expr, ast.IfExp):
            if not self._tangent_free(expr.test, depth):
                return UNKNOWN
            return _sum(self.form(expr.body, depth + 1), self.form(expr.orelse, depth + 1), expr, expr.orelse, self)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Dict)) and self._tangent_free(expr, depth):
            return CONST  # a container without tangents (a call's `(x,)` argument)
        if isinstance(expr, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in expr.elts):
            return _leaves([self.form(e, depth + 1) for e in expr.elts])  # a pytree of tangents: leaf by leaf
        if isinstance(expr, ast.Dict) and all(k is not None and self._tangent_free(k, depth) for k in expr.keys):
            return _leaves([self.form(v, depth + 1) for v in expr.values])
        if isinstance(expr, ast.Call):
            if self._is_record(expr.func) and not expr.keywords and not self._tangent_free(expr, depth):
                return _leaves([self.form(a, depth + 1) for a in expr.args])  # `Out(t1, t2)` of a NamedTuple class
            return self._call(expr, depth)
        return CONST if self._tangent_free(expr, depth) else UNKNOWN

    def _is_record(self, func: ast.expr) -> bool:
        """A class of this module deriving from NamedTuple: its instance is a pytree of its fields."""
        if not isinstance(func, ast.Name):
            return False
        found = self.index.lookup(func.id, self.index.scope_of(func))
        return len(found) == 1 and found[0].kind == "class" and any(
            (self.index.qualname(b) or "").endswith("NamedTuple") for b in found[0].node.bases)  # type: ignore[attr-defined]

    def _name(self, name: str, depth: int) -> Form:
        if name in self.tangents:
            return LINEAR
        if name == self.param:
            return UNKNOWN
        values = self.values.get(name)
        if not values:
            return CONST  # a primal, a parameter, a closed-over or module value
        if all(v is _PART for v in values):
            return CONST
        if values == [None] and name in self.parts and name not in self._seen:
            self._seen.add(name)
            try:  # a part of a loop's result carries the loop's form; of any other call, nothing known
                whole = self.form(self.parts[name], depth + 1)
            finally:
                self._seen.discard(name)
            if whole.loop or whole.stop:
                return whole
        if len(values) != 1 or values[0] is None or name in self._seen:
            return CONST if all(v is not None and self._tangent_free(v, depth) for v in values) else UNKNOWN
        self._seen.add(name)
        try:
            return self.form(values[0], depth + 1)
        finally:
            self._seen.discard(name)

    def _tangent_free(self, expr: ast.AST, depth: int) -> bool:
        for node in walk(expr):
            if isinstance(node, ast.Name) and (node.id in self.tangents or node.id == self.param):
                return False
            if isinstance(node, ast.Name) and node.id in self.values and node.id not in self._seen and depth < 12:
                vals = [v for v in self.values[node.id] if v is not _PART]
                self._seen.add(node.id)
                try:
                    if any(v is None or not self._tangent_free(v, depth + 1) for v in vals):
                        return False
                finally:
                    self._seen.discard(node.id)
        return True

    def _binop(self, expr: ast.BinOp, depth: int) -> Form:
        left, right = self.form(expr.left, depth + 1), self.form(expr.right, depth + 1)
        op = expr.op
        if isinstance(op, (ast.Add, ast.Sub)):
            return _sum(left, right, expr, expr.right if right.kind == "const" else expr.left, self)
        if isinstance(op, (ast.Mult, ast.MatMult)):
            return _product(left, right, expr)
        if isinstance(op, ast.Div):
            if right.kind in ("linear", "nonlinear"):
                return Form("nonlinear", expr, "divides by a tangent term")
            return left if right.kind == "const" else UNKNOWN
        if isinstance(op, ast.Pow):
            if left.kind == "linear" and isinstance(expr.right, ast.Constant) and expr.right.value == 1:
                return LINEAR
            if left.kind == "linear" or right.kind == "linear":
                return Form("nonlinear", expr, "raises a tangent term to a power")
            return _carry(left, right)
        if left.kind == "linear" or right.kind == "linear":
            return Form("nonlinear", expr, f"applies `{type(op).__name__}` to a tangent term")
        return _carry(left, right)

    def _call(self, call: ast.Call, depth: int) -> Form:
        q = self.index.qualname(call.func) or ""
        tail = q.rsplit(".", 1)[-1]
        known = q.startswith(NAMESPACES)
        args = [a for a in call.args if not isinstance(a, ast.Starred)]
        if len(args) != len(call.args):
            return UNKNOWN
        if known and tail in ZEROS:
            return ZERO
        if known and tail in ("ones_like", "empty_like") and len(args) == 1:
            return CONST  # only the shape and dtype of a tangent: no tangent in it
        if known and tail in SELECTS and len(args) == 3 and not self._tangent_free(args[0], depth):
            return Form("nonlinear", call, f"selects on `{self.model.quote(args[0], 30)}`, a condition computed from a "
                                           f"tangent term", select=True)
        if q in CALLBACKS and not all(self._tangent_free(a, depth) for a in [*args[2:], *(k.value for k in call.keywords)]):
            return Form("nonlinear", call, f"passes a tangent term to `{self.model.quote(call.func, 30)}`, a host "
                                           f"callback", callback=True)
        if q in STOP_GRADIENT and args and not self._tangent_free(args[0], depth):
            return Form("nonlinear", call, f"applies `{self.model.quote(call.func, 30)}` to a tangent term", stop=True)
        if isinstance(call.func, ast.Attribute) and not known:
            if call.func.attr in METHODS_LINEAR and all(self._tangent_free(a, depth) for a in args):
                return self.form(call.func.value, depth + 1)
            return CONST if self._tangent_free(call, depth) else UNKNOWN
        forms = [self.form(a, depth + 1) for a in args]
        keywords_free = all(self._tangent_free(k.value, depth) for k in call.keywords)
        callee = self.model.facts.derivative_named(call.func)
        if callee is not None and callee.kind == "vjp" and any(f.kind in ("linear", "nonlinear") for f in forms):
            return Form("nonlinear", call, f"applies custom_vjp `{callee.name}` to a tangent term", transpose=True)
        if callee is None and (q == WHILE_LOOP or not known):
            loop = self._while_loop(call, q, args, depth)
            if loop is not None:
                return loop
        if not known and (callee is None or callee.kind == "jvp"):
            inner = self._through_function(call, args, forms, depth)
            if inner is not None:
                return inner
        if not known:
            return CONST if all(f.kind in ("const", "zero") for f in forms) and keywords_free else UNKNOWN
        if tail in NONLINEAR:
            for arg, form in zip(args, forms):
                if form.kind == "linear":
                    return Form("nonlinear", call, f"applies `{self.model.quote(call.func, 30)}` to a tangent term")
            return _carry(*forms) if forms else CONST
        if tail in PRODUCTS and len(forms) == 2 and keywords_free:
            return _product(forms[0], forms[1], call)
        if tail in CONTRACTIONS and len(forms) >= 2 and keywords_free and \
                all(f.kind in ("const", "zero") for f in forms[2:]):
            return _product(forms[0], forms[1], call)
        if tail in SUMS and len(forms) == 2 and keywords_free:
            return _sum(forms[0], forms[1], call, args[1] if forms[1].kind == "const" else args[0], self)
        if tail in SELECTS and len(forms) == 3 and self._tangent_free(args[0], depth):
            return _sum(forms[1], forms[2], call, args[2] if forms[2].kind == "const" else args[1], self)
        if tail in LINEAR_FIRST and forms and all(f.kind in ("const", "zero") for f in forms[1:]) and keywords_free:
            return forms[0]
        return CONST if all(f.kind in ("const", "zero") for f in forms) and keywords_free else UNKNOWN


    def nonlinear_within(self, expr: Optional[ast.expr], seen: Optional[Set[str]] = None) -> Optional[Form]:
        """A term that `expr` is computed from (through any operation, a helper or a name the rule
        binds, once or several times) whose form is nonlinear in the tangents: a product of two
        tangent terms, a tangent in a nonlinear function or raised to a power; None when there is
        none. Read where `form(expr)` is unknown: a value computed from a nonlinear term stays
        nonlinear unless it discards it (a shape read, `zeros_like`, a type test are not followed)."""
        seen = set() if seen is None else seen
        todo = [expr] if expr is not None else []
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "size"):
                continue
            if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.Compare)):
                continue
            if isinstance(node, ast.Call):
                tail = (self.index.qualname(node.func) or "").rsplit(".", 1)[-1]
                if tail in ZEROS or tail in ("zeros_like", "ones_like", "isinstance", "type", "len", "shape"):
                    continue
            if isinstance(node, (ast.BinOp, ast.Call)):
                form = self.form(node)
                if form.kind == "nonlinear" and form.node is not None and not (
                        form.affine or form.select or form.stop or form.loop or form.callback or form.transpose):
                    return form
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in seen:
                seen.add(node.id)
                todo += [v for v in self.values.get(node.id, [])
                         if v is not None and v is not _PART and not self._conditional(v)]
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        return None

    def _conditional(self, value: ast.expr) -> bool:
        """The binding of `value` sits in a branch or loop of the rule: it may not run."""
        node = self.index.parent(value)
        while node is not None and node is not self.fn:
            if isinstance(node, _BRANCHES):
                return True
            node = self.index.parent(node)
        return False

    def _through_function(self, call: ast.Call, args: List[ast.expr], forms: List[Form],
                          depth: int = 0) -> Optional[Form]:
        """A tangent term passed to a function of this module (a custom_jvp's primal included: a jvp
        rule's call of it on tangents is inlined and transposed) whose returned value is then not
        linear in it; None when it is, or when that is not known. A keyword argument counts as
        the parameter it names (`f(dtype=d, x=t * t)`)."""
        target = module_function(self.index, call.func)
        if target is None:  # `f = jax.custom_jvp(f, ...)` rebinds the def's name: its primal
            callee = self.model.facts.derivative_named(call.func)
            target = callee.primal if callee is not None and isinstance(callee.primal, ast.FunctionDef) else None
        if target is None or target in self.active or len(self.active) > 3 or target.args.vararg is not None:
            return None
        params = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
        named = {a.arg for a in target.args.args} | {a.arg for a in target.args.kwonlyargs}
        if len(args) > len(params) or any(k.arg is None or k.arg not in named for k in call.keywords):
            return None
        keyword_forms = {k.arg: self.form(k.value, depth + 1) for k in call.keywords if not self._tangent_free(k.value, depth)}
        if any(f.kind == "unknown" for f in [*forms, *keyword_forms.values()]):
            return None
        given = {p for p, f in zip(params, forms) if f.kind in ("linear", "nonlinear")}
        given |= {p for p, f in keyword_forms.items() if f.kind in ("linear", "nonlinear")}
        forms = [*forms, *keyword_forms.values()]
        if not given:
            return None
        inner = Linearity(self.model, target, "", given, self.active)
        returned = []
        for ret in self.model.facts.returns_of(target):
            form = inner.form(ret.value)
            returned.append(form.kind)
            if form.kind == "nonlinear" and form.node is not None:
                via = (f"passes a tangent term to `{target.name}` (line {target.lineno}), where "
                       f"`{self.model.quote(form.node, 40)}` {form.why}")
                return replace(form, node=call, why=via)
        # A function linear in what it receives passes a nonlinear argument on: `helper(t * t)`.
        passed = next((f for f in forms if f.kind == "nonlinear" and f.node is not None and not (
            f.transpose or f.loop or f.stop or f.select or f.callback)), None)
        if passed is not None and returned and all(k == "linear" for k in returned):
            return passed
        return None

    def _while_loop(self, call: ast.Call, q: str, args: List[ast.expr], depth: int) -> Optional[Form]:
        """A tangent term passed into `lax.while_loop`, or to a helper of this module or of another
        module of the run that feeds it into one (its loop functions closing over it count)."""
        carried = [not self._tangent_free(a, depth) for a in args]
        keywords = {k.arg for k in call.keywords if k.arg is not None and not self._tangent_free(k.value, depth)}
        if not any(carried) and not keywords:
            return None
        if q == WHILE_LOOP:
            return Form("nonlinear", call, "passes a tangent term into `jax.lax.while_loop`", loop=True)
        target = module_function(self.index, call.func)
        imported = self._imported_loops()
        if target is None:  # a function of another module of the run, when its summary says so
            found = imported_route(imported, q, call, lambda a: not self._tangent_free(a, depth))
            if found is None:
                return None
            via = " then ".join(found.chain)
        else:
            positional = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
            hit = {p for p, c in zip(positional, carried) if c} | keywords
            found = while_loop_route(self.index, target, hit, self.model.quote, imported=imported)
            if found is None:
                return None
            via = " then ".join([f"`{target.name}` (line {target.lineno})", *found.chain])
        return Form("nonlinear", call, f"passes a tangent term to {via}, which feeds it into "
                                       f"`{found.loop}` ({found.where})", loop=True)

    def _imported_loops(self) -> Optional[ImportedLoops]:
        external = self.model.facts.external
        return external.loops.get if external is not None and external.loops else None


def _source_order(node: ast.AST) -> tuple:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _leaves(forms: List[Form]) -> Form:
    """A container's form from its leaves': the first nonlinear leaf; linear when every leaf is
    linear or zero; else unknown (a constant leaf beside linear ones is not judged here)."""
    for f in forms:
        if f.kind == "nonlinear":
            return f
    if forms and all(f.kind == "zero" for f in forms):
        return ZERO
    if forms and all(f.kind in ("linear", "zero") for f in forms):
        return LINEAR
    return UNKNOWN


def _carry(*forms: Form) -> Form:
    """Combine forms where no linearity is created or lost."""
    for f in forms:
        if f.kind == "nonlinear":
            return f
    if any(f.kind in ("unknown", "linear") for f in forms):
        return UNKNOWN
    return CONST


def _sum(left: Form, right: Form, node: ast.AST, const_part: ast.AST, checker: Linearity) -> Form:
    for f in (left, right):
        if f.kind == "nonlinear":
            return f
    if "unknown" in (left.kind, right.kind):
        return UNKNOWN
    if left.kind == "zero":
        return right
    if right.kind == "zero":
        return left
    if left.kind == right.kind:
        return left
    # one linear, one tangent-free and not a literal zero
    added = checker.model.quote(const_part, 30)
    return Form("nonlinear", node, f"adds `{added}`, which does not depend on the tangents", affine=True)


def _product(left: Form, right: Form, node: ast.AST) -> Form:
    if "zero" in (left.kind, right.kind):
        return ZERO
    kinds: Sequence[str] = (left.kind, right.kind)
    if kinds == ("linear", "linear"):
        return Form("nonlinear", node, "multiplies two tangent terms")
    for f in (left, right):
        if f.kind == "nonlinear":
            return f
    if "unknown" in kinds:
        return UNKNOWN
    if "linear" in kinds:
        return LINEAR
    return CONST


@query(memo=False)
def linearity(model: "FileModel", fn: FunctionNode, tangents_param: str, given: AbstractSet[str] = frozenset(),
              active: AbstractSet[ast.AST] = frozenset()) -> Linearity:
    """How each expression of the jvp rule `fn` depends on its tangents (`tangents_param`; a helper's
    parameters `given` that receive tangent terms; the functions `active` being analysed): a fresh analysis."""
    return Linearity(model, fn, tangents_param, given, active)
