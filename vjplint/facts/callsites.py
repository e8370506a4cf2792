"""What the calls of a function in the run pass for one parameter: static Python values or not.

A parameter every call of the run (this module, and other modules through the project summary,
`vjplint.facts.crossmodule`) gives a static Python value (a literal number, string, bool or
None, a tuple of them, a name bound only to one such as a module constant), or leaves at a
default that is one, never holds a tracer: no caller in the run can differentiate it. With no
call at all, or any call passing something unknown or an array, nothing is known.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from vjplint.facts.crossmodule import external_calls
from vjplint.facts.registry import query
from vjplint.model.file_model import CallSite, CustomDerivative, FileModel, Signature
from vjplint.model.jaxapi import PARTIAL
from vjplint.model.semantic import FunctionNode
from vjplint.facts.kinds import STATIC_TAGS

STATIC_TYPES = (int, float, complex, str, bool, bytes, type(None))


def static_python_value(model: FileModel, expr: Optional[ast.expr], depth: int = 0) -> bool:
    """`expr` is a literal Python number, string, bool or None (signed), a tuple of such values,
    or a name bound, outside any function, only to such values (a module constant)."""
    if expr is None or depth > 5:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, STATIC_TYPES)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        return isinstance(expr.operand, ast.Constant) and isinstance(expr.operand.value, (int, float, complex))
    if isinstance(expr, ast.Tuple):
        return all(static_python_value(model, e, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.Name):
        found = model.index.resolve(expr.id, model.index.scope_of(expr))
        if found is None or found[0].is_function:
            return False
        values = [_assigned(b, expr.id) for b in found[1]]
        return bool(values) and all(static_python_value(model, v, depth + 1) for v in values)
    return False


def _assigned(binding, name: str) -> Optional[ast.expr]:
    """The value a name is bound to: `name = value`, or its element of `a, name = 1, 2.0`."""
    if binding.kind != "assign":
        return None
    if binding.value is not None:
        return binding.value
    node = binding.node
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
            and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts):
        for target, value in zip(node.targets[0].elts, node.value.elts):
            if isinstance(target, ast.Name) and target.id == name and not isinstance(value, ast.Starred):
                return value
    return None


def static_default(model: FileModel, sig: Signature, name: str) -> Optional[ast.expr]:
    """The default of parameter `name` when it is a static Python value."""
    default = sig.defaults.get(name)
    return default if static_python_value(model, default) else None


def leaves_default(call: ast.Call, position: int, name: str) -> bool:
    """`call` gives nothing for the parameter at `position` (-1: keyword-only) called `name`,
    and no `*args` or `**kwargs` could hide it: the default is used."""
    if any(isinstance(a, ast.Starred) for a in call.args[: position + 1 if position >= 0 else len(call.args)]):
        return False
    if 0 <= position < len(call.args):
        return False
    return all(k.arg is not None and k.arg != name for k in call.keywords)


def _slot(model: FileModel, fn: FunctionNode, param: str) -> Optional[Tuple[int, bool]]:
    """Where `fn` (a `def`) takes `param`: its position (-1: keyword-only), and whether its
    default is a static Python value; None when `fn` is no `def` or has no such parameter."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    sig = model.signature(fn)
    if param not in sig.positional and param not in sig.kwonly:
        return None
    position = sig.positional.index(param) if param in sig.positional else -1
    return position, static_default(model, sig, param) is not None


def _uses_here(model: FileModel, fn: FunctionNode) -> Iterator[Optional[ast.Call]]:
    """Each read of `fn`'s name in this module that resolves to `fn`: the call it makes, or None
    where the name is used otherwise (passed on, aliased: its callers are unknown)."""
    index = model.index
    for node in index.names(fn.name):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or \
                not any(b.node is fn for b in index.lookup(node.id, index.scope_of(node))):
            continue
        call = index.parent(node)
        yield call if isinstance(call, ast.Call) and call.func is node else None


def _each_call_gives(call: ast.Call, slot: Tuple[int, bool], param: str, accept: Callable[[ast.expr], bool]) -> bool:
    """`call` gives `param` a value `accept` takes, or leaves it at a static default."""
    position, default = slot
    arg = _argument(call, position, param)
    return default and leaves_default(call, position, param) if arg is None else accept(arg)


@query
def static_at_every_call(model: FileModel, fn: FunctionNode, param: str) -> bool:
    """Whether `fn` (a `def`) has calls in the run and every one passes a static Python value
    in `param`'s place, or leaves it at a default that is one."""
    slot = _slot(model, fn, param)
    if slot is None:
        return False
    position, default = slot
    passed: List[bool] = []
    for external in external_calls(model, fn.name, fn):  # callers in other modules of the run
        arg = external.arg(position, param)
        passed.append(default and external.complete if arg is None else (not arg.traced and arg.tag in STATIC_TAGS))
    accept = lambda arg: static_python_value(model, arg)  # noqa: E731
    passed.extend(_each_call_gives(call, slot, param, accept) for call in _uses_here(model, fn) if call is not None)
    return bool(passed) and all(passed)


