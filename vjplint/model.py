"""The shared semantic model: every custom derivative in a file, built once, read by every rule."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from vjplint.semantic import FunctionNode, SemanticIndex


@dataclass
class Signature:
    """A function's parameters as JAX binds them."""

    positional: List[str]
    n_defaults: int
    vararg: Optional[str]
    kwonly: List[str]
    kwarg: Optional[str]
    annotations: Dict[str, ast.expr]
    defaults: Dict[str, ast.expr]
    param_nodes: Dict[str, ast.arg]

    @classmethod
    def of(cls, fn: FunctionNode) -> "Signature":
        args = fn.args
        positional_args = [*args.posonlyargs, *args.args]
        positional = [a.arg for a in positional_args]
        defaults = dict(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                defaults[arg.arg] = default
        every = [*positional_args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
        return cls(
            positional=positional,
            n_defaults=len(args.defaults),
            vararg=args.vararg.arg if args.vararg else None,
            kwonly=[a.arg for a in args.kwonlyargs],
            kwarg=args.kwarg.arg if args.kwarg else None,
            annotations={a.arg: a.annotation for a in every if a.annotation is not None},
            defaults=defaults,
            param_nodes={a.arg: a for a in every},
        )

    @property
    def required(self) -> int:
        return len(self.positional) - self.n_defaults


@dataclass
class RuleFunction:
    """A fwd, bwd or jvp rule as passed to defvjp/defjvp, resolved where possible."""

    expr: ast.expr  # the expression at the registration site
    node: Optional[FunctionNode]  # the def or lambda, when it resolves in this file
    name: Optional[str]
    bound_positional: int = 0  # functools.partial(rule, a, b) binds two leading args
    bound_keywords: Tuple[str, ...] = ()
    is_none: bool = False

    @property
    def signature(self) -> Optional[Signature]:
        return Signature.of(self.node) if self.node is not None else None

    def effective_positional(self) -> Optional[List[str]]:
        """Positional parameters left after partial binding, or None when unknown."""
        sig = self.signature
        if sig is None:
            return None
        remaining = sig.positional[self.bound_positional :]
        return [p for p in remaining if p not in self.bound_keywords]


@dataclass
class Registration:
    """One `defvjp`/`defjvp`/`defjvps` call or decorator."""

    method: str  # "defvjp", "defjvp", "defjvps"
    node: ast.AST  # the Call, or the decorated FunctionDef for `@f.defjvp`
    as_decorator: bool
    rules: List[RuleFunction]
    keywords: Dict[str, ast.expr]


@dataclass
class CallSite:
    call: ast.Call
    enclosing: Optional[FunctionNode]
    positional_offset: int = 0  # `Class.method(obj, x)` keeps positions as they are


@dataclass
class CustomDerivative:
    kind: str  # "vjp" or "jvp"
    name: str
    anchor: ast.AST  # where the definition is reported (decorator or assignment)
    creation: ast.expr  # the custom_vjp(...) / partial(custom_vjp, ...) / bare name expression
    primal: Optional[FunctionNode]
    keywords: Dict[str, ast.expr]  # nondiff_argnums=, nondiff_argnames=, symbolic_zeros=...
    nondiff: Tuple[int, ...]  # resolved, valid, sorted positions
    nondiff_unresolved: bool  # argnums present but not statically known
    enclosing: Optional[FunctionNode]  # the function it is defined in, if any
    class_node: Optional[ast.ClassDef]  # the class whose body defines it, if any
    registrations: List[Registration] = field(default_factory=list)
    call_sites: List[CallSite] = field(default_factory=list)
    is_alias: bool = False  # defined through a configured in-house wrapper

    @property
    def signature(self) -> Optional[Signature]:
        return Signature.of(self.primal) if self.primal is not None else None

    @property
    def registration(self) -> Optional[Registration]:
        return self.registrations[0] if self.registrations else None

    def rule(self, role: str) -> Optional[RuleFunction]:
        """'fwd', 'bwd' (custom_vjp) or 'jvp' (custom_jvp defjvp)."""
        reg = self.registration
        if reg is None:
            return None
        if reg.method == "defvjp":
            index = {"fwd": 0, "bwd": 1}.get(role)
            if index is not None and index < len(reg.rules):
                return reg.rules[index]
        if reg.method == "defjvp" and role == "jvp" and reg.rules:
            return reg.rules[0]
        return None

    def nondiff_names(self) -> List[Tuple[int, str]]:
        sig = self.signature
        if sig is None:
            return []
        return [(i, sig.positional[i]) for i in self.nondiff if i < len(sig.positional)]


@dataclass
class TracedFunction:
    node: FunctionNode
    how: str  # "jax.jit", "jax.grad", ...
    static_params: Tuple[str, ...] = ()


@dataclass
class FileModel:
    """What the collector learned about one module."""

    module: ast.Module
    index: SemanticIndex
    derivatives: List[CustomDerivative]
    traced: Dict[FunctionNode, TracedFunction]
    lines: List[str]
    cache: Dict[object, object] = field(default_factory=dict)  # per-file memo shared by rules

    def derivative_for_node(self, node: ast.AST) -> Optional[CustomDerivative]:
        for d in self.derivatives:
            if d.primal is node or d.anchor is node:
                return d
        return None
