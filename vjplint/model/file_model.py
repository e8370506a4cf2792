"""The shared semantic model: every custom derivative in a file, built once, read by every rule."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from vjplint.model.jaxapi import API_LABELS
from vjplint.syntax.positions import byte_to_char
from vjplint.model.semantic import FunctionNode, SemanticIndex



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
        """The signature of `fn`, computed on each call: `model.signature(fn)` keeps it per file
        (rules and facts ask again and again; a Signature is never changed: `without_first`
        makes another)."""
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

    def without_first(self) -> "Signature":
        """The signature of the bound method (`self` given)."""
        if not self.positional:
            return self
        first = self.positional[0]
        return Signature(self.positional[1:], min(self.n_defaults, len(self.positional) - 1), self.vararg,
                         self.kwonly, self.kwarg, {k: v for k, v in self.annotations.items() if k != first},
                         {k: v for k, v in self.defaults.items() if k != first},
                         {k: v for k, v in self.param_nodes.items() if k != first})


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class RuleFunction:
    """A fwd, bwd or jvp rule as passed to defvjp/defjvp, resolved where possible."""

    expr: ast.expr  # the expression at the registration site
    node: Optional[FunctionNode]  # the def or lambda, when it resolves in this file
    name: Optional[str]
    bound_positional: int = 0  # functools.partial(rule, a, b) binds two leading args
    bound_keywords: Tuple[str, ...] = ()
    is_none: bool = False
    # The function registered when `node` is what it only delegates to (`def r(a, b): return
    # _r_impl(a, b)`: `node` is `_r_impl`, which receives what JAX passes `r`); None otherwise.
    registered: Optional[FunctionNode] = None

    @property
    def signature(self) -> Optional[Signature]:
        """The signature of `node` (made once: every rule asks)."""
        try:
            return self.__dict__["_signature"]
        except KeyError:
            sig = self.__dict__["_signature"] = Signature.of(self.node) if self.node is not None else None
            return sig

    @property
    def called(self) -> Optional[FunctionNode]:
        """The function JAX calls (and names in its errors): the registered one."""
        return self.registered or self.node

    def as_registered(self) -> "RuleFunction":
        """This rule with `node` the registered function: a fix rewrites what JAX calls, never a
        helper it delegates to (which other code may call)."""
        if self.registered is None:
            return self
        return RuleFunction(self.expr, self.registered, self.name, self.bound_positional, self.bound_keywords,
                            self.is_none)

    def effective_positional(self) -> Optional[List[str]]:
        """Positional parameters left after partial binding, or None when unknown."""
        sig = self.signature
        if sig is None:
            return None
        remaining = sig.positional[self.bound_positional :]
        return [p for p in remaining if p not in self.bound_keywords]


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class Registration:
    """One `defvjp`/`defjvp`/`defjvps` call or decorator."""

    method: str  # "defvjp", "defjvp", "defjvps"
    node: ast.AST  # the Call, or the decorated FunctionDef for `@f.defjvp`
    as_decorator: bool
    rules: List[RuleFunction]
    keywords: Dict[str, ast.expr]


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class CallSite:
    """A call of a custom derivative."""

    call: ast.Call
    enclosing: Optional[FunctionNode]
    positional_offset: int = 0  # `Class.method(obj, x)` keeps positions as they are


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class CustomDerivative:
    """A custom_vjp or custom_jvp made in the module, with its rules."""

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
    via: str = ""  # through an inferred wrapper (vjplint.project.index): "through the wrapper `w`, which calls ..."
    # Whose protocol the rules apply (docs/facts/README.md): "jax", "nnx", "linen", "equinox",
    # "custom_gradient".
    api: str = "jax"
    # nnx only: "default" (bwd gets `(input_updates_g, out_g)`), "simple" (`graph_updates=False` or
    # `graph=False`: JAX's protocol plus an `updates_g` keyword) or "either" (not statically known).
    mode: Optional[str] = None
    bound_self: bool = False  # `jax.custom_vjp(self._f)`: the primal's first parameter is bound
    #                           (or, with bound_count, `functools.partial(f, cfg)`'s leading ones)
    bound_count: int = 1  # how many leading parameters are bound when bound_self (a partial's arguments)
    # `f = make_f(...)`: assignments of a factory's (or a method's) result, the derivative it made and returned
    bound_at: List[ast.AST] = field(default_factory=list)

    @property
    def label(self) -> str:
        """What messages call the object: `custom_vjp`, `nnx.custom_vjp`, `eqx.filter_custom_vjp`..."""
        return API_LABELS.get((self.api, self.kind), f"custom_{self.kind}")

    @property
    def signature(self) -> Optional[Signature]:
        """The primal's signature as callers see it (made once: every rule asks)."""
        try:
            return self.__dict__["_signature"]
        except KeyError:
            pass
        sig = None if self.primal is None else Signature.of(self.primal)
        if sig is not None and self.bound_self:
            for _ in range(self.bound_count):
                sig = sig.without_first()
        self.__dict__["_signature"] = sig
        return sig

    @property
    def registration(self) -> Optional[Registration]:
        return self.registrations[0] if self.registrations else None

    def rule(self, role: str) -> Optional[RuleFunction]:
        """'fwd', 'bwd' (custom_vjp) or 'jvp' (custom_jvp defjvp)."""
        if self.api == "equinox":  # `def_fwd` and `def_bwd` register one rule each
            method = _EQUINOX_METHODS.get(role)
            found = next((r for r in self.registrations if r.method == method and r.rules), None)
            return found.rules[0] if found is not None else None
        reg = self.registration
        if reg is None:
            return None
        if reg.method == "defvjp":
            index = _DEFVJP_INDEX.get(role)
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


