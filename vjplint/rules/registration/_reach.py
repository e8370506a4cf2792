"""Whether a registration (`f.defvjp(...)`, `f.defjvp(...)`, `@f.defjvp`) runs when its module is
imported, and whether the custom derivative is called before it. VJP372 reads them.

A registration does not run at import when the statement holding it sits
- under `if __name__ == "__main__":` (it runs only when the file is executed as a script), or in a
  function that only that block calls (`main()`);
- under `if TYPE_CHECKING:` (false at run time), or under a test that is a constant false or a
  name the module binds once to one (`USE_CUSTOM = False` ... `if USE_CUSTOM:`), also `while` ones;
- after a `return`, `raise`, `break` or `continue` of its own block or of a block around it;
- in a private function (`_register`) that nothing in the module names.
A function named elsewhere, a method, a public function nobody calls here (an importer may call
it) and a class body (run at import) are taken to run."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Literal, Optional, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel, Registration

REGISTERING = frozenset({"defvjp", "defjvp", "defjvps"})
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
Route = Literal["script", "type-checking", "false", "dead", "uncalled"]


@dataclass(frozen=True)
class NotRun:
    """Why `registration` does not run at import: `guard` is the `if`/`while`, the ending
    statement or the function; `via` the function holding the registration when only the guard
    calls it; `flag` the constant-false name and its binding's line."""

    registration: Registration
    route: Route
    guard: ast.AST
    via: Optional[ast.AST] = None
    flag: Optional[Tuple[str, int, str]] = None


def statement(model: FileModel, node: ast.AST) -> ast.AST:
    while not isinstance(node, ast.stmt):
        parent = model.index.parent(node)
        if parent is None:
            return node
        node = parent
    return node


def is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and \
        any(isinstance(b, ast.Constant) and b.value == "__main__" for b in sides)


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _false_flag(model: FileModel, test: ast.expr, node: ast.AST) -> Optional[Tuple[str, int, str]]:
    """(text, line, value) when `test` is a constant false, or a name bound once, to one, and
    never rebound (no other store, no `global` of it)."""
    if isinstance(test, ast.Constant):
        return (repr(test.value), test.lineno, repr(test.value)) if _falsy(test.value) else None
    if not isinstance(test, ast.Name):
        return None
    bindings = model.index.lookup(test.id, model.index.scope_of(node))
    if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].value, ast.Constant):
        return None
    stores = [n for n in model.index.names(test.id) if not isinstance(n.ctx, ast.Load)]
    if len(stores) != 1 or any(test.id in g.names for g in model.index.of_type(ast.Global)):  # type: ignore[attr-defined]
        return None
    value = bindings[0].value.value
    return (test.id, bindings[0].value.lineno, repr(value)) if _falsy(value) else None


def _falsy(value: object) -> bool:
    return value is None or value is False or type(value) is int and value == 0


def main_guard(model: FileModel, node: ast.AST) -> Optional[ast.If]:
    """The `if __name__ == "__main__":` whose body holds `node`, if any."""
    child = node
    for ancestor in model.index.ancestors(node):
        if isinstance(ancestor, ast.If) and is_main_test(ancestor.test) and any(s is child for s in ancestor.body):
            return ancestor
        child = ancestor
    return None


def not_run(model: FileModel, d: CustomDerivative, reg: Registration) -> Optional[NotRun]:
    """Why `reg` never runs when the module is imported, or None when it may (see the module's doc)."""
    child = statement(model, reg.node)
    parent = model.index.parent(child)
    while parent is not None and not isinstance(parent, ast.Module):
        field = next((f for f in ("body", "orelse", "finalbody") if any(s is child for s in getattr(parent, f, None) or ())),
                     None)
        if field is not None:
            block = getattr(parent, field)
            ended = next((s for s in block[: [id(s) for s in block].index(id(child))] if isinstance(s, ENDS)), None)
            if ended is not None and not _defined_after(model, d, ended):
                return NotRun(reg, "dead", ended)
        if isinstance(parent, (ast.If, ast.While)) and field == "body":
            if isinstance(parent, ast.If) and is_main_test(parent.test):
                return NotRun(reg, "script", parent)
            if _is_type_checking(parent.test):
                return NotRun(reg, "type-checking", parent)
            flag = _false_flag(model, parent.test, parent)
            if flag is not None:
                return NotRun(reg, "false", parent, flag=flag)
        if isinstance(parent, FUNCTIONS):
            return _in_function(model, d, reg, parent)
        if isinstance(parent, ast.Lambda):
            return None
        child, parent = parent, model.index.parent(parent)
    return None


