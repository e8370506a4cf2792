"""Facts derived from one file's model, each computed on first use and kept for every rule.

The collector builds `FileModel` (what is defined and registered where); the facts answer the
questions several rules and the codemod ask of it: how many arguments a rule accepts, which
positions are nondiff, what a function returns, whether a nondiff argument is an array.
`model.facts` is the one instance per file.

May import: model, syntax, settings and the top-level leaf modules; the collector
(facts/collect.py) builds the model and attaches these facts.
"""

from __future__ import annotations

import ast
import weakref
from typing import (TYPE_CHECKING, AbstractSet, Any, Callable, Dict, FrozenSet, Generic, Hashable, List, Optional,
                    Tuple, TypeVar)

from vjplint.facts import registry, signatures, values
from vjplint.facts.signatures import Arity, VjpRules, function_arity, is_placeholder, plural
from vjplint.facts.values import Return, describe_traced, return_branches
from vjplint.model.jaxapi import PARTIAL, EXTRA_TRACED_POSITIONS, TRANSFORMS
from vjplint.model.file_model import CustomDerivative, FileModel, Registration, RuleFunction, Signature, TracedFunction
from vjplint.model.semantic import FunctionNode, own_nodes
from vjplint.syntax.walk import walk

if TYPE_CHECKING:
    from vjplint.facts.crossmodule import ExternalFacts, Graft
    from vjplint.facts.forward import ForwardMode
    from vjplint.facts.infer import Hints, Verdict
    from vjplint.facts.integers import Integers
    from vjplint.facts.value_kinds import Values as ValuesEngine

__all__ = ["Arity", "Facts", "Return", "VjpRules", "describe_traced", "function_arity", "is_placeholder", "plural",
           "return_branches"]

V = TypeVar("V")