_EQUINOX_METHODS = {"fwd": "def_fwd", "bwd": "def_bwd", "jvp": "def_jvp"}
_DEFVJP_INDEX = {"fwd": 0, "bwd": 1}


class _Lookups:
    def __init__(self, derivatives: List[CustomDerivative]) -> None:
        self.size = len(derivatives)
        self.by_node: Dict[ast.AST, CustomDerivative] = {}
        self.by_name: Dict[Tuple[str, Optional[FunctionNode]], List[CustomDerivative]] = {}
        self.by_rule: Dict[ast.AST, List[CustomDerivative]] = {}
        self.order = {d: i for i, d in enumerate(derivatives)}
        self.via = [d for d in derivatives if getattr(d, "via", "")]
        for d in derivatives:
            for node in (d.primal, d.anchor, *d.bound_at):  # the first derivative a node belongs to answers
                if node is not None:
                    self.by_node.setdefault(node, d)
            self.by_name.setdefault((d.name, d.enclosing), []).append(d)
            for role in ("fwd", "bwd", "jvp"):
                r = d.rule(role)
                if r is not None and r.node is not None:
                    owners = self.by_rule.setdefault(r.node, [])
                    if not owners or owners[-1] is not d:
                        owners.append(d)


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class TracedFunction:
    """A function passed to a JAX transformation."""

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

    # Facts derived from the model (arities, returns, verdicts...), each computed once: a
    # vjplint.facts.Facts, attached by vjplint.facts.collect.collect (the facts layer sits above this
    # module, which does not import it).
    facts: Any = field(default=None, repr=False, compare=False)

    # Lookups over `derivatives`, built on first use after collection (a scan of every
    # derivative per question made rules and planning quadratic in dense modules).
    _lookups: Any = field(default=None, repr=False, compare=False)

    def _lookup(self) -> "_Lookups":
        if self._lookups is None or self._lookups.size != len(self.derivatives):
            self._lookups = _Lookups(self.derivatives)
        return self._lookups

    def signature(self, fn: FunctionNode) -> Signature:
        """`fn`'s signature, made once per function of this file."""
        return self.index.of_node(Signature.of, fn)

    def derivative_for_node(self, node: ast.AST) -> Optional[CustomDerivative]:
        return self._lookup().by_node.get(node)

    def same_name(self, d: CustomDerivative) -> List[CustomDerivative]:
        """The derivatives with `d`'s name in `d`'s enclosing scope (`d` included), in order."""
        return self._lookup().by_name.get((d.name, d.enclosing), [])

    def made_via_wrapper(self) -> List[CustomDerivative]:
        """The derivatives made through an inferred wrapper (their `via` says how)."""
        return self._lookup().via

    def rule_owners(self, *nodes: ast.AST) -> List[CustomDerivative]:
        """The derivatives whose fwd, bwd or jvp rule is one of `nodes`, in order."""
        lookups = self._lookup()
        found = dict.fromkeys(d for node in nodes for d in lookups.by_rule.get(node, []))
        return sorted(found, key=lookups.order.__getitem__)

    # -- source text (`ast` columns are UTF-8 byte offsets; `lines` are code points) ------
    def text(self) -> str:
        """The module's whole text (lines joined by "\n"). A big module linted family by family
        (vjplint/lint/chunks.py) gives every family's model the document's one line table (a
        `LineTable`): the join is made once per table, not once per family (quadratic over 15,000
        families)."""
        return joined(self.lines)

    def holds(self, word: str) -> bool:
        """Whether the module's whole text holds `word` (a rule's cheap test before a walk): once
        per word and document when the lines are a `LineTable` (a family's model of a big module:
        searching the 10 MB document again for each of 30,000 families was quadratic)."""
        lines = self.lines
        if isinstance(lines, LineTable):
            return lines.holds(word)
        return word in joined(lines)

    def _point(self, row: int, byte_col: int) -> Tuple[int, int]:
        return row, byte_to_char(self.lines[row - 1], byte_col)

    def _text(self, start: Tuple[int, int], end: Tuple[int, int]) -> str:
        (r0, c0), (r1, c1) = start, end
        if r0 == r1:
            return self.lines[r0 - 1][c0:c1]
        return "\n".join([self.lines[r0 - 1][c0:], *self.lines[r0:r1 - 1], self.lines[r1 - 1][:c1]])

    def source_text(self, first: ast.AST, last: Optional[ast.AST] = None) -> str:
        """The source from the start of `first` to the end of `last` (default: `first`)."""
        last = last or first
        return self._text(self._point(first.lineno, first.col_offset),  # type: ignore[attr-defined]
                          self._point(last.end_lineno, last.end_col_offset))  # type: ignore[attr-defined]

    def text_between(self, left: ast.AST, right: ast.AST) -> str:
        """The source from the end of `left` to the start of `right`."""
        return self._text(self._point(left.end_lineno, left.end_col_offset),  # type: ignore[attr-defined]
                          self._point(right.lineno, right.col_offset))  # type: ignore[attr-defined]

    def quote(self, node: ast.AST, limit: int = 60) -> str:
        """A short one-line quote of `node` for messages: its source when on one line, else unparsed."""
        return quote_lines(self.lines, node, limit)

    def name_anchor(self, fn: FunctionNode) -> ast.AST:
        """A node spanning a def's name (the lambda itself for lambdas), for reporting."""
        if isinstance(fn, ast.Lambda) or not (0 < fn.lineno <= len(self.lines)):
            return fn
        line = self.lines[fn.lineno - 1].encode("utf-8")
        keyword = line.find(b"def", fn.col_offset)
        start = line.find(fn.name.encode("utf-8"), keyword + 3) if keyword >= 0 else -1
        if start < 0:
            return fn
        anchor = ast.Name(id=fn.name, ctx=ast.Load())
        anchor.lineno = anchor.end_lineno = fn.lineno
        anchor.col_offset, anchor.end_col_offset = start, start + len(fn.name.encode("utf-8"))
        return anchor


