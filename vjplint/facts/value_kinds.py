"""Value kinds: a small abstract interpretation of one module, computed lazily per scope.

Every expression evaluates to a `Kind` (array with a dtype class, Python scalar, string, shape,
dtype, callable with what it captures, container of kinds, module/self, None, unknown). Names
follow their bindings (assignments, tuple unpacking, parameters: annotations, defaults, traced
transformations, the roles of custom_vjp/custom_jvp rules, call sites in the module), calls of
module functions return what their returns evaluate to, attributes of `self` what the class
assigns. The join is precision first: unknown absorbs, disagreeing evidence is "maybe".
Each kind keeps `why`, a quotable chain of where it came from, and `traced`, why it is a tracer
where that is known. Read it through `model.facts.values()`; linting never imports JAX.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Set, Tuple

from vjplint.facts.crossmodule import external_calls
from vjplint.model.jaxapi import ARRAY_METHODS, ARRAY_NAMESPACES, ARRAY_VALUED_ATTRIBUTES, EQX_CLOSURE_CONVERT, NNX_VARIABLES, PARTIAL, TRANSFORMS
from vjplint.model.file_model import CustomDerivative, FileModel, Signature
from vjplint.model.semantic import FUNCTION_TYPES, Binding, FunctionNode, Scope, walk
from vjplint.facts.kinds import (ARRAY, CALLABLE, DICT, DTYPE, INT_RANDOM, KEY_FUNCTIONS, LIST, MODULE, MUTATORS,
                                 NUMPY_SCALAR_TYPES, RECORD, SCALAR, SCALAR_BUILTINS, SHAPE, STATIC_ATTRS, STRING,
                                 TUPLE, UNKNOWN, UNKNOWN_KIND, classify_annotation, constant_kind, element_kind,
                                 external_kind, join, join_all, Kind, number_literal, unpack_path)


class Values:
    """The kinds of one module's expressions, computed on demand and kept."""

    MAX_DEPTH = 12

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._exprs: Dict[ast.AST, Kind] = {}
        self._names: Dict[Tuple[ast.AST, str], Kind] = {}
        self._active: Set[Tuple[str, ast.AST, str]] = set()
        self._roles: Optional[Dict[ast.AST, Tuple[CustomDerivative, str]]] = None
        self._callers: Optional[Dict[ast.AST, List[ast.Call]]] = None
        self._class_attrs: Dict[ast.AST, Dict[str, List[Optional[ast.stmt]]]] = {}
        self._mutations: Dict[ast.AST, Set[str]] = {}
        self._depth = 0
        # `__init__` evaluated for one construction: its parameters bound to that call's arguments.
        self._frames: List[Tuple[FunctionNode, Dict[str, Kind]]] = []
        # In a run over several modules: what a function imported under a local name returns,
        # as (tag, dtype, why) from vjplint.project.summary.module_binding ("call:new-array",
        # "call:array", "call:static"), or None.
        self.imported: Optional[Callable[[str], Optional[Tuple[str, str, str]]]] = None

    # -- entry points -----------------------------------------------------------------------
    def of(self, expr: ast.expr) -> Kind:
        """The kind of `expr` where it stands."""
        hit = self._exprs.get(expr)
        if hit is not None:
            return hit
        if self._depth > self.MAX_DEPTH:
            return UNKNOWN_KIND
        self._depth += 1
        try:
            kind = self._eval(expr)
        finally:
            self._depth -= 1
        self._exprs[expr] = kind
        return kind

    def name(self, name: str, scope: Scope) -> Kind:
        """The kind `name` has when read in `scope` (the join of the bindings it resolves to)."""
        found = self.model.index.resolve(name, scope)
        if found is None:
            return UNKNOWN_KIND
        owner, bindings = found
        key = (owner.node, name)
        if key in self._names:
            return self._names[key]
        guard = ("name", owner.node, name)
        if guard in self._active:
            return UNKNOWN_KIND
        self._active.add(guard)
        try:
            kind = join_all([self._binding(name, b, owner) for b in bindings])
        finally:
            self._active.discard(guard)
        self._names[key] = kind
        return kind

    def returns(self, fn: FunctionNode) -> Kind:
        """What calling `fn` gives: the join of its returns."""
        guard = ("ret", fn, "")
        if guard in self._active:
            return UNKNOWN_KIND
        self._active.add(guard)
        try:
            values = [value for _, value in self.model.facts.returns_of(fn)]
            if not values or any(v is None for v in values):
                return UNKNOWN_KIND
            return join_all([self.of(v) for v in values])  # type: ignore[arg-type]
        finally:
            self._active.discard(guard)

    # -- bindings ---------------------------------------------------------------------------
    def _binding(self, name: str, b: Binding, owner: Scope) -> Kind:
        m = self.model
        if b.kind == "import":
            return Kind(MODULE, why=f"`{name}` is imported")
        if b.kind in ("def", "class"):
            node = b.node
            if b.kind == "def":
                return Kind(CALLABLE, why=f"`{name}` is the function defined at line {node.lineno}",  # type: ignore
                            captures=self.captures(node), node=node)  # type: ignore[arg-type]
            return Kind(CALLABLE, why=f"`{name}` is a class", node=node)
        if b.kind == "param":
            return self.param(owner.node, name)  # type: ignore[arg-type]
        if b.kind != "assign":
            return UNKNOWN_KIND
        stmt = b.node
        if isinstance(stmt, ast.AugAssign):
            kind = self.of(stmt.value)  # `x += array` leaves an array, whatever x was
            return Kind(ARRAY, why=f"`{m.quote(stmt, 50)}` at line {stmt.lineno}") if kind.tag == ARRAY \
                else UNKNOWN_KIND
        if b.value is not None:
            kind = self.of(b.value)
            if kind.tag in (LIST, DICT) and self._mutated(name, owner):
                return Kind(kind.tag, why=f"`{name}`, a {kind.tag} changed in place after line {stmt.lineno}")
            if (kind.tag == UNKNOWN and kind.origin is None) or (
                    isinstance(b.value, ast.Name) and not kind.traced and not kind.from_param()):
                return kind
            return kind.via(f"`{name}` = `{m.quote(b.value, 50)}` at line {stmt.lineno}")
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            path = unpack_path(stmt.targets[0], name)
            if path is not None:
                kind = self.of(stmt.value)
                for index in path:
                    kind = element_kind(kind, index)
                if kind.tag != UNKNOWN or kind.origin is not None:
                    return kind.via(f"`{name}` is unpacked from `{m.quote(stmt.value, 50)}` at line {stmt.lineno}")
                return kind
        return UNKNOWN_KIND

    def _mutated(self, name: str, owner: Scope) -> bool:
        """Whether code in `owner` (nested functions included) changes the list or dict `name` in
        place: `name.append(...)`, `name[k] = v`, `name += ...`, `del name[k]`: its length and
        fields are then unknown. One walk per scope."""
        found = self._mutations.get(owner.node)
        if found is None:
            found = self._mutations[owner.node] = set()
            for node in walk(owner.node):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name) and node.func.attr in MUTATORS:
                    found.add(node.func.value.id)
                targets: List[ast.expr] = []
                if isinstance(node, (ast.Assign, ast.Delete)):
                    targets = list(node.targets)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    targets = [node.target]
                for t in targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        found.add(t.value.id)
                    elif isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
                        found.add(t.id)
        return name in found

    def param(self, fn: FunctionNode, name: str) -> Kind:
        """A parameter's kind from its annotation, default, the transformation tracing `fn`, or
        the role `fn` plays for a custom derivative of the module."""
        m = self.model
        if self._frames and self._frames[-1][0] is fn and name in self._frames[-1][1]:
            return self._frames[-1][1][name]
        sig = self.model.signature(fn)
        annotation = sig.annotations.get(name)
        fname = getattr(fn, "name", "<lambda>")
        origin = (fn, name, f"`{name}` is a parameter of `{fname}`")
        if annotation is not None:
            kind = classify_annotation(m, annotation)
            why = f"`{name}` is annotated `{m.quote(annotation)}`"
            if kind == "array":
                return Kind(ARRAY, why=why, origin=(fn, name, f"`{name}` is a parameter of `{fname}` annotated "
                                                               f"`{m.quote(annotation)}`"))
            if kind == "callable":
                return Kind(CALLABLE, why=why)
            if kind == "static":
                return Kind(SCALAR, why=why)
        if name == "self" and sig.positional[:1] == ["self"]:
            return Kind(MODULE, why="`self`", node=fn)
        traced = m.traced.get(fn)
        if traced is not None and name not in traced.static_params and name in sig.positional:
            how = f"`{name}` is a parameter of `{getattr(fn, 'name', '<lambda>')}`, which is traced by `{traced.how}`"
            return Kind(ARRAY, why=how, traced=how)
        role = self._role(fn, name)
        if role is not None:
            return role
        if name in sig.defaults:
            default = sig.defaults[name]
            kind = self.of(default)
            if kind.is_static:
                return kind.because(f"`{name}` defaults to `{m.quote(default)}`")
            if isinstance(default, ast.Call) and (m.index.qualname(default.func) or "").startswith(
                    ("numpy.", "jax.numpy.")) and (m.index.qualname(default.func) or "").rsplit(".", 1)[-1] in \
                    NUMPY_SCALAR_TYPES and len(default.args) == 1 and number_literal(default.args[0]):
                # `sigma=jnp.float64(0.1)`: a typed number literal, a hyperparameter as `sigma=0.1` is
                return Kind(SCALAR, why=f"`{name}` defaults to the number `{m.quote(default)}`")
            return UNKNOWN_KIND
        found = self._from_callers(fn, name, sig)
        if found.tag == UNKNOWN and found.origin is None:  # a configured name is a hint: weaker than the above
            hints = m.facts.hints
            if hints is not None and name in hints.array_names:
                return Kind(ARRAY, why=f"`{name}` is listed in `array-names`")
            if hints is not None and name in hints.static_names:
                return Kind(SCALAR, why=f"`{name}` is listed in `static-names`")
            if sig.kwarg != name and sig.vararg != name:
                return Kind(UNKNOWN, origin=origin)  # nothing known: whoever calls `fn` decides
        return found

    def _from_callers(self, fn: FunctionNode, name: str, sig: Signature) -> Kind:
        """The join of what every call of `fn` in the module passes as `name` (a class's
        `__init__` through calls of the class); unknown when one call cannot be read."""
        if self._callers is None:
            self._callers = {}
            index = self.model.index
            for call in self.model.facts.name_calls():
                for b in index.lookup(call.func.id, index.scope_of(call)):  # type: ignore[attr-defined]
                    if b.kind in ("def", "class"):
                        self._callers.setdefault(b.node, []).append(call)
        target: ast.AST = fn
        offset = 0
        if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
            cls = self.model.index.scope_of(fn).node
            if isinstance(cls, ast.ClassDef):
                target, offset = cls, 1
        calls = self._callers.get(target, [])
        external = external_calls(self.model, fn.name, fn) if isinstance(fn, ast.FunctionDef) and not offset else []
        if not (calls or external) or name not in sig.positional or len(calls) + len(external) > 16:
            return UNKNOWN_KIND
        position = sig.positional.index(name) - offset
        kinds = [external_kind(name, call, call.arg(position, name)) for call in external]
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return UNKNOWN_KIND
            arg = call.args[position] if 0 <= position < len(call.args) else next(
                (k.value for k in call.keywords if k.arg == name), None)
            if arg is None:
                return UNKNOWN_KIND
            kind = self.of(arg)
            kinds.append(kind.via(f"`{name}` receives `{self.model.quote(arg, 40)}` at line {call.lineno}")
                         if (kind.tag != UNKNOWN or kind.origin is not None)
                         and not (isinstance(arg, ast.Name) and arg.id == name) else kind)
        return join_all(kinds)

    def _ints_only(self, d: CustomDerivative, index: int) -> bool:
        """Whether every call of custom_vjp `d` passes an int literal at `index`, but for calls in
        a custom_jvp's jvp rule that pass on its own nondiff parameter when every call of that
        custom_jvp passes the `index`-th parameter of `d`'s fwd or primal there (deepqmc's angle: fwd
        hands the atom indices to a custom_jvp whose rule calls `d` again): such a cycle carries only
        what the calls from outside it give."""
        if d.kind != "vjp" or not d.call_sites:
            return False
        inside = []
        for site in d.call_sites:  # first the cheap test: most callers pass names, none an int literal
            arg = _plain_arg(site.call, index - site.positional_offset)
            if isinstance(arg, ast.Name):
                inside.append((site, arg))
            elif not (isinstance(arg, ast.Constant) and type(arg.value) is int):
                return False
        if len(inside) == len(d.call_sites):
            return False
        own = [r.node for r in (d.rule("fwd"), d.rule("bwd")) if r is not None and r.node is not None]
        return all(self._cycle(d, site.enclosing, arg.id, index, own) for site, arg in inside)

    def _cycle(self, d: CustomDerivative, fn: Optional[FunctionNode], name: str, index: int,
               own: List[FunctionNode]) -> bool:
        for e in self.model.derivatives:
            jvp = e.rule("jvp")
            if e.kind != "jvp" or jvp is None or jvp.node is not fn or not e.call_sites:
                continue
            params = self.model.signature(fn).positional  # the jvp rule: its nondiff parameters first
            if name not in params or params.index(name) >= len(e.nondiff):
                return False
            position = sorted(e.nondiff)[params.index(name)]
            for site in e.call_sites:
                arg = _plain_arg(site.call, position - site.positional_offset)
                if not (isinstance(arg, ast.Name) and site.enclosing in [*own, d.primal] and site.enclosing is not None
                        and self.model.signature(site.enclosing).positional[index:index + 1] == [arg.id]):
                    return False
            return True
        return False

    def _role(self, fn: FunctionNode, name: str) -> Optional[Kind]:
        """Differentiable primal arguments and cotangents are arrays; jvp primals are tuples of them."""
        if self._roles is None:
            self._roles = {}
            for d in self.model.derivatives:
                for role in ("fwd", "bwd", "jvp"):
                    rule = d.rule(role)
                    if rule is not None and rule.node is not None:
                        self._roles.setdefault(rule.node, (d, role))
                if d.primal is not None:
                    self._roles.setdefault(d.primal, (d, "primal"))
        entry = self._roles.get(fn)
        if entry is None:
            return None
        d, role = entry
        params = self.model.signature(fn).positional
        if name not in params:
            return None
        index = params.index(name)
        nondiff = len(d.nondiff)
        label = f"custom_{d.kind} `{d.name}`"
        if role in ("primal", "fwd"):
            if index in d.nondiff or d.nondiff_unresolved or self._ints_only(d, index):
                return None
            return Kind(ARRAY, why=f"`{name}` is a differentiable argument of {label}")
        if role == "bwd" and index == len(params) - 1 and index > nondiff:
            return Kind(ARRAY, why=f"`{name}` is the cotangent in the bwd rule of {label}")
        if role == "bwd" and index == nondiff:
            fwd = d.rule("fwd")
            if fwd is not None and fwd.node is not None:
                out = self.returns(fwd.node)
                if out.tag == TUPLE and out.items is not None and len(out.items) == 2:
                    res = out.items[1]
                    return res.because(f"`{name}` is the residual fwd returns") if res.tag != UNKNOWN else None
        if role == "jvp" and index in (nondiff, nondiff + 1) and len(params) == nondiff + 2:
            what = "primals" if index == nondiff else "tangents"
            return Kind(TUPLE, why=f"`{name}` holds the {what} of {label}",
                        item=Kind(ARRAY, why=f"one of the {what} of {label}"))
        return None

    def captures(self, fn: ast.AST) -> Tuple[Tuple[str, Kind], ...]:
        """Names `fn` reads from enclosing function scopes, with their kinds there."""
        index = self.model.index
        inner = index.scopes.get(fn)
        if inner is None:
            return ()
        out: List[Tuple[str, Kind]] = []
        seen: Set[str] = set()
        for node in walk(fn):
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or node.id in seen:
                continue
            found = index.resolve(node.id, index.scope_of(node))
            if found is None:
                continue
            owner = found[0]
            if owner is index.module_scope or not owner.is_function or index.inside(owner.node, fn):
                continue
            if all(b.kind in ("def", "class", "import") for b in found[1]):
                continue
            seen.add(node.id)
            guard = ("cap", fn, node.id)
            if guard in self._active:
                continue
            self._active.add(guard)
            try:
                out.append((node.id, self.name(node.id, owner)))
            finally:
                self._active.discard(guard)
        return tuple(out)

    # -- expressions ------------------------------------------------------------------------
    def _eval(self, e: ast.expr) -> Kind:
        m = self.model
        if isinstance(e, ast.Constant):
            return constant_kind(e.value, f"the literal `{m.quote(e)}`")
        if isinstance(e, ast.Name):
            return self.name(e.id, m.index.scope_of(e))
        if isinstance(e, (ast.Tuple, ast.List)):
            if any(isinstance(x, ast.Starred) for x in e.elts):
                return Kind(TUPLE if isinstance(e, ast.Tuple) else LIST)
            return Kind(TUPLE if isinstance(e, ast.Tuple) else LIST, why=f"`{m.quote(e, 50)}`",
                        items=tuple(self.of(x) for x in e.elts))
        if isinstance(e, ast.Dict):
            fields = tuple((k.value, self.of(v)) for k, v in zip(e.keys, e.values)
                           if isinstance(k, ast.Constant) and isinstance(k.value, str))
            return Kind(DICT, why=f"`{m.quote(e, 50)}`", fields=fields)
        if isinstance(e, ast.JoinedStr):
            return Kind(STRING, why="an f-string")
        if isinstance(e, ast.Lambda):
            return Kind(CALLABLE, why=f"the lambda at line {e.lineno}", captures=self.captures(e), node=e)
        if isinstance(e, ast.IfExp):
            return join(self.of(e.body), self.of(e.orelse))
        if isinstance(e, ast.NamedExpr):
            return self.of(e.value)
        if isinstance(e, ast.UnaryOp):
            inner = self.of(e.operand)
            if isinstance(e.op, ast.Not):
                return Kind(SCALAR, "bool") if inner.is_static else UNKNOWN_KIND
            return inner if inner.tag in (ARRAY, SCALAR) else UNKNOWN_KIND
        if isinstance(e, ast.BinOp):
            return self._binop(self.of(e.left), self.of(e.right), e.op, e)
        if isinstance(e, ast.Compare):
            sides = [self.of(x) for x in (e.left, *e.comparators)]
            arrays = [k for k in sides if k.tag == ARRAY]
            if arrays and not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return Kind(ARRAY, "bool", f"`{m.quote(e, 50)}`", next((k.traced for k in arrays if k.traced), None))
            return Kind(SCALAR, "bool") if all(k.is_static for k in sides) else UNKNOWN_KIND
        if isinstance(e, ast.Attribute):
            return self._attribute(e)
        if isinstance(e, ast.Subscript):
            return self._subscript(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        return UNKNOWN_KIND

    def _binop(self, left: Kind, right: Kind, op: ast.operator, e: Optional[ast.BinOp] = None) -> Kind:
        why = f"`{self.model.quote(e, 50)}`" if e is not None else ""
        if ARRAY in (left.tag, right.tag):
            traced = left.traced or right.traced
            if traced and e is not None:
                traced = f"`{self.model.quote(e, 50)}` is computed from a traced value ({traced})"
            mask = isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and left.dtype == right.dtype == "bool"
            return Kind(ARRAY, "bool" if mask else None, why=why, traced=traced)  # `(a < b) & (b < c)`: a mask
        if left.tag == right.tag == SCALAR:
            return Kind(SCALAR, left.dtype if left.dtype == right.dtype else None, why)
        if left.tag == right.tag == STRING or (left.tag == STRING and isinstance(op, ast.Mod)):
            return Kind(STRING, why=why)
        if left.tag == right.tag and left.tag in (TUPLE, SHAPE) and isinstance(op, ast.Add):
            return Kind(left.tag, why=why)
        source = next((k for k in (left, right) if k.origin is not None), None)
        if source is not None and STRING not in (left.tag, right.tag):  # `2.0 * w`: still the caller's value
            return Kind(UNKNOWN, origin=source.origin)
        return UNKNOWN_KIND

    def _attribute(self, e: ast.Attribute) -> Kind:
        m = self.model
        q = m.index.qualname(e) or ""
        if q.startswith(("jax.numpy.", "numpy.")) and e.attr in ("float16", "float32", "float64", "bfloat16",
                                                                    "int8", "int16", "int32", "int64", "uint8",
                                                                    "uint32", "bool_", "complex64", "complex128"):
            return Kind(DTYPE, why=f"`{m.quote(e)}`")
        if q in ("math.pi", "math.e", "math.inf", "numpy.pi", "numpy.inf", "jax.numpy.pi", "jax.numpy.inf"):
            return Kind(SCALAR, "float", f"`{m.quote(e)}`")
        if q.startswith(tuple(ARRAY_NAMESPACES)):
            return Kind(CALLABLE, why=f"`{m.quote(e)}`")
        base = self.of(e.value)
        if base.tag == ARRAY:
            if e.attr in STATIC_ATTRS:
                return Kind(STATIC_ATTRS[e.attr], "int" if e.attr in ("ndim", "size") else None, f"`{m.quote(e)}`")
            if e.attr in ARRAY_VALUED_ATTRIBUTES:
                return Kind(ARRAY, base.dtype, f"`{m.quote(e)}`", base.traced)
            return UNKNOWN_KIND
        if base.tag in (RECORD, DICT):
            found = base.field(e.attr)
            return found.because(f"`{m.quote(e)}`, {found.why}") if found is not None and found.why else (
                found or UNKNOWN_KIND)
        if base.tag == MODULE and isinstance(base.node, FUNCTION_TYPES):
            return self._self_attribute(base.node, e.attr)
        return UNKNOWN_KIND

    def array_fields(self, method: FunctionNode) -> List[Tuple[str, str]]:
        """(field, quoted annotation) of the class-level fields of `method`'s class annotated as
        arrays (`rate: jax.Array` in an equinox Module, a dataclass, a flax struct): what `self`
        holds that a transformation of the object would trace or differentiate."""
        cls = self.model.index.scope_of(method).node
        if not isinstance(cls, ast.ClassDef):
            return []
        return [(s.target.id, self.model.quote(s.annotation, 40)) for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                and classify_annotation(self.model, s.annotation) == "array"]

    def instance_class(self, expr: ast.expr) -> Optional[ast.ClassDef]:
        """The class of this module that `expr` is an instance of: a record built here (an
        equinox Module, a dataclass), or a name bound once to `C(...)` for a class `C` here."""
        kind = self.of(expr)
        if kind.tag == RECORD and isinstance(kind.node, ast.ClassDef):
            return kind.node
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].value, ast.Call):
            return None
        callee = self.of(bindings[0].value.func)
        return callee.node if callee.tag == CALLABLE and isinstance(callee.node, ast.ClassDef) else None

    def method_of(self, cls: ast.ClassDef, name: str, depth: int = 0) -> Optional[ast.FunctionDef]:
        """`cls`'s method `name`, also inherited from a base class of this module."""
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return stmt
        if depth < 3:
            for base in cls.bases:
                kind = self.of(base)
                if kind.tag == CALLABLE and isinstance(kind.node, ast.ClassDef) and kind.node is not cls:
                    found = self.method_of(kind.node, name, depth + 1)
                    if found is not None:
                        return found
        return None

    def self_assignments(self, method: FunctionNode, attr: str) -> Optional[List[Optional[ast.stmt]]]:
        """The statements of `method`'s class assigning `self.attr` (None for `self.attr += v`);
        None when `method` is not in a class."""
        cls = self.model.index.scope_of(method).node
        if not isinstance(cls, ast.ClassDef):
            return None
        table = self._class_attrs.get(cls)
        if table is None:  # one walk per class: `self.x = v` per attribute, None for `self.x += v`
            table = self._class_attrs[cls] = {}
            for node in walk(cls):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            ok = not isinstance(node, ast.AugAssign) and node.value is not None
                            table.setdefault(t.attr, []).append(node if ok else None)
        return table.get(attr, [])

    def _self_attribute(self, method: FunctionNode, attr: str) -> Kind:
        """`self.attr`: what the class's methods assign to it (unknown when any assignment is)."""
        assignments = self.self_assignments(method, attr)
        if assignments is None:
            return UNKNOWN_KIND
        kinds: List[Kind] = []
        for node in assignments:
            if node is None:
                return UNKNOWN_KIND
            kind = self.of(node.value)  # type: ignore[arg-type]
            kinds.append(kind.via(f"`self.{attr}` = `{self.model.quote(node.value, 50)}` at line "  # type: ignore
                                  f"{node.lineno}") if kind.tag != UNKNOWN or kind.origin is not None else kind)
        return join_all(kinds)

    def _subscript(self, e: ast.Subscript) -> Kind:
        base = self.of(e.value)
        key = e.slice
        m = self.model
        if base.tag == ARRAY:
            return Kind(ARRAY, base.dtype, f"`{m.quote(e, 50)}`", base.traced)
        if base.tag == SHAPE:
            return Kind(SCALAR, "int", f"`{m.quote(e, 50)}`") if not isinstance(key, ast.Slice) else Kind(SHAPE)
        if isinstance(key, ast.Constant):
            if base.tag in (TUPLE, LIST) and isinstance(key.value, int) and not isinstance(key.value, bool):
                return element_kind(base, key.value)
            if base.tag in (DICT, RECORD) and isinstance(key.value, str):
                found = base.field(key.value)
                return found if found is not None else UNKNOWN_KIND
        if base.tag in (TUPLE, LIST) and base.item is not None and not isinstance(key, ast.Slice):
            return base.item
        if base.tag == UNKNOWN and base.origin is not None:  # `params["w"]`: a part of what the caller passes
            return Kind(UNKNOWN, origin=base.origin)
        return UNKNOWN_KIND

    def _call(self, e: ast.Call) -> Kind:
        m = self.model
        func = e.func
        q = m.index.qualname(func) or ""
        quoted = f"`{m.quote(e, 50)}`"
        if q.startswith(ARRAY_NAMESPACES):
            tail = q.rsplit(".", 1)[-1]
            if q.startswith("jax.random."):
                dtype = "key" if tail in KEY_FUNCTIONS else ("int" if tail in INT_RANDOM else
                                                             "bool" if tail == "bernoulli" else "float")
            else:
                dtype = None
            traced = next((k.traced for k in map(self.of, e.args) if k.traced), None)
            if traced:
                traced = f"{quoted} is computed from a traced value ({traced})"
            if tail in ("shape", "ndim", "size", "result_type", "dtype", "iinfo", "finfo"):
                return UNKNOWN_KIND
            return Kind(ARRAY, dtype, quoted, traced)
        if q in EQX_CLOSURE_CONVERT and e.args:  # its pytree leaves are the closed-over arrays
            inner = self.of(e.args[0])
            held = next((k for _, k in inner.captures if k.tag == ARRAY), None)
            if held is not None:
                return Kind(ARRAY, None, f"{quoted}, whose pytree leaves are the closed-over arrays ({held.why})",
                            held.traced)
            return Kind(CALLABLE, why=quoted, node=inner.node)
        if q in ("flax.nnx.split", "flax.nnx.state") and e.args and not any(
                isinstance(a, ast.Starred) for a in e.args):  # Module state: the Variables' arrays
            state = Kind(ARRAY, why=f"an nnx State from {quoted}")
            if q == "flax.nnx.state":
                return state
            return Kind(TUPLE, why=quoted, items=(UNKNOWN_KIND, *[state] * max(1, len(e.args) - 1)))
        if q in NNX_VARIABLES and e.args:  # `nnx.BatchStat(jnp.array(0.0))`: its leaf is the array
            inner = self.of(e.args[0])
            if inner.tag == ARRAY:
                return Kind(ARRAY, inner.dtype, f"{quoted}, an nnx Variable holding an array", inner.traced)
        if q in PARTIAL and e.args:
            inner = self.of(e.args[0])
            bound = tuple((f"argument {i + 1} of the partial", self.of(a)) for i, a in enumerate(e.args[1:]))
            return Kind(CALLABLE, why=quoted, captures=inner.captures + bound, node=inner.node)
        if q in TRANSFORMS and e.args and TRANSFORMS[q] == 0:
            inner = self.of(e.args[0])
            return Kind(CALLABLE, why=quoted, captures=inner.captures, node=inner.node)
        if q.startswith("numpy.") and q.rsplit(".", 1)[-1] in NUMPY_SCALAR_TYPES and len(e.args) == 1 and \
                not e.keywords and number_literal(e.args[0]):
            return Kind(SCALAR, "int" if "int" in q else "float", quoted)  # `np.float64(0.1)`: a host constant
        if q.startswith("builtins."):
            tail = q[len("builtins."):]
            if tail in SCALAR_BUILTINS:
                dtype = SCALAR_BUILTINS[tail]
                if dtype is None:
                    args = [self.of(a) for a in e.args]
                    return Kind(ARRAY, why=quoted) if any(a.tag == ARRAY for a in args) else UNKNOWN_KIND
                return Kind(SCALAR, dtype, quoted)
            if tail in ("str", "repr", "format"):
                return Kind(STRING, why=quoted)
            return UNKNOWN_KIND
        if isinstance(func, ast.Attribute) and not q:
            base = self.of(func.value)
            if base.tag == ARRAY and func.attr in ARRAY_METHODS:
                return Kind(ARRAY, base.dtype, quoted, base.traced)
            if base.tag == STRING and func.attr in ("format", "join", "lower", "upper", "strip", "replace"):
                return Kind(STRING, why=quoted)
        callee = self.of(func) if isinstance(func, ast.Name) else UNKNOWN_KIND
        if callee.tag == CALLABLE and isinstance(callee.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out = self.returns(callee.node)
            if out.tag != UNKNOWN:
                out = out.because(f"{quoted}, which returns {out.why}" if out.why else quoted)
                built = self.new_array(callee.node)
                if out.tag == ARRAY and not out.traced and built is not None:
                    return replace(out, traced=self._built_inside_trace(e, f"{quoted} builds a new jax array "
                                                                           f"(`{m.quote(built, 50)}` at line "
                                                                           f"{built.lineno})"))
                return out
        if callee.tag == MODULE and isinstance(func, ast.Name) and self.imported is not None:
            found = self.imported(func.id)  # a function of another module of the run
            if found is not None:
                tag, dtype, why = found
                if tag == "call:static":
                    return Kind(SCALAR, dtype or None, f"{quoted}, which returns {why}")
                if tag in ("call:array", "call:new-array"):
                    traced = self._built_inside_trace(e, f"{quoted} builds a new jax array ({why})") \
                        if tag == "call:new-array" else None
                    return Kind(ARRAY, dtype or None, f"{quoted}, which returns {why}", traced)
        if callee.tag == CALLABLE and isinstance(callee.node, ast.ClassDef):
            return self._construct(callee.node, e)
        return UNKNOWN_KIND

    def new_array(self, fn: FunctionNode) -> Optional[ast.expr]:
        """The jax call building the array `fn` returns, when every return builds one anew
        (`return jnp.linspace(...)`, or a name bound once to such a call): called inside a
        traced function, the result is a tracer. None otherwise (a stored array is not)."""
        scope = self.model.index.scopes.get(fn)
        built: Optional[ast.expr] = None
        for _, value in self.model.facts.returns_of(fn):
            if isinstance(value, ast.Name) and scope is not None:
                bindings = scope.bindings.get(value.id, [])
                value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
            if not (isinstance(value, ast.Call) and (self.model.index.qualname(value.func) or "").startswith(
                    ARRAY_NAMESPACES)):
                return None
            built = built or value
        return built

    def _built_inside_trace(self, call: ast.Call, what: str) -> Optional[str]:
        """Why the array `call` builds is a tracer: the call runs inside a traced function."""
        enclosing = self.model.index.enclosing_function(call)
        traced = self.model.traced.get(enclosing) if enclosing is not None else None
        if traced is None:
            return None
        return f"{what} inside `{getattr(enclosing, 'name', '<lambda>')}`, which is traced by `{traced.how}`"

    def _construct(self, cls: ast.ClassDef, e: ast.Call) -> Kind:
        """A NamedTuple or dataclass built here: its fields, in declaration order; an object of a
        class with an `__init__`: what `__init__` assigns to `self`, from this call's arguments."""
        names = [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        if not names:
            return self._instance(cls, e)
        fields: Dict[str, Kind] = {}
        for name, arg in zip(names, e.args):
            if isinstance(arg, ast.Starred):
                return Kind(RECORD, node=cls)
            fields[name] = self.of(arg)
        for kw in e.keywords:
            if kw.arg in names:
                fields[kw.arg] = self.of(kw.value)
        items = tuple(fields[n] for n in names if n in fields) if len(fields) == len(names) else None
        return Kind(RECORD, why=f"`{self.model.quote(e, 50)}`", fields=tuple(fields.items()), items=items, node=cls)

    def _instance(self, cls: ast.ClassDef, e: ast.Call) -> Kind:
        """`Layer(w)`: the fields `Layer.__init__` (or a base class's, in this module) assigns to
        `self`, each evaluated with `__init__`'s parameters bound to this call's arguments. An
        attribute assigned in another method too is left out (its value then depends on calls)."""
        init = self._init_of(cls, 0)
        guard = ("init", cls, "")
        if init is None or guard in self._active:
            return UNKNOWN_KIND
        sig = self.model.signature(init)
        if not sig.positional or any(isinstance(a, ast.Starred) for a in e.args) or any(
                k.arg is None for k in e.keywords) or len(e.args) > len(sig.positional) - 1:
            return Kind(RECORD, why=f"`{self.model.quote(e, 50)}`", node=cls)
        me = sig.positional[0]
        bound: Dict[str, Kind] = {}
        for param, arg in [*zip(sig.positional[1:], e.args), *((k.arg, k.value) for k in e.keywords)]:
            kind = self.of(arg)
            same = isinstance(arg, ast.Name) and arg.id == param
            bound[param] = kind.via(f"`{param}` receives `{self.model.quote(arg, 40)}` at line {e.lineno}") \
                if (kind.tag != UNKNOWN or kind.origin is not None) and not same else kind  # type: ignore[index]
        assigned: Dict[str, List[ast.stmt]] = {}
        elsewhere: Set[str] = set()
        owner = self.model.index.scope_of(init).node
        for node in [*walk(cls), *(walk(owner) if owner is not cls else [])]:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                        if isinstance(node, ast.Assign) and self.model.index.enclosing_function(node) is init:
                            assigned.setdefault(t.attr, []).append(node)
                        else:
                            elsewhere.add(t.attr)
        if len(assigned) > 32:
            return Kind(RECORD, why=f"`{self.model.quote(e, 50)}`", node=cls)
        fields: List[Tuple[str, Kind]] = []
        self._active.add(guard)
        saved = self._exprs, self._names
        self._exprs, self._names = {}, {}  # values inside `__init__` depend on this call's arguments
        self._frames.append((init, bound))
        try:
            for attr, statements in assigned.items():
                if attr in elsewhere:
                    continue
                kinds = [self.of(stmt.value).via(  # type: ignore[attr-defined]
                    f"`{me}.{attr}` = `{self.model.quote(stmt.value, 50)}` at line {stmt.lineno}")  # type: ignore
                    for stmt in statements]
                kind = join_all(kinds)
                if kind.tag != UNKNOWN or kind.origin is not None:
                    fields.append((attr, kind))
        finally:
            self._frames.pop()
            self._exprs, self._names = saved
            self._active.discard(guard)
        return Kind(RECORD, why=f"`{self.model.quote(e, 50)}`", fields=tuple(fields), node=cls)

    def _init_of(self, cls: ast.ClassDef, depth: int) -> Optional[ast.FunctionDef]:
        """The `__init__` a class runs: its own, or that of its first base class defined here."""
        own = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if own is not None or depth > 3:
            return own
        for base in cls.bases:
            if isinstance(base, ast.Name):
                classes = [b.node for b in self.model.index.lookup(base.id, self.model.index.scope_of(cls))
                           if b.kind == "class"]
                if len(classes) == 1:
                    return self._init_of(classes[0], depth + 1)  # type: ignore[arg-type]
            return None
        return None


def _plain_arg(call: ast.Call, position: int) -> Optional[ast.expr]:
    """The argument `call` passes at `position`, when no `*args` comes before it."""
    if position < 0 or any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return None
    return call.args[position] if position < len(call.args) else None
