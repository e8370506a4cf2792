"""Source tree -> FileModel: find every custom_vjp/custom_jvp however it is spelled."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from vjplint.facts import Facts
from vjplint.facts.crossmodule import RULE_DEF, ExternalFacts, Graft, graft, rule_defs
from vjplint.facts.recognizer import ALL_REGISTRATION_METHODS, CREATOR_ATTRS, TRANSFORM_ATTRS, Recognizer
from vjplint.model.jaxapi import API_REGISTRATION_METHODS, CONFIGURABLE_CREATORS, EXTRA_TRACED_POSITIONS, LIBRARY_CREATORS, PARTIAL, REGISTRATION_METHODS, RULES_IN_CALL, TRANSFORMS, canonical_creator
from vjplint.model.file_model import CallSite, CustomDerivative, FileModel, Registration, RuleFunction, Signature, TracedFunction
from vjplint.model.semantic import Binding, FunctionNode, Scope, SemanticIndex, constant_value, delegate_of
from vjplint.model.wrappers import INSTANCE, SELF, InferredKeyword

if TYPE_CHECKING:
    from vjplint.facts.infer import Hints
    from vjplint.model.run_facts import RunFacts


_RUN_TYPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign, ast.Call})


def collect(module: ast.Module, lines: List[str], recognizer: Optional[Recognizer] = None,
            run: Optional["RunFacts"] = None, hints: Optional[Hints] = None) -> FileModel:
    """The file's model, its facts given what the run contributes: `run`'s cross-module rows (what
    other modules of the run do with this module's names) and the settings' name `hints`."""
    rows = run.rows if run is not None else ()
    grafted = None
    if rows and any(row[0] == RULE_DEF for row in rows):  # rules defined in another module: read here
        grafted = graft(module, lines, rule_defs(rows))
        rows = tuple(row for row in rows if row[0] != RULE_DEF)
    if grafted is not None:
        module, lines = grafted[0], grafted[1]
    external = ExternalFacts.from_rows(rows) if rows else None
    return _Collector(module, lines, recognizer or Recognizer(), external, hints,
                      grafted[2] if grafted is not None else None).run()


class _Collector:
    def __init__(self, module: ast.Module, lines: List[str], recognizer: Recognizer,
                 external: Optional[ExternalFacts] = None, hints: Optional[Hints] = None,
                 grafted: Optional[Graft] = None) -> None:
        self.module = module
        self.external = external
        self.graft = grafted
        self.hints = hints
        self.lines = lines
        self.rec = recognizer
        self.index = SemanticIndex(module)
        self.by_binding: Dict[ast.AST, CustomDerivative] = {}
        self.derivatives: List[CustomDerivative] = []
        self.traced: Dict[FunctionNode, TracedFunction] = {}
        self.by_attribute: Dict[Tuple[object, str], CustomDerivative] = {}  # (class scope, attr): `self.f = ...`
        self.created: set = set()  # ids of creation expressions already collected
        self.aliases: List[ast.AST] = []  # `f = g` / `f = Cls.g` assignments of a plain name
        self.results: List[ast.AST] = []  # `f = call(...)` assignments of a plain name

    def run(self) -> FileModel:
        calls: List[ast.Call] = []
        functions: List[ast.FunctionDef] = []
        # one walk, shared with the engine and the rules; only the node types read here
        for node in [n for n in self.index.nodes if n.__class__ in _RUN_TYPES]:
            cls = node.__class__
            if cls is ast.Call:
                calls.append(node)  # type: ignore[arg-type]
            elif cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
                self._from_decorators(node)  # type: ignore[arg-type]
                functions.append(node)  # type: ignore[arg-type]
            else:
                self._from_assignment(node)  # type: ignore[arg-type]
        for call in calls:
            self._from_call(call)
        self._factory_results()
        for node in functions:
            self._decorator_registrations(node)
            self._traced_by_decorator(node)
        for call in calls:
            self._registration_call(call)
            self._call_site(call)
            self._traced_by_call(call)
        helpers = self._registration_helpers(calls) if self.derivatives else {}
        if helpers:
            for call in calls:
                if isinstance(call.func, ast.Name) and call.func.id in helpers:
                    self._helper_registration(call, helpers[call.func.id])
        self._follow_delegations()
        self.derivatives.sort(key=lambda d: (d.anchor.lineno, d.anchor.col_offset))
        for d in self.derivatives:
            d.call_sites.sort(key=lambda c: (c.call.lineno, c.call.col_offset))
        model = FileModel(self.module, self.index, self.derivatives, self.traced, self.lines)
        model.facts = Facts(model, self.external, self.hints, self.graft)
        return model

    # -- definitions ----------------------------------------------------------------------
    def _match_creator(self, expr: ast.expr, scope: Scope) -> Optional[Tuple[str, Dict[str, ast.expr], str, bool]]:
        """(kind, keywords, nondiff keyword, is_alias) when `expr` makes a custom derivative."""
        q = self._creator_qualname(expr, scope)
        found = self.rec.kind_of(q)
        if found:
            return found[0], {}, found[1], q in self.rec.aliases
        if isinstance(expr, ast.Call):
            fq = self._creator_qualname(expr.func, scope)
            if fq in PARTIAL and expr.args:
                inner_q = self._creator_qualname(expr.args[0], scope)
                found = self.rec.kind_of(inner_q)
                if found:
                    return found[0], _keywords(expr), found[1], inner_q in self.rec.aliases
            found = self.rec.kind_of(fq)
            if found and fq in self.rec.aliases and not expr.args:
                return found[0], _keywords(expr), found[1], True
            made = self._instance_qualname(expr.func, scope) if not expr.args and self.rec.aliases else None
            instance = self.rec.kind_of(made) if made in self.rec.aliases else None
            if instance:  # `@Shim(nondiff_argnums=(1,))`: Shim's `__call__` is an inferred wrapper
                return instance[0], _keywords(expr), instance[1], True
            if found and canonical_creator(fq) in CONFIGURABLE_CREATORS and not expr.args:
                return found[0], _keywords(expr), found[1], False  # `@nnx.custom_vjp(nondiff_argnums=...)`
        return None

    def _creator_qualname(self, expr: ast.expr, scope: Scope) -> Optional[str]:
        """`index.qualname`, or `<self>.w` for this module's own function, class or rename `w`
        when it is an inferred wrapper (vjplint.project.index), used where it is defined."""
        q = self.index.qualname(expr, scope)
        if q is None and isinstance(expr, ast.Name) and f"{SELF}.{expr.id}" in self.rec.aliases:
            found = self.index.resolve(expr.id, scope)
            if found is not None and found[0] is self.index.module_scope:
                return f"{SELF}.{expr.id}"
        return q

    def _instance_qualname(self, func: ast.expr, scope: Scope) -> Optional[str]:
        """`Cls()` spelled as vjplint.project.index spells an instance of `Cls` (`<self>.Cls()` here)."""
        q = self.index.qualname(func, scope)
        if q is None and isinstance(func, ast.Name):
            found = self.index.resolve(func.id, scope)
            if found is not None and found[0] is self.index.module_scope:
                q = f"{SELF}.{func.id}"
        return q + INSTANCE if q else None

    def _from_decorators(self, fn: ast.FunctionDef) -> None:
        outer = self.index.scope_of(fn)
        for decorator in fn.decorator_list:
            match = self._match_creator(decorator, outer)
            if match:
                kind, keywords, nondiff_kw, is_alias = match
                self._add(kind, fn.name, decorator, decorator, fn, keywords, nondiff_kw, fn, outer, is_alias)
                return

    def _from_assignment(self, node: "ast.Assign | ast.AnnAssign") -> None:
        if isinstance(node, ast.AnnAssign):  # `method_jvp: Any = custom_jvp_method(method, ...)` (tjax)
            target = node.target
        elif len(node.targets) != 1:
            return
        else:
            target = node.targets[0]
        if isinstance(target, ast.Name):
            name = target.id
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            name = f"{target.value.id}.{target.attr}"  # `self.f = jax.custom_vjp(self._f)` in a method
        else:
            return
        value = node.value
        if isinstance(value, (ast.Name, ast.Attribute)) and isinstance(target, ast.Name):
            self.aliases.append(node)  # `f = _f`, `f = Ops.f`: read once every derivative is known
            return
        if isinstance(value, ast.Call) and isinstance(target, ast.Name):
            self.results.append(node)  # `f = make_f(...)`: a factory's result, read once derivatives are known
        if not isinstance(value, ast.Call) or not value.args:
            return
        scope = self.index.scope_of(node)
        fq = self._creator_qualname(value.func, scope)
        found = self.rec.kind_of(fq)
        if found:
            kind, nondiff_kw = found
            keywords, is_alias = _keywords(value), fq in self.rec.aliases
        elif isinstance(value.func, ast.Call):
            match = self._match_creator(value.func, scope)
            if not match:
                return
            kind, keywords, nondiff_kw, is_alias = match
        else:
            return
        if isinstance(target, ast.Attribute) and self._class_scope_for(target.value, scope) is None:
            return  # only `self.attr` in a method: another object's attribute is not followed
        primal = self._resolve_function(value.args[0], scope)
        self._add(kind, name, node, value, primal, keywords, nondiff_kw, node, scope, is_alias)
        if isinstance(target, ast.Attribute):
            self.by_attribute[(self._class_scope_for(target.value, scope), target.attr)] = self.derivatives[-1]

    def _from_call(self, call: ast.Call) -> None:
        """A library creator applied without a name: `nn.custom_vjp(f, fwd, bwd)(mdl, x)` (linen's
        call form), `nnx.custom_vjp(lambda m: m, ...)` in a test of its errors."""
        if call in self.created or not call.args:
            return
        if call.func.__class__ is ast.Attribute and call.func.attr not in CREATOR_ATTRS:  # type: ignore[attr-defined]
            return  # `x.y(...)` names what ends in `.y`: no creator (a tenth of the calls of JAX's tree)
        scope = self.index.scope_of(call)
        fq = canonical_creator(self.index.qualname(call.func, scope))
        if fq not in LIBRARY_CREATORS:
            return
        found = self.rec.kind_of(fq)
        if found is None:
            return
        primal = self._resolve_function(call.args[0], scope)
        name = getattr(primal, "name", None) or (ast.unparse(call.args[0]) if not isinstance(call.args[0], ast.Lambda)
                                                 else "<lambda>")
        self._add(found[0], name, call, call, primal, _keywords(call), found[1], call, scope, False)

    def _add(self, kind: str, name: str, anchor: ast.AST, creation: ast.expr, primal: Optional[FunctionNode],
             keywords: Dict[str, ast.expr], nondiff_kw: str, binding_node: ast.AST, scope: Scope,
             is_alias: bool) -> None:
        api, creator = self._api_of(creation, scope)
        if api != "jax":
            is_alias = False  # a library API is built in, whatever the configuration says
        if isinstance(nondiff_kw, InferredKeyword) and nondiff_kw != "nondiff_argnums":
            # an inferred wrapper renames nondiff_argnums (or drops it: ""): JAX never sees the original
            keywords = {k: v for k, v in keywords.items() if k not in ("nondiff_argnums", "nondiff_argnames")}
        if nondiff_kw != "nondiff_argnums" and nondiff_kw in keywords:
            keywords = {**keywords, "nondiff_argnums": keywords[nondiff_kw]}
        bound_self = api == "jax" and self._is_bound_method(creation, primal, scope)
        bound_count = 1
        partial_bound = self._partial_bound(creation, scope) if api == "jax" and primal is not None else 0
        if partial_bound:  # `jax.custom_vjp(partial(f, cfg), nondiff_argnums=(0,))`: JAX counts after `cfg`
            # (and after `self` too for `partial(self._f, cfg)`: the bound method's first parameter)
            bound_self, bound_count = True, partial_bound + (1 if bound_self else 0)
        sig = self.index.of_node(Signature.of, primal) if primal is not None else None
        if sig is not None and bound_self:
            for _ in range(bound_count):
                sig = sig.without_first()
        positions, unresolved = self._nondiff_positions(keywords, sig, scope, api, primal)
        enclosing = next((s.node for s in scope.chain() if s.is_function), None)
        class_node = scope.node if scope.is_class else None
        d = CustomDerivative(
            kind=kind, name=name, anchor=anchor, creation=creation, primal=primal, keywords=keywords,
            nondiff=positions, nondiff_unresolved=unresolved, enclosing=enclosing,  # type: ignore[arg-type]
            class_node=class_node, is_alias=is_alias,  # type: ignore[arg-type]
            api=api, mode=self._nnx_mode(keywords, scope) if api == "nnx" else None, bound_self=bound_self,
            bound_count=bound_count,
        )
        self.derivatives.append(d)
        self.by_binding[binding_node] = d
        if isinstance(nondiff_kw, InferredKeyword):
            d.via = nondiff_kw.why
            if nondiff_kw.rules and isinstance(creation, ast.Call):
                self._wrapper_rules(d, creation, nondiff_kw.rules, scope)
        self.created.add(creation)
        if creator in RULES_IN_CALL and isinstance(creation, ast.Call):
            self._rules_in_call(d, creation, scope)

    def _api_of(self, creation: ast.expr, scope: Scope) -> Tuple[str, Optional[str]]:
        """The protocol of the creator in `creation` (`@nnx.custom_vjp(...)`, `partial(eqx..., )`, ...)."""
        expr = creation
        for _ in range(3):
            q = canonical_creator(self.index.qualname(expr, scope))
            if q in LIBRARY_CREATORS:
                return LIBRARY_CREATORS[q][1], q
            if not isinstance(expr, ast.Call):
                break
            fq = canonical_creator(self.index.qualname(expr.func, scope))
            if fq in LIBRARY_CREATORS:
                return LIBRARY_CREATORS[fq][1], fq
            expr = expr.args[0] if fq in PARTIAL and expr.args else expr.func
        return "jax", None

    def _nnx_mode(self, keywords: Dict[str, ast.expr], scope: Scope) -> str:
        """nnx picks its protocol from `graph` and `graph_updates` (both default True)."""
        values = [self.constant_value(keywords[k], scope) if k in keywords else True
                  for k in ("graph", "graph_updates")]
        if any(v is False for v in values):
            return "simple"
        return "default" if all(v is True for v in values) else "either"

    def _is_bound_method(self, creation: ast.expr, primal: Optional[FunctionNode], scope: Scope) -> bool:
        """`jax.custom_vjp(self._f)`: does the attribute access bind the primal's first parameter?
        As Python binds (docs/facts/scripts/jax_method_kinds.py): a method through an instance binds
        `self`, a classmethod through the class or an instance binds `cls`, a staticmethod or a plain
        function through the class binds nothing."""
        if primal is None or not isinstance(creation, ast.Call) or not creation.args:
            return False
        arg = creation.args[0]
        while self._plain_partial(arg, scope):  # `partial(self._f, cfg)`: the method inside
            arg = arg.args[0]  # type: ignore[attr-defined]
        if not (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)):
            return False
        if not isinstance(self.index.parent(primal), ast.ClassDef):
            return False
        kind = self._method_kind(primal)
        if kind == "static" or self._class_scope_for(arg.value, scope) is None:
            return False
        bindings = self.index.lookup(arg.value.id, scope)
        if len(bindings) != 1:
            return False
        if kind == "class":
            return bindings[0].kind in ("param", "class")
        if bindings[0].kind != "param":
            return False  # `Class.f`: a plain function, nothing bound
        owner = self.index.enclosing_function(bindings[0].node)
        return owner is not None and self._method_kind(owner) == "instance"  # `self`, not a classmethod's `cls`

    def _method_kind(self, fn: FunctionNode) -> str:
        """'static', 'class' or 'instance', from the decorators of a method."""
        names = {self.index.qualname(dec) for dec in getattr(fn, "decorator_list", [])}
        return "static" if "builtins.staticmethod" in names else "class" if "builtins.classmethod" in names \
            else "instance"

    def _rules_in_call(self, d: CustomDerivative, call: ast.Call, scope: Scope) -> None:
        """linen: `nn.custom_vjp(fn, forward_fn, backward_fn, ...)` registers fwd and bwd in the call."""
        keywords = _keywords(call)
        exprs = [*call.args[1:3]]
        for position, key in enumerate(("forward_fn", "backward_fn")):
            if len(exprs) <= position and key in keywords:
                exprs.append(keywords[key])
        if len(exprs) == 2:
            rules = [self._resolve_rule(e, scope) for e in exprs]
            d.registrations.append(Registration("defvjp", call, False, rules, {}))

    def _wrapper_rules(self, d: CustomDerivative, call: ast.Call, positions: Tuple[int, ...], scope: Scope) -> None:
        """`fastmath.custom_vjp(f, f_fwd, f_bwd)`: an inferred wrapper whose parameters are the rules."""
        if len(call.args) > max(positions) and not any(isinstance(a, ast.Starred) for a in call.args):
            rules = [self._resolve_rule(call.args[p], scope) for p in positions]
            d.registrations.append(Registration("defvjp" if d.kind == "vjp" else "defjvp", call, False, rules, {}))

    def _nondiff_positions(self, keywords: Dict[str, ast.expr], sig: Optional[Signature], scope: Scope,
                           api: str = "jax", primal: Optional[FunctionNode] = None) -> Tuple[Tuple[int, ...], bool]:
        positions: set = set()
        unresolved = False
        if api in ("equinox", "custom_gradient"):
            return (), False  # no nondiff_argnums: equinox treats non-array leaves as static
        if "nondiff_argnums" in keywords:
            value = self._nnx_argnums(keywords["nondiff_argnums"], scope) if api == "nnx" else \
                self.constant_value(keywords["nondiff_argnums"], scope)
            if value is None:
                unresolved = True
            elif isinstance(value, (tuple, list)):
                limit = None if (sig is None or sig.vararg) else len(sig.positional)
                for item in value:
                    if type(item) is int and item >= 0 and (limit is None or item < limit):
                        positions.add(item)
        if "nondiff_argnames" in keywords:
            value = self.constant_value(keywords["nondiff_argnames"], scope)
            names = (value,) if isinstance(value, str) else value
            if names is None or sig is None:
                unresolved = True
            elif isinstance(names, (tuple, list)):
                posonly = {a.arg for a in primal.args.posonlyargs} if primal is not None else set()
                for item in names:  # only POSITIONAL_OR_KEYWORD parameters can be named
                    if isinstance(item, str) and item in sig.positional and item not in posonly:
                        positions.add(sig.positional.index(item))
        return tuple(sorted(positions)), unresolved

    def _nnx_argnums(self, expr: ast.expr, scope: Scope) -> object:
        """nnx's nondiff_argnums: the ints; `nnx.DiffState(...)` entries select a Module's
        differentiable part (they are not nondiff)."""
        if isinstance(expr, (ast.Tuple, ast.List)):
            items = []
            for elt in expr.elts:
                if isinstance(elt, ast.Call) and (self.index.qualname(elt.func, scope) or "").endswith("DiffState"):
                    continue
                value = self.constant_value(elt, scope)
                if value is None:
                    return None
                items.append(value)
            return tuple(items)
        return self.constant_value(expr, scope)

    def constant_value(self, expr: ast.expr, scope: Scope) -> object:
        return constant_value(self.index, expr, scope)

    # -- resolution helpers ---------------------------------------------------------------
    def _partial_bound(self, creation: ast.expr, scope: Scope) -> int:
        """How many leading parameters `functools.partial` binds in the primal of a call-form creation
        (`jax.custom_vjp(partial(f, cfg))`: 1); 0 when the primal is no such partial."""
        if not isinstance(creation, ast.Call) or not creation.args:
            return 0
        expr, count = creation.args[0], 0
        while self._plain_partial(expr, scope):
            count += len(expr.args) - 1  # type: ignore[attr-defined]
            expr = expr.args[0]  # type: ignore[attr-defined]
        return count

    def _plain_partial(self, expr: ast.expr, scope: Scope) -> bool:
        """`partial(f, a, b)`: positional arguments only (a keyword makes the later parameters
        keyword-only, which JAX's positions do not count)."""
        return isinstance(expr, ast.Call) and len(expr.args) >= 2 and not expr.keywords and \
            not any(isinstance(a, ast.Starred) for a in expr.args) and self.index.qualname(expr.func, scope) in PARTIAL

    def _resolve_function(self, expr: ast.expr, scope: Scope) -> Optional[FunctionNode]:
        if isinstance(expr, ast.Lambda):
            return expr
        depth = 0
        while self._plain_partial(expr, scope) and depth < 4:
            expr, depth = expr.args[0], depth + 1  # type: ignore[attr-defined]
        if depth and isinstance(expr, ast.Lambda):
            return expr
        for binding in self._bindings_of(expr, scope):
            if binding.kind == "def":
                return binding.node  # type: ignore[return-value]
            if binding.kind == "assign" and isinstance(binding.value, ast.Lambda):
                return binding.value
        return None

    def _bindings_of(self, expr: ast.expr, scope: Scope) -> List[Binding]:
        """Bindings for a name, `Class.attr` or `self.attr` (inside a method of Class)."""
        if isinstance(expr, ast.Name):
            return self.index.lookup(expr.id, scope)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            class_scope = self._class_scope_for(expr.value, scope)
            if class_scope is not None:
                return class_scope.bindings.get(expr.attr, [])
        return []

    def _class_scope_for(self, name: ast.Name, scope: Scope) -> Optional[Scope]:
        for binding in self.index.lookup(name.id, scope):
            if binding.kind == "class":
                return self.index.scopes.get(binding.node)
            if binding.kind == "param":
                # `self`/`cls`: the first parameter of a method of the enclosing class.
                for s in scope.chain():
                    if s.is_function and s.parent is not None and s.parent.is_class:
                        fn = s.node
                        first = (fn.args.posonlyargs + fn.args.args)[:1]  # type: ignore[union-attr]
                        if first and first[0] is binding.node:
                            return s.parent
                        return None
        return None

    def derivative_of(self, expr: ast.expr, scope: Scope) -> Optional[CustomDerivative]:
        if not self.by_binding and not self.by_attribute:
            return None  # no derivative yet (most calls of a candidate without one: no lookups)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and self.by_attribute:
            class_scope = self._class_scope_for(expr.value, scope)
            found = self.by_attribute.get((class_scope, expr.attr)) if class_scope is not None else None
            if found is not None:
                return found
        found = [d for d in (self.by_binding.get(b.node) for b in self._bindings_of(expr, scope)) if d is not None]
        if len(found) > 1:  # a name defined again (a notebook's cells): the last definition above the use
            row = getattr(expr, "lineno", 0)
            above = [d for d in found if d.anchor.lineno <= row]  # type: ignore[attr-defined]
            if above:
                return max(above, key=lambda d: d.anchor.lineno)  # type: ignore[attr-defined]
        return found[0] if found else None

    def _resolve_rule(self, expr: ast.expr, scope: Scope, depth: int = 0) -> RuleFunction:
        if isinstance(expr, ast.Constant) and expr.value is None:
            return RuleFunction(expr, None, None, is_none=True)
        if isinstance(expr, ast.Call) and depth < 4 and expr.args and self.index.qualname(expr.func, scope) in PARTIAL:
            inner = self._resolve_rule(expr.args[0], scope, depth + 1)
            return RuleFunction(expr, inner.node, inner.name, inner.bound_positional + len(expr.args) - 1,
                                inner.bound_keywords + tuple(k.arg for k in expr.keywords if k.arg))
        if isinstance(expr, ast.Lambda):
            return RuleFunction(expr, expr, None)
        name = expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else None
        for binding in _nearest_first(self._bindings_of(expr, scope), expr):
            if binding.kind == "def":
                return RuleFunction(expr, binding.node, name)  # type: ignore[arg-type]
            if binding.kind == "assign" and binding.value is not None and depth < 4:
                if isinstance(binding.value, (ast.Lambda, ast.Call)):
                    inner = self._resolve_rule(binding.value, self.index.scope_of(binding.node), depth + 1)
                    inner.expr = expr
                    inner.name = inner.name or name
                    return inner
            break
        grafted = self._grafted(expr)
        if grafted is not None:
            return RuleFunction(expr, grafted, name)
        return RuleFunction(expr, None, name)

    def _grafted(self, expr: ast.expr) -> Optional[FunctionNode]:
        """The grafted def (vjplint.facts.crossmodule.Graft) of a rule another module of the run
        defines, spelled `f_fwd` or `R.f_fwd` here and not bound by this module otherwise."""
        if self.graft is None:
            return None
        spelled = expr
        parts: List[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value  # type: ignore[assignment]
        if not isinstance(expr, ast.Name):
            return None
        found = self.graft.defs.get(".".join([expr.id, *reversed(parts)]))
        if found is None or any(b.kind != "import" for b in self.index.lookup(expr.id, self.index.scope_of(expr))):
            return None
        self.graft.anchors.setdefault(found, spelled)
        return found  # type: ignore[return-value]

    def _registration_helpers(self, calls: List[ast.Call]) -> Dict[str, Tuple[FunctionNode, ast.Call]]:
        """name -> (def, its one registration) of each function of the module that registers rules
        (`defvjp`/`defjvp`) on one of its parameters, once: what `_helper_registration` reads."""
        found: Dict[FunctionNode, List[ast.Call]] = {}
        for call in calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("defvjp", "defjvp") and isinstance(func.value, ast.Name):
                fn = self.index.enclosing_function(call)
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.value.id in (a.arg for a in fn.args.args):
                    found.setdefault(fn, []).append(call)
        return {fn.name: (fn, regs[0]) for fn, regs in found.items()  # type: ignore[union-attr]
                if len(regs) == 1 and not fn.args.vararg and not fn.args.posonlyargs}  # type: ignore[union-attr]

    def _helper_registration(self, call: ast.Call, helper_and_call: Tuple[FunctionNode, ast.Call]) -> None:
        """`_register(f, f_fwd, f_bwd)` where `def _register(fn, fwd, bwd): fn.defvjp(fwd, bwd)`: a
        function of the module whose one registration is made on a parameter, with parameters
        (or constants) as its rules, registers the rules of the call on the derivative it is passed.
        Not `defjvps`: the rules that count its arguments read the registration's own call."""
        if any(isinstance(a, ast.Starred) for a in call.args):
            return
        scope = self.index.scope_of(call)
        helper, inner = helper_and_call
        if self._resolve_function(call.func, scope) is not helper:
            return
        params = [a.arg for a in helper.args.args]  # type: ignore[union-attr]
        bound: Dict[str, ast.expr] = dict(zip(params, call.args))
        bound.update({k.arg: k.value for k in call.keywords if k.arg in params})
        if any(isinstance(a, ast.Starred) for a in inner.args):
            return
        target = bound.get(inner.func.value.id)  # type: ignore[attr-defined]
        d = self.derivative_of(target, scope) if target is not None else None
        if d is None or d.registrations or not _method_fits(d, inner.func.attr):  # type: ignore[attr-defined]
            return

        def argument(value: ast.expr) -> Optional[ast.expr]:
            if isinstance(value, ast.Name) and value.id in params:
                return bound.get(value.id)
            return value if isinstance(value, ast.Constant) else None
        rules_at = [argument(a) for a in inner.args]
        keywords = {k.arg: argument(k.value) for k in inner.keywords if k.arg}
        if any(r is None for r in rules_at) or any(v is None for v in keywords.values()):
            return
        rules = [self._resolve_rule(r, scope) for r in rules_at]  # type: ignore[arg-type]
        d.registrations.append(Registration(inner.func.attr, call, False, rules, keywords))  # type: ignore[arg-type,attr-defined]

    def _grafted_primal(self, expr: ast.expr) -> Optional[CustomDerivative]:
        """The custom derivative another module of the run defines and this one imports and
        registers rules on (`from ops import f; f.defvjp(f_fwd, f_bwd)`): its decorated primal is
        grafted here (vjplint.project.rule_defs), the findings about it reported on `f`."""
        found = self._grafted(expr) if isinstance(expr, ast.Name) else None
        if found is None:
            return None
        return next((d for d in self.derivatives if d.primal is found and not d.registrations), None)

    def _follow_delegations(self) -> None:
        """A rule that only hands its parameters on (`def r(a, b): return _r_impl(a, b)`) is read as
        the function it hands them to: every check sees the same rule whether it is written inline
        or through a helper (`RuleFunction.registered` keeps the registered one)."""
        for d in self.derivatives:
            for reg in d.registrations:
                for rule in reg.rules:
                    if rule.node is None:
                        continue
                    target = delegate_of(self.index, rule.node)
                    if target is not rule.node:
                        rule.registered, rule.node = rule.node, target
                        # the name stays the registered one: JAX names it in its errors

    def _factory_results(self) -> None:
        """`f = make_f(...)` (or `f = Layer(...).build()`), where the function called makes a
        custom derivative and returns it (jax-fem's `ad_wrapper`, a layer's method), and `f = g`
        or `f = Ops.g` naming one: the name bound is that derivative, so its call sites,
        transforms and arguments are read as the derivative's own."""
        for node in self.aliases if self.by_binding else ():
            if node not in self.by_binding:
                d = self.derivative_of(node.value, self.index.scope_of(node))  # type: ignore[attr-defined]
                if d is not None and node not in (d.anchor, d.primal):
                    self.by_binding[node] = d
                    d.bound_at.append(node)
        made = {d.enclosing: d for d in self.derivatives if d.enclosing is not None}
        if not made:
            return
        for parent in self.results:
            call = parent.value  # type: ignore[attr-defined]
            if parent in self.by_binding:
                continue
            fn = self._callee(call.func, self.index.scope_of(call))
            d = made.get(fn) if fn is not None else None
            if d is not None and self._returns_only(fn, d):  # type: ignore[arg-type]
                self.by_binding[parent] = d
                d.bound_at.append(parent)

    def _callee(self, func: ast.expr, scope: Scope) -> Optional[FunctionNode]:
        """The def a call runs: `make(...)`, or `Cls(...).method` / `Cls.method` of a class here."""
        if isinstance(func, ast.Name):
            return next((b.node for b in self.index.lookup(func.id, scope) if b.kind == "def"), None)
        if isinstance(func, ast.Attribute):
            owner = func.value.func if isinstance(func.value, ast.Call) else func.value
            if isinstance(owner, ast.Name):
                for b in self.index.lookup(owner.id, scope):
                    if b.kind == "class":
                        cls_scope = self.index.scopes.get(b.node)
                        found = cls_scope.bindings.get(func.attr, []) if cls_scope is not None else []
                        return next((x.node for x in found if x.kind == "def"), None)
        return None

    def _returns_only(self, fn: ast.FunctionDef, d: CustomDerivative) -> bool:
        """Every `return` of `fn` (its own, not a nested function's) returns the name of `d`."""
        returns = [n for n in self.index.of_node(_own_returns, fn)]
        if not returns:
            return False
        for ret in returns:
            if not isinstance(ret.value, ast.Name) or self.derivative_of(ret.value, self.index.scope_of(ret)) is not d:
                return False
        return True

    # -- registrations and call sites -----------------------------------------------------
    def _registration_call(self, call: ast.Call) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in ALL_REGISTRATION_METHODS):
            return
        scope = self.index.scope_of(call)
        d = self.derivative_of(func.value, scope)
        if d is None:
            d = self._grafted_primal(func.value)
        if d is None or not _method_fits(d, func.attr):
            return
        rules = [self._resolve_rule(a, scope) for a in call.args if not isinstance(a, ast.Starred)]
        keywords = _keywords(call, self.index, scope)
        if func.attr == "defvjp":
            for position, key in enumerate(("fwd", "bwd")):
                if key in keywords and len(rules) <= position:
                    rules.append(self._resolve_rule(keywords[key], scope))
        elif func.attr == "defjvp" and "jvp" in keywords and not rules:
            rules.append(self._resolve_rule(keywords["jvp"], scope))
        d.registrations.append(Registration(func.attr, call, False, rules, keywords))

    def _decorator_registrations(self, fn: ast.FunctionDef) -> None:
        outer = self.index.scope_of(fn)
        for decorator in fn.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            via_partial = (isinstance(decorator, ast.Call) and bool(decorator.args)
                           and self.index.qualname(decorator.func, outer) in PARTIAL)
            if via_partial:
                target = decorator.args[0]  # `@partial(f.defjvp, symbolic_zeros=True)`
            elif _getattr_registration(self.index, decorator, outer):
                # `@getattr(f, "defjvp", lambda f: f)` (a fallback for docs built with a mocked JAX)
                # registers the rule as `@f.defjvp` does.
                target = ast.Attribute(decorator.args[0], decorator.args[1].value, ast.Load())  # type: ignore[union-attr]
            if not (isinstance(target, ast.Attribute) and target.attr in ALL_REGISTRATION_METHODS):
                continue
            d = self.derivative_of(target.value, outer)
            if d is None and isinstance(target.value, ast.Name):
                d = self._grafted_primal(target.value)  # `@f.defjvp` on a primal of another module
            if d is None or not _method_fits(d, target.attr):
                continue
            keywords = _keywords(decorator, self.index, outer) if isinstance(decorator, ast.Call) else {}
            if not via_partial:
                d.registrations.append(Registration(target.attr, fn, True, [RuleFunction(decorator, fn, fn.name)],
                                                    keywords))
                continue
            # The partial call completes the registration: bound args first, the function last.
            rules = [self._resolve_rule(a, outer) for a in decorator.args[1:]]  # type: ignore[union-attr]
            rules.append(RuleFunction(decorator, fn, fn.name))
            if target.attr == "defvjp" and "bwd" in keywords and len(rules) == 1:
                rules.append(self._resolve_rule(keywords["bwd"], outer))
            d.registrations.append(Registration(target.attr, fn, False, rules, keywords))

    def _call_site(self, call: ast.Call) -> None:
        scope = self.index.scope_of(call)
        d = self.derivative_of(call.func, scope)
        if d is None:
            return
        enclosing = self.index.enclosing_function(call)
        d.call_sites.append(CallSite(call, enclosing))

    # -- traced functions -----------------------------------------------------------------
    def _transform_of(self, expr: ast.expr, scope: Scope) -> Optional[Tuple[str, Dict[str, ast.expr]]]:
        q = self.index.qualname(expr, scope)
        if q in TRANSFORMS:
            return q, {}
        if isinstance(expr, ast.Call):
            fq = self.index.qualname(expr.func, scope)
            if fq in PARTIAL and expr.args:
                inner = self.index.qualname(expr.args[0], scope)
                if inner in TRANSFORMS:
                    return inner, _keywords(expr)
            if fq in TRANSFORMS and not expr.args:
                return fq, _keywords(expr)
        return None

    def _traced_by_decorator(self, fn: ast.FunctionDef) -> None:
        outer = self.index.scope_of(fn)
        for decorator in fn.decorator_list:
            found = self._transform_of(decorator, outer)
            if found:
                self._mark_traced(fn, found[0], found[1], outer)
                return

    def _traced_by_call(self, call: ast.Call) -> None:
        if call.func.__class__ is ast.Attribute and call.func.attr not in TRANSFORM_ATTRS:  # type: ignore[attr-defined]
            return  # as in `_from_call`: `x.y(...)` is a transformation only if some transformation ends in `.y`
        scope = self.index.scope_of(call)
        q = self.index.qualname(call.func, scope)
        if q not in TRANSFORMS:
            return
        for position in (TRANSFORMS[q], *EXTRA_TRACED_POSITIONS.get(q, ())):
            if position < len(call.args):
                if q not in DIFF_ARGNUMS and self._through_diff(call.args[position], scope):
                    continue  # `jax.jit(jax.grad(f, argnums=1))`: the outer transform traces every argument
                fn = self._resolve_function(call.args[position], scope)
                bound = False
                if fn is None:  # `jax.grad(model.loss)`, `jax.jit(Model().apply)`: `self` is bound, not traced
                    fn, bound = self._instance_method(call.args[position], scope), True
                if fn is not None and (fn not in self.traced or self.traced[fn].static_params):
                    keywords = _keywords(call)
                    if q in DIFF_ARGNUMS and len(call.args) > 1 and "argnums" not in keywords:
                        keywords["argnums"] = call.args[1]  # `jax.grad(f, 1)`
                    self._mark_traced(fn, q, keywords, scope, bound)

    def _through_diff(self, expr: ast.expr, scope: Scope) -> bool:
        """`expr` is a derivative transformation's call (`jax.grad(f, argnums=1)`, also under
        `functools.partial`-free nesting such as `jax.vmap(jax.grad(f))`) of a function of the module:
        marked traced in every parameter, since the transformation around it traces whatever its
        caller passes, which reaches `f` unchanged. True when it marked one."""
        while isinstance(expr, ast.Call) and expr.args:
            inner = self.index.qualname(expr.func, scope)
            if inner not in TRANSFORMS:
                return False
            if inner in DIFF_ARGNUMS:
                fn = self._resolve_function(expr.args[TRANSFORMS[inner]], scope) \
                    if TRANSFORMS[inner] < len(expr.args) else None
                if fn is None:
                    return False
                self._mark_traced(fn, inner, {k: v for k, v in _keywords(expr).items() if k != "argnums"}, scope,
                                  all_params=True)
                return True
            expr = expr.args[TRANSFORMS[inner]] if TRANSFORMS[inner] < len(expr.args) else None
        return False

    def _instance_method(self, expr: ast.expr, scope: Scope) -> Optional[ast.FunctionDef]:
        """The plain method `obj.name` names, `obj` an instance of a class of this module: a name
        bound once to `Cls(...)`, or the call `Cls(...)` itself."""
        if not isinstance(expr, ast.Attribute):
            return None
        built: Optional[ast.expr] = expr.value
        if isinstance(built, ast.Name):
            bindings = self.index.lookup(built.id, scope)
            built = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
        if not isinstance(built, ast.Call) or not isinstance(built.func, ast.Name):
            return None
        classes = [b for b in self.index.lookup(built.func.id, scope) if b.kind == "class"]
        cls_scope = self.index.scopes.get(classes[0].node) if len(classes) == 1 else None
        methods = cls_scope.bindings.get(expr.attr, []) if cls_scope is not None else []
        if len(methods) != 1 or methods[0].kind != "def":
            return None
        method = methods[0].node
        if not isinstance(method, ast.FunctionDef) or method.decorator_list or \
                not (method.args.posonlyargs or method.args.args):
            return None
        return method

    def _mark_traced(self, fn: FunctionNode, how: str, keywords: Dict[str, ast.expr], scope: Scope,
                     bound: bool = False, all_params: bool = False) -> None:
        static: List[str] = []
        sig = self.index.of_node(Signature.of, fn)
        positional = sig.positional[1:] if bound and sig.positional else sig.positional
        if bound and sig.positional:
            static.append(sig.positional[0])  # a bound method's `self`: JAX sees only what is passed
        nums = self.constant_value(keywords["static_argnums"], scope) if "static_argnums" in keywords else None
        names = self.constant_value(keywords["static_argnames"], scope) if "static_argnames" in keywords else None
        for item in (nums,) if isinstance(nums, int) else (nums or ()):
            if type(item) is int and -len(positional) <= item < len(positional):
                static.append(positional[item])
        static.extend((names,) if isinstance(names, str) else (names or ()))
        if how in DIFF_ARGNUMS and not all_params:  # `jax.grad(f, argnums=1)` traces only `argnums`; the rest pass as given
            argnums = self.constant_value(keywords["argnums"], scope) if "argnums" in keywords else 0
            wanted = (argnums,) if type(argnums) is int else argnums
            if isinstance(wanted, tuple) and wanted and all(type(i) is int for i in wanted):
                chosen = {positional[i] for i in wanted if -len(positional) <= i < len(positional)}
                static.extend(p for p in positional if p not in chosen and p not in static)
        before = self.traced.get(fn)
        if before is not None:  # traced twice (`jax.jit(f)` and `jax.grad(f, 1)`): a parameter either traces is traced
            if set(before.static_params) <= set(static):
                return
            static = [p for p in static if p in before.static_params]
        self.traced[fn] = TracedFunction(fn, how, tuple(static))


def _nearest_first(bindings: List[Binding], use: ast.AST) -> List[Binding]:
    """A name bound more than once (a notebook's cells define `f_bwd` again): the last binding
    above the use first, as the code runs in order; the bindings as they are otherwise."""
    if len(bindings) < 2:
        return bindings
    row = getattr(use, "lineno", 0)
    above = [b for b in bindings if getattr(b.node, "lineno", row + 1) <= row]
    if not above:
        return bindings
    last = max(above, key=lambda b: b.node.lineno)  # type: ignore[attr-defined]
    return [last, *(b for b in bindings if b is not last)]


# Reverse- and forward-mode derivatives trace only the positions `argnums` names (default 0).
DIFF_ARGNUMS = frozenset({f"jax.{n}" for n in ("grad", "value_and_grad", "jacrev", "jacfwd", "hessian")})


def _keywords(call: ast.expr, index=None, scope=None) -> Dict[str, ast.expr]:
    """The call's keywords; with `index`, `**OPTS` too, where `OPTS` is bound once to a dict literal with
    string keys or a `dict(k=v)` call (`f.defvjp(fwd, bwd, **REMAT)`: its options count as written)."""
    if not isinstance(call, ast.Call):
        return {}
    found: Dict[str, ast.expr] = {}
    for k in call.keywords:
        if k.arg is not None:
            found[k.arg] = k.value
        elif index is not None and isinstance(k.value, ast.Name):
            found.update(_spread_dict(index, k.value, scope))
    return found


def _spread_dict(index, name: ast.Name, scope) -> Dict[str, ast.expr]:
    bindings = index.lookup(name.id, scope)
    value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
    if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                           for k in value.keys):
        return {k.value: v for k, v in zip(value.keys, value.values)}  # type: ignore[union-attr]
    if isinstance(value, ast.Call) and not value.args and index.qualname(value.func) == "builtins.dict":
        return {k.arg: k.value for k in value.keywords if k.arg is not None}
    return {}


def _getattr_registration(index, decorator: ast.expr, scope) -> bool:
    """`getattr(f, "defjvp", ...)`: a registration method named by a string literal."""
    return (isinstance(decorator, ast.Call) and len(decorator.args) >= 2 and not decorator.keywords
            and isinstance(decorator.args[1], ast.Constant)
            and decorator.args[1].value in ALL_REGISTRATION_METHODS
            and index.qualname(decorator.func, scope) == "builtins.getattr")


def _method_fits(d: CustomDerivative, method: str) -> bool:
    """`defvjp` registers a custom_vjp, `defjvp`/`defjvps` a custom_jvp; each API has its own spellings."""
    if method not in API_REGISTRATION_METHODS.get(d.api, REGISTRATION_METHODS):
        return False
    return (d.kind == "vjp") == (method in ("defvjp", "def_fwd", "def_bwd"))


def _own_returns(fn: ast.AST) -> List[ast.Return]:
    """The `return` statements of `fn`'s own body (a nested function's are its own)."""
    out: List[ast.Return] = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out