class LineTable(tuple):
    """A document's lines (`source_lines`), immutable, with what is made from the whole of them
    kept beside them: their join, its digest, which words the text holds. The families of a big
    module (vjplint/lint/chunks.py: the engine's grouped lint, the Language Server's incremental
    linter) each get a model of their own over the document's one table, so each of these is made
    once per document, not once per family (quadratic over 15,000 families). The memo lives and
    dies with the table: no module state, nothing to forget, and two threads linting two documents
    (the server's lint threads) never read each other's text. Two threads asking of one table at
    once may both compute a value; each stores a finished value in one step, the same value."""

    def joined(self) -> str:
        """`"\\n".join(self)`, made once."""
        text = self.__dict__.get("text")
        if text is None:
            text = self.__dict__["text"] = "\n".join(self)
        return text

    def holds(self, word: str) -> bool:
        """Whether the joined text holds `word`, searched once per word."""
        words = self.__dict__.get("words")
        if words is None:
            words = self.__dict__.setdefault("words", {})
        found = words.get(word)
        if found is None:
            found = words[word] = word in self.joined()
        return found


def joined(lines: Sequence[str]) -> str:
    """`"\\n".join(lines)`, made once per LineTable (see FileModel.text); any other sequence (a
    list could change under a memo) is joined at each call."""
    if isinstance(lines, LineTable):
        return lines.joined()
    return "\n".join(lines)


def digest_once(lines: Sequence[str], compute: Any) -> str:
    """`compute(lines)` (the one digest of the text the plans carry, `residual_plan.lines_digest`),
    made once per LineTable; computed at each call for any other sequence."""
    if not isinstance(lines, LineTable):
        return compute(lines)
    digest = lines.__dict__.get("digest")
    if digest is None:
        digest = lines.__dict__["digest"] = compute(lines)
    return digest


def quote_lines(lines: Sequence[str], node: ast.AST, limit: int = 60) -> str:
    """A short one-line quote of `node` (of the module of `lines`): its source when on one line,
    else unparsed."""
    try:
        if node.lineno == node.end_lineno:  # type: ignore[attr-defined]
            line = lines[node.lineno - 1]  # type: ignore[attr-defined]
            text = line[byte_to_char(line, node.col_offset):  # type: ignore[attr-defined]
                        byte_to_char(line, node.end_col_offset)]  # type: ignore[attr-defined]
        else:
            text = ast.unparse(node)
    except (AttributeError, IndexError, ValueError):
        text = ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