SWALLOWING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def import_guarded(model: FileModel, d: CustomDerivative, reg: Registration) -> Optional[Tuple[ast.Try, ast.stmt]]:
    """(the `try`, the import) when `reg` follows an import in the body of a `try` whose handler
    swallows an `ImportError` without registering `d` there: the rules exist only where the
    optional module is installed. `d` itself made in that body is left alone (it would not exist)."""
    child = statement(model, reg.node)
    made = statement(model, d.anchor)
    for parent in model.index.ancestors(child):
        if isinstance(parent, (*FUNCTIONS, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(parent, ast.Try) and any(s is child for s in parent.body):
            before = parent.body[: [id(s) for s in parent.body].index(id(child))]
            imported = next((s for s in before if isinstance(s, (ast.Import, ast.ImportFrom))), None)
            if imported is None or any(s is made for s in parent.body) or not any(
                    h.type is None or any(isinstance(n, ast.Name) and n.id in SWALLOWING
                                          or isinstance(n, ast.Attribute) and n.attr in SWALLOWING
                                          for n in ast.walk(h.type)) for h in parent.handlers):
                return None
            elsewhere = [*parent.handlers, *parent.orelse, *parent.finalbody]
            if any(isinstance(n, ast.Attribute) and n.attr in REGISTERING and isinstance(n.value, ast.Name)
                   and n.value.id == d.name for h in elsewhere for n in ast.walk(h)):
                return None  # the handler registers a fallback
            return parent, imported
        child = parent
    return None


def _defined_after(model: FileModel, d: CustomDerivative, ended: ast.AST) -> bool:
    """`d` is made after `ended` in the same function: dead with its registration (a skipped test)."""
    made = statement(model, d.anchor)
    return made.lineno > ended.lineno and _executing_scope(model, made) is _executing_scope(model, ended)  # type: ignore


def _in_function(model: FileModel, d: CustomDerivative, reg: Registration, fn: ast.AST) -> Optional[NotRun]:
    """A registration inside `fn`: in the factory that makes `d` it runs with it; a function of
    its own runs when something calls it."""
    if any(a is fn for a in model.index.ancestors(d.anchor)) or isinstance(model.index.parent(fn), ast.ClassDef):
        return None  # the factory itself, or a method (called through an object we do not follow)
    refs = [n for n in model.index.names(fn.name) if isinstance(n.ctx, ast.Load)]  # type: ignore[attr-defined]
    if not refs:
        return NotRun(reg, "uncalled", fn) if fn.name.startswith("_") else None  # type: ignore[attr-defined]
    guards = [main_guard(model, r) for r in refs]
    if all(g is not None for g in guards) and model.facts.is_top_level(fn):
        return NotRun(reg, "script", guards[0], via=fn)  # type: ignore[arg-type]
    return None


def uses_outside(model: FileModel, d: CustomDerivative, guard: ast.AST) -> List[ast.AST]:
    """Loads of `d`'s name outside `guard`, outside `d`'s own rules and primal, that are not a
    registration's base: what calls or hands on the function when the module is imported."""
    own = {id(d.primal)} | {id(r.node) for reg in d.registrations for r in reg.rules if r.node is not None}
    found: List[ast.AST] = []
    for name in model.index.names(d.name):
        if not isinstance(name.ctx, ast.Load):
            continue
        parent = model.index.parent(name)
        if isinstance(parent, ast.Attribute) and parent.attr in REGISTERING:
            continue
        ancestors = list(model.index.ancestors(name))
        if any(a is guard for a in ancestors) or any(id(a) in own for a in ancestors):
            continue
        defined = statement(model, d.anchor)
        if not any(b.node is d.primal or statement(model, b.node) is defined
                   for b in model.index.lookup(name.id, model.index.scope_of(name))):
            continue  # another object of the same name
        found.append(name)
    return found


def call_before(model: FileModel, d: CustomDerivative, reg: Registration) -> Optional[ast.Call]:
    """A call of `d` that runs, unconditionally, in the same function (or module) body as `reg`
    and before it: the first call raises before the rules are registered."""
    target = statement(model, reg.node)
    scope_of_reg = _executing_scope(model, target)
    reg_top = _top_in(model, target, scope_of_reg)
    made = _top_in(model, statement(model, d.anchor), scope_of_reg)
    if reg_top is None or made is None:
        return None  # made in another body (or a class body): which call runs first is not followed
    for site in sorted(d.call_sites, key=lambda s: (s.call.lineno, s.call.col_offset)):
        call = site.call
        if _executing_scope(model, call) is not scope_of_reg:
            continue
        top = _top_in(model, call, scope_of_reg, straight=True)
        if top is not None and top is not reg_top and made.lineno < top.lineno < reg_top.lineno \
                and isinstance(call.func, ast.Name) and _binds_only(model, d, call.func, made):  # type: ignore
            return call
    return None


def _binds_only(model: FileModel, d: CustomDerivative, name: ast.Name, made: ast.AST) -> bool:
    """`name` is bound once where it is read, by `d`'s definition (not a plain function of the
    same name, as a notebook that redefines it)."""
    bindings = model.index.lookup(name.id, model.index.scope_of(name))
    return len(bindings) == 1 and (bindings[0].node is d.primal or statement(model, bindings[0].node) is made
                                   or any(a is made for a in model.index.ancestors(bindings[0].node)))


def _executing_scope(model: FileModel, node: ast.AST) -> Optional[ast.AST]:
    for ancestor in model.index.ancestors(node):
        if isinstance(ancestor, (*FUNCTIONS, ast.Lambda, ast.Module)):
            return ancestor
    return None


def _top_in(model: FileModel, node: ast.AST, scope: Optional[ast.AST], straight: bool = False) -> Optional[ast.AST]:
    """The statement of `scope`'s own body that holds `node`; with `straight`, None when `node`
    runs only on a condition or in a loop or handler (an `if`, `for`, `while`, `try`, `match`,
    a conditional expression or a short-circuit operand)."""
    child = node
    for ancestor in model.index.ancestors(node):
        if ancestor is scope:
            body = getattr(scope, "body", None)
            return child if isinstance(body, list) and any(s is child for s in body) else None
        if straight and isinstance(ancestor, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.IfExp,
                                              ast.BoolOp, ast.ClassDef, ast.Match if hasattr(ast, "Match") else ast.If)):
            if not (isinstance(ancestor, ast.Try) and any(s is child for s in ancestor.body)):
                return None
        child = ancestor
    return None


def no_rule_error(d: CustomDerivative) -> str:
    name = d.name if d.primal is None else getattr(d.primal, "name", "<lambda>")  # JAX names the primal
    if d.kind == "vjp":
        return f"`AttributeError: No VJP defined for custom_vjp function {name} using defvjp.`"
    return f"`AttributeError: No JVP defined for custom_jvp function {name} using defjvp.`"