class Memo(Generic[V]):
    """A fact's values, keyed by the objects they describe: AST nodes and the model's records,
    which hash by identity (a key keeps its object alive while the entry lives); `extra`, a
    hashable detail of the question. The one memo style of the facts (CONTRIBUTING.md)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: Dict[Hashable, V] = {}

    def __call__(self, objects: Tuple[Hashable, ...], compute: Callable[[], V], extra: Hashable = None) -> V:
        key = objects[0] if len(objects) == 1 and extra is None else (*objects, extra)
        try:
            return self._entries[key]
        except KeyError:
            value = self._entries[key] = compute()
            return value


class Facts:
    """The memoised facts of one `FileModel`."""

    def __init__(self, model: FileModel, external: Optional["ExternalFacts"] = None,
                 hints: Optional["Hints"] = None, graft: Optional["Graft"] = None) -> None:
        # A proxy, not the model: the model holds its facts, and a reference back would make a
        # cycle that keeps the file's tree alive until the cyclic collector runs.
        self.model: FileModel = weakref.proxy(model)  # type: ignore[assignment]
        # What the run contributes, given at collection and never set afterwards: what other
        # modules of the run do with this module's names (vjplint.facts.crossmodule; None in
        # single-file lint, where nothing is known about other modules) and the `array-names` /
        # `static-names` hints (vjplint.facts.value_kinds reads them as the weakest source of kinds).
        self._external = external
        self._hints = hints
        self._graft = graft  # rules of other modules of the run grafted into the model (crossmodule.Graft)
        # The registered queries' answers (vjplint.facts.registry), keyed by (query, arguments).
        self._answers: Dict[Hashable, Any] = {}
        self._rule_arity: Memo[Optional[Arity]] = Memo()
        self._decorated_arity: Memo[Optional[Arity]] = Memo()
        self._primal_signature: Memo[Optional[Signature]] = Memo()
        self._nondiff_positions: Memo[Optional[Tuple[int, ...]]] = Memo()
        self._primal_arg_counts: Memo[Optional[FrozenSet[int]]] = Memo()
        self._differentiable: Memo[Optional[Tuple[str, ...]]] = Memo()
        self._vjp_rules: Memo[List[VjpRules]] = Memo()
        self._checked: Dict[CustomDerivative, List[VjpRules]] = {}
        self._swap: Memo[Optional[str]] = Memo()
        self._returns_array: Memo[bool] = Memo()
        self._verdicts: Memo[List["Verdict"]] = Memo()
        self._forward: Dict[str, "ForwardMode"] = {}
        self._values: Optional["ValuesEngine"] = None
        self._integers: Optional["Integers"] = None
        self._transform_calls: Optional[List[ast.Call]] = None
        self._handed: Optional[Dict[Tuple[CustomDerivative, bool], List[Tuple[ast.Call, str]]]] = None
        self._partials: Optional[Dict[CustomDerivative, List[ast.Call]]] = None
        self._name_calls: Optional[List[ast.Call]] = None
        self._calls_by_name: Optional[Dict[str, List[ast.Call]]] = None
        self._jax_internal: Optional[bool] = None
        self._calls_in: Memo[List[ast.Call]] = Memo()
        self._calls_by_position: Memo[List[ast.Call]] = Memo()
        self._unpackings: Memo[Dict[str, List[ast.Assign]]] = Memo()
        self._own_of_types: Memo[List[ast.AST]] = Memo()
        # What a layer above derives from the whole model (the fix planner's), by its function: `of_model`.
        self._of_model: Dict[Callable[[FileModel], Any], Any] = {}
        # What a layer above derives per question (the residual planner's answer per derivative and
        # moved positions, which the rule and the codemod share): `derived`.
        self._derived: Dict[Hashable, Any] = {}
        self._of_function: Dict[Callable[[FileModel, Any], Any], Dict[Any, Any]] = {}

    @property
    def external(self) -> Optional["ExternalFacts"]:
        """What other modules of the run do with this module's names; None in single-file lint."""
        return self._external

    @property
    def graft(self) -> Optional["Graft"]:
        """The rules registered here and defined in another module of the run, grafted into the
        model (vjplint.facts.crossmodule.Graft); None when there are none."""
        return self._graft

    @property
    def hints(self) -> Optional["Hints"]:
        """The `array-names` / `static-names` hints, when the settings give any."""
        return self._hints

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """`model.facts.NAME(...)`: the registered query NAME (vjplint.facts.registry), bound to
        this file's model and memo table once, then found as a plain attribute."""
        found = registry.find(name)
        if found is None:
            raise AttributeError(f"no fact or query named {name!r}")
        bound = registry.bind(found, self.model, self._answers)
        self.__dict__[name] = bound
        return bound

    def derived(self, compute: Callable[..., V], *args: Hashable) -> V:
        """`compute(model, *args)`, once per file and arguments: the memo of what a layer above the
        facts derives per question, keyed by its module-level function and the arguments."""
        key = (compute, args)
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = compute(self.model, *args)
            return value

    def of_function(self, compute: Callable[[FileModel, FunctionNode], V], fn: FunctionNode) -> V:
        """`compute(model, fn)`, once per function of this file, keyed by the module-level
        `compute` (a fact module's table of one function, asked about many names)."""
        table = self._of_function.get(compute)
        if table is None:
            table = self._of_function[compute] = {}
        try:
            return table[fn]
        except KeyError:
            value = table[fn] = compute(self.model, fn)
            return value

    def of_model(self, compute: Callable[[FileModel], V]) -> V:
        """`compute(model)`, once per file: the memo of what a layer above the facts (the fix
        planner) derives from the whole model, keyed by its module-level function."""
        try:
            return self._of_model[compute]
        except KeyError:
            value = self._of_model[compute] = compute(self.model)
            return value

    # -- signatures and arities ---------------------------------------------------------------
    def rule_arity(self, rule: Optional[RuleFunction]) -> Optional[Arity]:
        """Positional arguments `rule` accepts as JAX calls it (after functools.partial and method
        binding); None when not statically known."""
        if rule is None:
            return None
        return self._rule_arity((rule,), lambda: signatures.rule_arity(self.model, rule))

    def decorated_rule_arity(self, rule: RuleFunction) -> Optional[Arity]:
        """Arity of a `@f.defjvp` rule (only the other decorators matter)."""
        return self._decorated_arity((rule,), lambda: signatures.decorated_rule_arity(self.model, rule))

    def primal_signature(self, d: CustomDerivative) -> Optional[Signature]:
        """The primal's signature; None when a decorator applied before custom_vjp may change it."""
        return self._primal_signature((d,), lambda: signatures.primal_signature(self.model, d))

    def nondiff_positions(self, d: CustomDerivative) -> Optional[Tuple[int, ...]]:
        """Sorted nondiff positions when every entry is a valid index; None otherwise (VJP103's cases)."""
        return self._nondiff_positions((d,), lambda: signatures.nondiff_positions(self.model, d))

    def primal_arg_counts(self, d: CustomDerivative) -> Optional[FrozenSet[int]]:
        """Every number of positional arguments JAX binds for the primal (defaults filled in)."""
        return self._primal_arg_counts((d,), lambda: signatures.primal_arg_counts(self.model, d))

    def primal_arg_count(self, d: CustomDerivative) -> Optional[int]:
        """k, the positional arguments JAX binds for the primal, when there is one such number."""
        return signatures.primal_arg_count(self.model, d)

    def differentiable_names(self, d: CustomDerivative) -> Optional[Tuple[str, ...]]:
        """Names of the positions bwd returns cotangents for (`args[i]` for `*args` extras)."""
        return self._differentiable((d,), lambda: signatures.differentiable_names(self.model, d))

    def nondiff_keyword(self, d: CustomDerivative, position: int) -> str:
        """'nondiff_argnums' or 'nondiff_argnames', whichever put `position` there."""
        return signatures.nondiff_keyword(self.model, d, position)

    # -- registrations ------------------------------------------------------------------------
    def vjp_rules(self, d: CustomDerivative) -> List[VjpRules]:
        """Every call-form `defvjp` registration of `d`, with its fwd and bwd."""
        return self._vjp_rules((d,), lambda: signatures.vjp_rules(d))

    def checked_vjp_rules(self, d: CustomDerivative) -> List[VjpRules]:
        """`vjp_rules` minus swapped registrations, placeholder rules as None."""
        found = self._checked.get(d)  # asked by a dozen rules per derivative: a plain map
        if found is None:
            found = self._checked[d] = signatures.checked_vjp_rules(self.model, d)
        return found

    def jvp_rules(self, d: CustomDerivative) -> List[Tuple[Registration, RuleFunction]]:
        """Every `defjvp` rule of a custom_jvp (decorator or call form), stubs excluded."""
        return signatures.jvp_rules(d)

    def defjvp_symbolic_zeros(self, reg: Registration) -> Tuple[Optional[bool], Optional[ast.expr]]:
        """Whether a `defjvp` registration (call form, or `@partial(f.defjvp, ...)`) passes
        `symbolic_zeros` true, with the flag's expression; None when it cannot be told."""
        return signatures.defjvp_symbolic_zeros(self.model, reg)

    def rules_of(self, d: CustomDerivative) -> List[Tuple[str, RuleFunction]]:
        """Every resolved rule of every registration, with its role, each function once."""
        return signatures.rules_of(d)

    # -- each API's protocol (docs/facts/README.md; signatures.py computes) --------------------
    def caller(self, d: CustomDerivative) -> str:
        """Who calls `d`'s rules, for messages: 'JAX', 'nnx.custom_vjp', 'equinox'..."""
        return signatures.caller(d)

    def bwd_arity(self, d: CustomDerivative, rule: Optional[RuleFunction]) -> Optional[Arity]:
        """`rule_arity` as `d`'s API calls bwd (nnx's simple mode fills `updates_g` by keyword)."""
        return signatures.bwd_arity(self.model, d, rule)

    def equinox_rules(self, d: CustomDerivative) -> Optional[signatures.EquinoxRules]:
        """An `eqx.filter_custom_vjp`'s def_fwd and def_bwd rules (placeholders as None)."""
        return signatures.equinox_rules(d)

    def equinox_rule_arity(self, rule: Optional[RuleFunction]) -> Optional[Arity]:
        """Arity of an equinox def_fwd/def_bwd/def_jvp rule (decorator or call form)."""
        return signatures.equinox_rule_arity(self.model, rule)

    def equinox_rule_args(self, d: CustomDerivative, role: str, legacy: bool = False) -> Optional[int]:
        """Positional arguments equinox passes fwd (`role='fwd'`) or bwd, when known (`legacy`: through
        the deprecated `defvjp`)."""
        return signatures.equinox_rule_args(self.model, d, role, legacy)

    def equinox_arity_mismatch(self, d: CustomDerivative, role: str) -> Optional[Tuple[RuleFunction, Arity, int, Signature]]:
        """(rule, its arity, the arguments equinox passes, the primal's signature) when an equinox
        def_fwd (`role='fwd'`) or def_bwd rule cannot take what equinox passes it; else None."""
        rules = self.equinox_rules(d)
        n = self.equinox_rule_args(d, role, rules is not None and rules.legacy)
        rule = getattr(rules, role, None) if rules is not None else None
        if rule is None or rule.node is None or n is None:
            return None
        arity = self.equinox_rule_arity(rule)
        sig = self.primal_signature(d)
        if arity is None or arity.accepts(n) or sig is None:
            return None
        return rule, arity, n, sig

    def custom_gradient_returns(self, d: CustomDerivative) -> List[signatures.GradientPair]:
        """Each return of a jax.custom_gradient primal with its vjp function."""
        return signatures.custom_gradient_returns(self.model, d)

    def swap_evidence(self, d: CustomDerivative, fwd: RuleFunction, bwd: RuleFunction) -> Optional[str]:
        """Why `defvjp(first, second)` looks like `defvjp(bwd, fwd)`; None when it does not."""
        return self._swap((d, fwd, bwd), lambda: signatures.swap_evidence(self.model, d, fwd, bwd))

    def derivative_named(self, expr: ast.expr) -> Optional[CustomDerivative]:
        """The custom derivative of this module that the name `expr` refers to, if any."""
        return values.derivative_named(self.model, expr)

    def partials_of(self, d: CustomDerivative) -> List[ast.Call]:
        """The `functools.partial(d, ...)` calls of the module."""
        if self._partials is None:
            partials: Dict[CustomDerivative, List[ast.Call]] = {}
            # `jax.custom_vjp(partial(f, cfg))`: that partial makes the primal (its bound arguments are
            # not the custom function's: JAX counts positions after them), it never calls it.
            making = set()
            for made in self.model.derivatives:
                expr = made.creation.args[0] if isinstance(made.creation, ast.Call) and made.creation.args else None
                while isinstance(expr, ast.Call) and expr.args and self.model.index.qualname(expr.func) in PARTIAL:
                    making.add(expr)
                    expr = expr.args[0]
            for node in self.model.index.of_type(ast.Call):
                if node in making:
                    continue
                if node.args and self.model.index.qualname(node.func) in PARTIAL:  # type: ignore[attr-defined]
                    target = self.derivative_named(node.args[0])  # type: ignore[attr-defined]
                    if target is not None:
                        partials.setdefault(target, []).append(node)  # type: ignore[arg-type]
            self._partials = partials
        return self._partials.get(d, [])

    # -- functions and what they return ---------------------------------------------------------
    def own_nodes(self, fn: FunctionNode) -> List[ast.AST]:
        """`fn`'s own body (nested defs, lambdas and classes appear, their insides do not)."""
        return self.model.index.of_node(own_nodes, fn)

    def own_of_types(self, fn: FunctionNode, types: Tuple[type, ...]) -> List[ast.AST]:
        """`own_nodes(fn)` of exactly these classes, in its order (kept per function and types)."""
        return self._own_of_types((fn,), lambda: [n for n in self.own_nodes(fn) if n.__class__ in types], types)

    def walk(self, node: ast.AST) -> List[ast.AST]:
        """`ast.walk(node)`'s nodes in its order, nested functions included, expression contexts
        left out; kept per node (the facts and rules of one derivative walk the same rule functions
        many times). The list is shared, never to be changed. The whole module's is the semantic
        index's node list (the same nodes in the same order), not a walk of its own."""
        index = self.model.index
        if node is index.module:
            return index.nodes
        return index.of_node(walk, node)

    def calls_in(self, node: ast.AST) -> List[ast.Call]:
        """The calls in `walk(node)`, in its order (kept); the whole module's, the index's table."""
        index = self.model.index
        if node is index.module:
            return index.of_type(ast.Call)  # type: ignore[return-value]
        return self._calls_in((node,), lambda: [n for n in self.walk(node) if n.__class__ is ast.Call])

    def calls_by_position(self, node: ast.AST) -> List[ast.Call]:
        """The calls in `walk(node)` in source order (line, then column; kept)."""
        return self._calls_by_position((node,), lambda: sorted(self.calls_in(node),
                                                              key=lambda n: (n.lineno, n.col_offset)))

    def unpackings(self, node: ast.AST) -> Dict[str, List[ast.Assign]]:
        """{name: the assignments `a, b = name`} in `walk(node)` (one target, a tuple or list,
        unpacking a bare name), each list in walk order (kept)."""
        def compute() -> Dict[str, List[ast.Assign]]:
            found: Dict[str, List[ast.Assign]] = {}
            for n in self.walk(node):
                if n.__class__ is ast.Assign and len(n.targets) == 1 and \
                        isinstance(n.targets[0], (ast.Tuple, ast.List)) and isinstance(n.value, ast.Name):
                    found.setdefault(n.value.id, []).append(n)
            return found
        return self._unpackings((node,), compute)

    def returns_of(self, fn: FunctionNode) -> List[Return]:
        """Each return of `fn` in source order; empty for generators; a lambda's body."""
        return self.model.index.of_node(values.returns_of, fn)

    def primal_returns_array(self, d: CustomDerivative) -> bool:
        """Every return of the primal is provably one array (so the cotangent is one too)."""
        return self._returns_array((d,), lambda: values.primal_returns_array(self.model, d))

    def name_calls(self) -> List[ast.Call]:
        """Calls of a bare name (`f(...)`), in `ast.walk` order."""
        if self._name_calls is None:
            self._name_calls = [n for n in self.model.index.of_type(ast.Call)  # type: ignore[misc]
                                if isinstance(n.func, ast.Name)]  # type: ignore[attr-defined]
        return self._name_calls

    def calls_of_name(self, identifier: str) -> List[ast.Call]:
        """The calls of the bare name `identifier` (`f(...)`), in `ast.walk` order."""
        if self._calls_by_name is None:
            by_name: Dict[str, List[ast.Call]] = {}
            for call in self.name_calls():
                by_name.setdefault(call.func.id, []).append(call)  # type: ignore[attr-defined]
            self._calls_by_name = by_name
        return self._calls_by_name.get(identifier, [])

    def sequence_length(self, expr: ast.expr, fn: FunctionNode) -> Optional[Tuple[int, bool, ast.expr]]:
        """(length, exact, literal) of a tuple/list literal or a name `fn` assigns once to one."""
        return values.sequence_length(self.model, expr, fn)

    def not_a_sequence(self, expr: Optional[ast.expr], fn: FunctionNode,
                       arrays: AbstractSet[str] = frozenset()) -> Optional[str]:
        """Why `expr` can never evaluate to a tuple or list ('None', 'an array'); None when it may."""
        return values.not_a_sequence(self.model, expr, fn, arrays)

    # -- where code runs ------------------------------------------------------------------------
    def traced_reason(self, expr: ast.expr, fn: FunctionNode, traced: TracedFunction) -> Optional[str]:
        """Why `expr`, evaluated inside traced `fn`, is a tracer; None when it is not (or unknown)."""
        return values.traced_reason(self.model, expr, fn, traced)

    def expects_failure(self, node: ast.AST) -> bool:
        """Inside `pytest.raises`/`assertRaises`: a test that wants the error JAX raises."""
        return values.expects_failure(self.model, node)

    def is_transform_argument(self, node: ast.AST) -> bool:
        """`node` is the function argument of jax.grad/jit/vmap/... (so it gets called)."""
        return values.is_transform_argument(self.model, node)

    def transform_calls(self) -> List[ast.Call]:
        """Calls of a transformation (`jax.jit(...)`, `lax.cond(...)`, ...; `jaxapi.TRANSFORMS`)."""
        if self._transform_calls is None:
            self._transform_calls = [n for n in self.model.index.of_type(ast.Call)  # type: ignore[misc]
                                     if n.args and self.model.index.qualname(n.func) in TRANSFORMS]  # type: ignore
        return self._transform_calls

    def transforms_given(self, d: CustomDerivative, first_only: bool = False) -> List[Tuple[ast.Call, str]]:
        """(call, its qualified name) of the transformation calls `d` is handed to, in a slot the
        transformation traces (`jaxapi.TRANSFORMS`, `EXTRA_TRACED_POSITIONS`), or as the first
        argument (`first_only`); in module order. One pass for all derivatives: per derivative,
        it was quadratic in a module with hundreds of them."""
        if self._handed is None:
            handed: Dict[Tuple[CustomDerivative, bool], List[Tuple[ast.Call, str]]] = {}
            for call in self.transform_calls():
                q = self.model.index.qualname(call.func) or ""
                given = dict.fromkeys(t for t in (self.derivative_named(call.args[s])
                                                  for s in (TRANSFORMS[q], *EXTRA_TRACED_POSITIONS.get(q, ()))
                                                  if s < len(call.args)) if t is not None)
                for key in given:
                    handed.setdefault((key, False), []).append((call, q))
                first = self.derivative_named(call.args[0])
                if first is not None:
                    handed.setdefault((first, True), []).append((call, q))
            self._handed = handed
        return self._handed.get((d, first_only), [])

    def values(self) -> "ValuesEngine":
        """The module's value kinds (`vjplint.facts.value_kinds`), computed per expression on demand."""
        if self._values is None:
            from vjplint.facts.value_kinds import Values

            self._values = Values(self.model)
        return self._values

    def integers(self) -> "Integers":
        """Which values the module shows to be integers, and tangents built as integer arrays
        (`vjplint.facts.integers`), computed per expression on demand."""
        if self._integers is None:
            from vjplint.facts.integers import Integers

            self._integers = Integers(self.model)
        return self._integers

    # -- nondiff arguments ----------------------------------------------------------------------
    def verdicts(self, d: CustomDerivative, hints: Optional["Hints"] = None) -> List["Verdict"]:
        """One verdict per resolved nondiff position of `d`: VJP101, VJP102, VJP106 and the codemod
        read the same ones. `hints`: the settings' name hints, by default those given at collection."""
        from vjplint.facts.infer import Hints, infer_nondiff

        if hints is None:
            hints = self._hints or Hints()

        return self._verdicts((d,), lambda: infer_nondiff(self.model, d, hints), hints)

    # -- analyses several rules read ---------------------------------------------------------
    def forward_mode(self, kind: str = "vjp") -> "ForwardMode":
        """How forward-mode differentiation reaches the module's custom_vjps (`vjplint.facts.forward`;
        VJP315), or with `kind="jvp"` its custom_jvps (a second derivative differentiating a jvp
        rule, VJP369), computed per expression on demand."""
        if kind not in self._forward:
            from vjplint.facts.forward import ForwardMode

            self._forward[kind] = ForwardMode(self.model, kind)
        return self._forward[kind]

    # -- the module -----------------------------------------------------------------------------
    def is_jax_internal(self) -> bool:
        """JAX's own modules import `jax._src` and never the public `jax` package."""
        if self._jax_internal is None:
            names: List[str] = []
            index = self.model.index  # (two tables, not a walk of every node: the order does not matter here)
            for node in (*index.of_type(ast.Import), *index.of_type(ast.ImportFrom)):
                if isinstance(node, ast.Import):
                    names.extend(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names.append(node.module)
            jax_names = [n for n in names if n == "jax" or n.startswith("jax.")]
            self._jax_internal = bool(jax_names) and all(n.startswith("jax._src") for n in jax_names)
        return self._jax_internal