def called_only_at_import(model: FileModel, fn: FunctionNode) -> bool:
    """Whether `fn` (a `def`) is called in this module, every call is a statement of the module
    itself (run once at import, outside any function, so no argument can be a tracer), and no
    other module of the run calls it (`spmv = make_spmv(np.asarray(W))`: a factory whose
    parameter its custom_vjp closes over, given a concrete array)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if any(True for _ in external_calls(model, fn.name, fn)):
        return False
    index = model.index
    found = False
    for node in index.names(fn.name):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        if not any(b.node is fn for b in index.lookup(node.id, index.scope_of(node))):
            continue
        parent = index.parent(node)
        scope = index.scope_of(node)
        if not (isinstance(parent, ast.Call) and parent.func is node) or scope.is_function or scope.is_class \
                or scope.parent is not None:
            return False  # passed on, aliased, or called where its arguments may be traced
        found = True
    return found


@query
def concrete_at_every_call(model: FileModel, fn: FunctionNode, param: str) -> bool:
    """Whether `fn` (a `def`) is called only in this module, and every call gives `param` a value
    that cannot be a tracer: a call made at import (`called_only_at_import`), a static Python
    value or default, or a name the module binds outside any function to a value (`NOISE =
    numpy.array(...)`, read from a function: a global of the module, concrete whoever traces
    the caller). `static_at_every_call` with module globals accepted and no other module's calls."""
    if called_only_at_import(model, fn):
        return True
    slot = _slot(model, fn, param)
    if slot is None or any(True for _ in external_calls(model, fn.name, fn)):
        return False
    index = model.index

    def accept(arg: ast.expr) -> bool:
        if not isinstance(arg, ast.Name):
            return static_python_value(model, arg)
        found = index.resolve(arg.id, index.scope_of(arg))
        return found is not None and found[0].parent is None and all(b.kind == "assign" for b in found[1])

    passed: List[bool] = []
    for call in _uses_here(model, fn):
        if call is None:
            return False  # passed on or aliased: its callers are unknown
        passed.append(_each_call_gives(call, slot, param, accept))
    return bool(passed) and all(passed)


def _argument(call: ast.Call, position: int, name: str) -> Optional[ast.expr]:
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if i == position:
            return arg
    return next((k.value for k in call.keywords if k.arg == name), None)



@dataclass(frozen=True)
class Passed:
    """What the calls of a custom function in this module pass for one of its parameters."""

    arguments: Tuple[ast.expr, ...]  # the expressions passed there, by position or by keyword
    hidden: bool  # a call whose `*args` or `**kwargs` may pass it (or that binds it as `self`)
    calls: int  # the calls read

    @property
    def any(self) -> bool:
        """Some call passes the parameter, or may."""
        return bool(self.arguments) or self.hidden


@query
def calls_pass(model: FileModel, d: CustomDerivative, position: int) -> Passed:
    """What `d`'s calls in this module (`d.call_sites`: by name, alias, `partial`, method) pass for
    its parameter at `position` (as callers see the signature, `d.signature`): the argument at that
    place (`Class.method(obj, x)` counted as the call site says), or the keyword of its name; a
    starred argument at or before it, or a `**kwargs`, may pass it (`hidden`)."""
    sig = d.signature
    name = sig.positional[position] if sig is not None and 0 <= position < len(sig.positional) else None
    found: List[ast.expr] = []
    hidden = False
    for site in d.call_sites:
        k = position - site.positional_offset
        args = site.call.args
        starred = next((i for i, a in enumerate(args) if isinstance(a, ast.Starred)), None)
        if k < 0 or (starred is not None and starred <= k):
            hidden = True
            continue
        if k < len(args):
            found.append(args[k])
            continue
        keyword = next((kw for kw in site.call.keywords if name is not None and kw.arg == name), None)
        if keyword is not None:
            found.append(keyword.value)
        elif any(kw.arg is None for kw in site.call.keywords):
            hidden = True
    return Passed(tuple(found), hidden, len(d.call_sites))


@query
def partial_sites(model: FileModel, d: CustomDerivative) -> List[CallSite]:
    """`functools.partial(f, a, k=b)` of the custom function `d` made in the module, each as a call
    site of the arguments it binds (`a` at position 0, `k=b` by keyword), in the function it is made
    in: what a partial binds is passed at every call of it. Not among `d.call_sites`, which a rule
    reads as whole calls (a partial leaves the other arguments to its own calls)."""
    return model.facts.partials_of_derivatives().get(d, [])


@query
def partials_of_derivatives(model: FileModel) -> Dict[CustomDerivative, List[CallSite]]:
    """`partial_sites` of every custom function of the module, found in one pass over its calls."""
    found: Dict[CustomDerivative, List[CallSite]] = {}
    if not model.derivatives:
        return found
    index = model.index
    # `partial` or `functools.partial`, called: the index's tables of that spelling (in `ast.walk`
    # order); both spellings in one module: every name and attribute in that order, to keep it.
    names, attributes = index.names("partial"), index.attributes("partial")
    spelled = attributes if not names else names if not attributes else index.of_type(ast.Name, ast.Attribute)
    for name in spelled:
        if (name.id if isinstance(name, ast.Name) else name.attr) != "partial":  # type: ignore[attr-defined]
            continue
        call = model.index.parent(name)
        if not isinstance(call, ast.Call) or call.func is not name or not call.args or \
                model.index.qualname(name) not in PARTIAL:
            continue
        d = model.facts.derivative_named(call.args[0])  # type: ignore[attr-defined]
        if d is None:
            continue
        bound = ast.Call(func=call.args[0], args=list(call.args[1:]), keywords=list(call.keywords))  # type: ignore
        ast.copy_location(bound, call)
        found.setdefault(d, []).append(CallSite(bound, model.index.enclosing_function(call)))
    return found
