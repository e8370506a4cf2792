"""Where a custom derivative's primal uses an argument as a concrete Python value: a test
(`if n > 0`), a conversion (`int(n)`, `range(n)`), a size or shape (`jnp.zeros(n)`,
`x.reshape(shape)`), directly, through names read or unpacked from it, or in a module-level
helper it passes the argument to. Under `jax.jit` such an argument outside nondiff_argnums is a
tracer (VJP108)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Dict, Iterator, List, Optional

from vjplint.facts.param_evidence import annotation_evidence, default_evidence, name_evidence
from vjplint.model.file_model import CustomDerivative, FileModel, Signature
from vjplint.model.jaxapi import STATIC_ATTRIBUTES
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

CONVERSIONS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.range",
                         "operator.index"})
# jnp constructors whose first argument (or `num`) must be a concrete integer or shape.
SHAPE_FIRST = frozenset({"arange", "zeros", "ones", "empty", "full", "eye", "identity", "tri"})
SHAPE_SECOND = frozenset({"reshape", "broadcast_to", "tile", "repeat"})
# JAX functions whose argument at this position (or this keyword) is static: an axis, a count, the
# dimension numbers of a contraction. A tracer there raises under jit.
STATIC_POSITION = {"jax.lax.dot_general": 2, "jax.lax.top_k": 1, "jax.numpy.expand_dims": 1,
                   "jax.numpy.squeeze": 1, "jax.numpy.sum": 1, "jax.numpy.mean": 1, "jax.numpy.max": 1,
                   "jax.numpy.min": 1, "jax.numpy.prod": 1, "jax.numpy.cumsum": 1, "jax.numpy.argmax": 1,
                   "jax.numpy.argmin": 1, "jax.numpy.moveaxis": 1, "jax.numpy.transpose": 1,
                   "jax.nn.softmax": 1, "jax.nn.log_softmax": 1, "jax.scipy.special.logsumexp": 1}
STATIC_KEYWORDS = frozenset({"axis", "axes", "keepdims", "dimension_numbers", "k"})


@dataclass
class Alias:
    """`name`, bound once from the argument `param` at `line`: unpacked (`rows, cols = shape`)
    or read (`n = shape[0]`, `n = cfg.steps`)."""

    name: str
    unpacked: bool
    param: str
    line: int


@dataclass
class ConcreteUse:
    """`at` needs the argument as a concrete value: `need` is 'test' (`at` is the if/while/
    conditional/assert whose test reads it), 'conversion' (the call of `qualname`), 'size' (a
    jnp constructor's size or shape), 'shape' (a `.reshape`) or 'static' (a JAX function's static
    argument: `axis=`, `keepdims=`, `dimension_numbers`, `top_k`'s `k`). `node` is where (the helper's
    call when the use is in `helper`, at `helper_line`); `alias` the name it went through."""

    node: ast.AST
    need: str
    at: ast.AST
    qualname: str = ""
    alias: Optional[Alias] = None
    helper: Optional[ast.FunctionDef] = None
    helper_line: int = 0


# The nodes a concrete use can be: a test (`if`, `while`, `x if c else y`, `assert`) or a call.
CONCRETE_SITES = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.Call)
_ASSIGN = (ast.Assign,)


class ConcreteUses:
    """The first concrete use of each argument, per primal of the module."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._aliases: Dict[str, Alias] = {}
        self._meant_static = False
        self._record = False

    def first(self, d: CustomDerivative, sig: Signature, position: int, param: str) -> Optional[ConcreteUse]:
        """The first use of `d`'s argument `param` (at `position`) as a concrete value, if any."""
        # A Python test on data is every jitted function's problem; on a value meant to be
        # static (annotated, defaulted or named so) it is this one's.
        self._meant_static = self._static_evidence(sig, param) or self._passed_static(d, sig, position, param)
        self._record = self._holds_namedtuple(d, sig, position, param)
        return self._python_use(d.primal, param, 0)  # type: ignore[arg-type]

    def _static_evidence(self, sig: Signature, param: str) -> bool:
        evidence = [*annotation_evidence(self.model, sig.annotations.get(param), param), *name_evidence(param)]
        if param in sig.defaults:
            evidence.extend(default_evidence(self.model, sig.defaults[param]))
        return any(e.kind == "static" for e in evidence)

    def _passed_static(self, d: CustomDerivative, sig: Signature, position: int, param: str) -> bool:
        """Every call of `d` in the module (outside its own rules) passes `param` a Python flag, int,
        string or None (`_softmax(logits, normalize_output)`, `normalize_output=True` by default)."""
        own = {d.primal, *(r.node for r in (d.rule(role) for role in ("fwd", "bwd", "jvp")) if r is not None)}
        sites = [site for site in d.call_sites if site.enclosing not in own]  # a rule passes on what it got
        if not sites:
            return False
        values = self.model.facts.values()
        for site in sites:
            call = site.call
            if site.positional_offset or any(isinstance(a, ast.Starred) for a in call.args[:position + 1]) or \
                    any(k.arg is None for k in call.keywords):
                return False
            arg = call.args[position] if position < len(call.args) else next(
                (k.value for k in call.keywords if k.arg == param), sig.defaults.get(param))
            kind = values.of(arg)
            if arg is None or not kind.is_static or kind.tag == "scalar" and kind.dtype not in ("bool", "int"):
                return False  # a Python float may be data an eager caller differentiates
        return True

    def _python_use(self, fn: FunctionNode, param: str, depth: int) -> Optional[ConcreteUse]:
        """The first use of `param` in `fn` that needs a concrete Python value: the argument itself,
        a name unpacked or read from it (`rows, cols = shape`, `n = shape[0]`), an element
        (`shape[0]`), or a field of a NamedTuple argument (`cfg.steps`): under jit every leaf is traced."""
        if rebound(self.model, fn, param):
            return None
        self._aliases = self._aliases_of(fn, param) if depth == 0 else {}
        for node in self.model.facts.own_of_types(fn, CONCRETE_SITES):  # what _needs_concrete and helpers read
            found = self._needs_concrete(node, param)
            if found is not None:
                return replace(found, alias=self._through_alias(node))
            if depth == 0 and isinstance(node, ast.Call):
                inner = self._through_helper(node, param)
                if inner is not None:
                    return inner
        return None

    def _aliases_of(self, fn: FunctionNode, param: str) -> Dict[str, Alias]:
        """Names `fn` binds once from the argument: `rows, cols = shape`, `n = cfg.steps`."""
        scope = self.model.index.scopes.get(fn)
        out: Dict[str, Alias] = {}
        if scope is None or isinstance(fn, ast.Lambda):
            return out
        for node in self.model.facts.own_of_types(fn, _ASSIGN):
            if len(node.targets) != 1:  # type: ignore[attr-defined]
                continue
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and self._derived(value, param, out, element=True):
                names = [target]
            elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts) \
                    and self._derived(value, param, out):
                names = list(target.elts)  # type: ignore[arg-type]
            else:
                continue
            for t in names:
                if t.id != param and len(scope.bindings.get(t.id, [])) == 1:  # type: ignore[attr-defined]
                    out[t.id] = Alias(t.id, isinstance(target, (ast.Tuple, ast.List)), param,  # type: ignore[attr-defined]
                                      node.lineno)
        return out

    def _derived(self, expr: ast.expr, param: str, aliases: Dict[str, Alias], element: bool = False) -> bool:
        """`expr` is the argument, an alias of it, or (with `element`) an element or NamedTuple field of it."""
        if isinstance(expr, ast.Name):
            return expr.id == param or expr.id in aliases
        if not element:
            return False
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            return self._derived(expr.value, param, aliases)
        if isinstance(expr, ast.Attribute) and expr.attr not in STATIC_ATTRIBUTES:
            return self._record and isinstance(expr.value, ast.Name) and expr.value.id == param
        return False

    def _uses(self, expr: ast.expr, param: str) -> bool:
        return self._derived(expr, param, self._aliases, element=True)

    def _shape_of(self, expr: ast.expr, param: str) -> bool:
        """The value itself, or a tuple/list literal holding it (`(n, 3)`)."""
        if self._uses(expr, param):
            return True
        return isinstance(expr, (ast.Tuple, ast.List)) and any(self._uses(e, param) for e in expr.elts)

    def _through_alias(self, node: ast.AST) -> Optional[Alias]:
        used = [self._aliases[n.id] for n in walk(node) if isinstance(n, ast.Name) and n.id in self._aliases]
        return used[0] if used else None

    def _holds_namedtuple(self, d: CustomDerivative, sig: Signature, position: int, param: str) -> bool:
        """The argument is a NamedTuple of this module (annotated so, or built at every call): its
        fields are pytree leaves, traced under jit (a custom pytree may keep static fields)."""
        annotation = sig.annotations.get(param)
        if annotation is not None:
            return self._namedtuple_class(annotation)
        rules = {r.node for _, r in self.model.facts.rules_of(d) if r.node is not None}
        args = [site.call.args[position] for site in d.call_sites  # fwd calling the primal passes it on
                if position < len(site.call.args) and not site.positional_offset and site.enclosing not in rules]
        return bool(args) and all(isinstance(a, ast.Call) and self._namedtuple_class(a.func) for a in args)

    def _namedtuple_class(self, expr: ast.expr) -> bool:
        if not isinstance(expr, ast.Name):
            return False
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        return len(bindings) == 1 and isinstance(bindings[0].node, ast.ClassDef) and any(
            (self.model.index.qualname(b) or "").endswith("NamedTuple") for b in bindings[0].node.bases)

    def _needs_concrete(self, node: ast.AST, param: str) -> Optional[ConcreteUse]:
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            if _tests_value(node.test, param) and self._meant_static:
                return ConcreteUse(node, "test", node)
            return None
        if not isinstance(node, ast.Call):
            return None
        q = self.model.index.qualname(node.func) or ""
        args = node.args
        if q in CONVERSIONS and any(self._uses(a, param) for a in args):
            return ConcreteUse(node, "conversion", node, q)
        tail = q.rsplit(".", 1)[-1]
        if q.startswith("jax.numpy."):
            shape_args: List[ast.expr] = []
            if tail in SHAPE_FIRST and args:
                shape_args = [args[0]] + (list(args[1:2]) if tail == "arange" else [])
            elif tail in SHAPE_SECOND and len(args) > 1 and not (
                    tail == "repeat" and any(k.arg == "total_repeat_length" for k in node.keywords)):
                shape_args = [args[1]]  # `repeat(x, n, total_repeat_length=m)` takes a traced `n`
            shape_args += [k.value for k in node.keywords if k.arg in ("shape", "newshape", "num", "stop")]
            if any(self._shape_of(a, param) for a in shape_args):
                return ConcreteUse(node, "size", node)
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "reshape" and not q.startswith("jax")
                and any(self._shape_of(a, param) for a in args)):
            return ConcreteUse(node, "shape", node)
        return self._static_argument(node, q, param)

    def _static_argument(self, node: ast.Call, q: str, param: str) -> Optional[ConcreteUse]:
        """`jnp.sum(x, axis)`, `logsumexp(x, axis=axis)`, `lax.dot_general(a, b, dims)`, `top_k(x, k)`:
        an argument JAX needs as a Python value."""
        if not q.startswith("jax."):
            return None
        position = STATIC_POSITION.get(q)
        if position is not None and position < len(node.args) and self._shape_of(node.args[position], param):
            return ConcreteUse(node, "static", node, q)
        if any(k.arg in STATIC_KEYWORDS and self._shape_of(k.value, param) for k in node.keywords):
            return ConcreteUse(node, "static", node, q)
        return None

    def _through_helper(self, call: ast.Call, param: str) -> Optional[ConcreteUse]:
        """`helper(..., param, ...)` with `helper` a module-level def: its use of the parameter."""
        if not isinstance(call.func, ast.Name):
            return None
        bindings = self.model.index.lookup(call.func.id, self.model.index.scope_of(call))
        if len(bindings) != 1 or bindings[0].kind != "def":
            return None
        helper = bindings[0].node
        if self.model.index.scope_of(helper) is not self.model.index.module_scope:
            return None
        positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]  # type: ignore[union-attr]
        for position, arg in enumerate(call.args):
            if is_name(arg, param) and position < len(positional):
                found = self._python_use(helper, positional[position], 1)  # type: ignore[arg-type]
                if found is not None:
                    return replace(found, node=call, helper=helper,  # type: ignore[arg-type]
                                   helper_line=found.node.lineno)  # type: ignore[attr-defined]
        return None




def rebound(model: FileModel, fn: FunctionNode, param: str) -> bool:
    """`param` is reassigned in `fn` (then uses need not be the argument)."""
    scope = model.index.scopes.get(fn)
    bindings = scope.bindings.get(param, []) if scope is not None else []
    return any(b.kind != "param" for b in bindings)


def is_name(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _tests_value(test: ast.expr, name: str) -> bool:
    """The test reads the value of `name` (not only `is None`, its shape, type or length)."""
    for part in _parts(test):
        if is_name(part, name):
            return True
        if isinstance(part, ast.Compare) and not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                                                     for op in part.ops):
            if any(is_name(side, name) for side in (part.left, *part.comparators)):
                return True
    return False


def _parts(test: ast.expr) -> Iterator[ast.expr]:
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _parts(value)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _parts(test.operand)
    else:
        yield test

