"""VJP201's fix: a custom_vjp defined inside a function that closes over one of its values `c`
gets `c` as an explicit leading argument, as JAX's own error message recommends ("Try passing
the closed-over value into the custom_vjp function as an argument, and adapting the custom_vjp
fwd and bwd rules"):

    def g(x):            ->  def g(c, x):
    def g_fwd(x):        ->  def g_fwd(c, x):          (returns `(out, (res, c))` when bwd reads c)
    def g_bwd(res, ct):  ->  def g_bwd(res, ct):       (`res, c = res` first when it reads c)
        return (dx,)     ->      return (None, dx)
    g(x)                 ->  g(c, x)                   (every call, all inside the defining function)

The edits are plain insertions and one replacement per fwd `return`, computed on the `ast`
model; anything this cannot do exactly raises `Refusal` with the reason.

`None` as `c`'s cotangent is exact when only the rules read `c` (the primal does not, so no
gradient flows to it through `g`, before or after). When the primal reads `c`, its true
cotangent is not known: the original raised when differentiated with respect to `c`, the
rewrite gives zero, so that fix is unsafe and says so.
"""

from __future__ import annotations

import ast
from typing import Callable, List, Optional, Set, Tuple

from vjplint.plans.residual_plan import Refusal, loc_of, KEPT_NONDIFF
from vjplint.plans.residual_reads import own_return_values, truthy_or_unknown
from vjplint.facts.param_evidence import usage_evidence
from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.semantic import FunctionNode, Scope
from vjplint.diagnostics import DroppedCotangent, Edit, Position, SlopeDisagrees, edit_order
from vjplint.plans.safety import rewrite_draws, rewrite_rows
from vjplint.syntax.positions import byte_to_char
from vjplint.syntax.walk import walk

IGNORED_TANGENT = "VJP610"  # the rule that reads an ignored tangent of a used input as a missing derivative


def _edit(r1: int, c1: int, r2: int, c2: int, text: str) -> Edit:
    """An edit between 1-based rows and code-point columns, end exclusive."""
    return Edit(text, Position(r1, c1), Position(r2, c2))


def closure_edits(model: FileModel, d: CustomDerivative, name: str, scope: Scope,
                  relint: Optional[Callable[[str, str], list]] = None) -> List[Edit]:
    """The edits passing the captured `name` (bound in the function `scope`) to `d` explicitly."""
    primal = d.primal
    outer = d.enclosing
    if d.kind != "vjp" or d.api != "jax" or not isinstance(primal, ast.FunctionDef) or outer is None:
        raise Refusal("only a jax.custom_vjp defined with `def` inside a function is rewritten")
    if primal.name != d.name or d.class_node is not None:
        raise Refusal(f"`{d.name}` is not the decorated function itself")
    if d.nondiff or d.nondiff_unresolved:
        raise Refusal("it has nondiff_argnums, whose positions the new argument would shift")
    if name == "self" or not scope.is_function:
        raise Refusal(f"`{name}` is not a local value of the enclosing function")
    if len(scope.bindings.get(name, [])) != 1 or name in scope.nonlocals:
        raise Refusal(f"`{name}` is bound more than once, so calls may see different values")
    if len(d.registrations) != 1 or d.registrations[0].method != "defvjp" or d.registrations[0].as_decorator:
        raise Refusal("there is not exactly one `defvjp(fwd, bwd)` call")
    registration = d.registrations[0]
    if truthy_or_unknown(registration.keywords.get("symbolic_zeros")):
        raise Refusal("symbolic_zeros=True changes what the rules receive")
    fwd, bwd = (r.as_registered() if r is not None else None for r in (d.rule("fwd"), d.rule("bwd")))
    if fwd is None or bwd is None or not isinstance(fwd.node, ast.FunctionDef) or \
            not isinstance(bwd.node, ast.FunctionDef):
        raise Refusal("fwd and bwd are not both functions defined with `def` here")
    if fwd.bound_positional or fwd.bound_keywords or bwd.bound_positional or bwd.bound_keywords:
        raise Refusal("fwd or bwd is a functools.partial")
    functions: List[FunctionNode] = [primal, fwd.node, bwd.node]
    if len(set(functions)) != 3:
        raise Refusal("the primal, fwd and bwd are not three distinct functions")
    for fn in functions:
        static = next((e for e in usage_evidence(model, fn, name) if e.kind == "static"), None)
        if static is not None:
            raise Refusal(f"`{name}` {static.reason}, which fails once it is a traced argument")
    for other in model.derivatives:
        if other is not d and any(r is not None and r.node in functions for r in (other.rule("fwd"), other.rule("bwd"))):
            raise Refusal(f"fwd/bwd are shared with `{other.name}`")
    for fn, role in ((fwd.node, "fwd"), (bwd.node, "bwd")):
        if any(n not in _inside(registration.node) for n in _loads_of_name(model, fn.name)):
            raise Refusal(f"{role} `{fn.name}` is also used outside `defvjp`, and the rewrite changes its parameters")
    edits: List[Edit] = []
    for fn in (primal, fwd.node):
        edits.append(_insert_parameter(model, fn, name))
    calls = _call_sites(model, d, name, scope, registration.node)
    bwd_sig = bwd.node.args
    bwd_params = [*bwd_sig.posonlyargs, *bwd_sig.args]
    if bwd_sig.vararg is not None or len(bwd_params) != 2:
        raise Refusal("bwd does not take exactly (residuals, cotangent)")
    bwd_reads = _reads(bwd.node, name) or any(_within(call, bwd.node) for call in calls)
    if bwd_reads:
        res = bwd_params[0].arg
        residuals = [value.elts[1] if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2 else None
                     for _, value in own_return_values(fwd.node)]
        if all(isinstance(r, ast.Constant) and r.value is None for r in residuals) and \
                (res == "_" or not _reads(bwd.node, res)):  # no residuals so far: `name` is the residual
            r1, c1 = _start(model, bwd_params[0])  # the name only: an annotation stays
            edits.append(_edit(r1, c1, r1, c1 + len(res), name))
            edits.extend(_save_in_residuals(model, fwd.node, name, calls, alone=True))
        else:
            edits.append(_unpack_first(model, bwd.node, f"{res}, {name} = {res}"))
            edits.extend(_save_in_residuals(model, fwd.node, name, calls))
    arity = len([*primal.args.posonlyargs, *primal.args.args])
    if primal.args.vararg is not None or primal.args.kwonlyargs:
        raise Refusal(f"`{d.name}` takes *args or keyword-only parameters")
    for ret, value in own_return_values(bwd.node):
        if not isinstance(value, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in value.elts):
            raise Refusal("a bwd `return` is not a tuple literal, so the new slot cannot be placed")
        if len(value.elts) != arity or not value.elts:
            raise Refusal(f"a bwd `return` has {len(value.elts)} entries where {arity} are expected (see VJP306)")
        edits.append(_none_first(model, value))
    for call in calls:
        edits.append(_insert_argument(model, call, name))
    if _reads(primal, name):  # the primal reads it: VJP602 may read the `None` as a forgotten cotangent
        edits.extend(_kept_nondiff_mark(model, d, name, bwd.node, edits, relint))
    return sorted(edits, key=edit_order)


def _kept_nondiff_mark(model: FileModel, d: CustomDerivative, name: str, bwd: ast.FunctionDef,
                       edits: List[Edit], relint: Optional[Callable[[str, str], list]]) -> List[Edit]:
    """`  # noqa: VJP602` after the first bwd `return`'s new `None`, when VJP602 reads it in the
    rewritten text as a forgotten cotangent (the primal reads `name`): differentiating with respect
    to the value was never possible (it raised), which the `None` keeps, and that is what VJP602
    asks to mark so. Found by running VJP602 on the rewrite, so a mark is never unused (VJP901)."""
    def kept(e: object) -> bool:  # VJP602: the `None` for `name`, which the primal's output depends on
        return (isinstance(e, DroppedCotangent) and e.function == d.name and e.params == (name,)
                and e.returned == "none" and e.why == "output")

    if not rewrite_draws(model, edits, KEPT_NONDIFF, kept, relint):
        return []
    first = own_return_values(bwd)[0][1]
    return kept_none_mark(model, first.elts[0].lineno)  # type: ignore[union-attr]  # where VJP602 reports


def kept_none_mark(model: FileModel, row: int) -> List[Edit]:
    """The edit adding `# noqa: VJP602` to line `row` (merged into a noqa there), or none when no
    comment can end that line (a continuation, inside a string)."""
    from vjplint.syntax.noqa import noqa_edit

    edit = noqa_edit("\n".join(model.lines) + "\n", model.lines, row, KEPT_NONDIFF)
    if edit is None:
        return []
    return [edit]


# -- pieces ---------------------------------------------------------------------------------
def _start(model: FileModel, node: ast.AST) -> Tuple[int, int]:
    line, col = loc_of(model, node)
    return line, col + 1


def _end(model: FileModel, node: ast.AST) -> Tuple[int, int]:
    line = node.end_lineno  # type: ignore[attr-defined]
    text = model.lines[line - 1] if 0 < line <= len(model.lines) else ""
    return line, byte_to_char(text, node.end_col_offset) + 1  # type: ignore[attr-defined]


def _insert_parameter(model: FileModel, fn: ast.FunctionDef, name: str) -> Edit:
    params = [*fn.args.posonlyargs, *fn.args.args]
    if not params:
        raise Refusal(f"`{fn.name}` takes no positional parameter to put `{name}` before")
    row, col = _start(model, params[0])
    return _edit(row, col, row, col, f"{name}, ")


def _insert_argument(model: FileModel, call: ast.Call, name: str) -> Edit:
    items = [*call.args, *call.keywords]
    if items:
        row, col = min(_start(model, item) for item in items)
        return _edit(row, col, row, col, f"{name}, ")
    row, col = _end(model, call)
    line = model.lines[row - 1]
    if line[col - 2:col - 1] != ")":
        raise Refusal("a call of the custom_vjp is not spelled `f(...)`")
    return _edit(row, col - 1, row, col - 1, name)


def _unpack_first(model: FileModel, fn: ast.FunctionDef, statement: str) -> Edit:
    body = fn.body
    first = body[1] if (len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                        and isinstance(body[0].value.value, str)) else body[0]
    if first.lineno == fn.lineno:
        raise Refusal(f"`{fn.name}` is a one-line def")
    line = model.lines[first.lineno - 1]
    indent = line[:len(line) - len(line.lstrip())]
    if loc_of(model, first)[1] != len(indent):
        raise Refusal(f"the first statement of `{fn.name}` shares its line")
    return _edit(first.lineno, 1, first.lineno, 1, f"{indent}{statement}\n")


def _none_first(model: FileModel, value: ast.expr) -> Edit:
    """`None, ` before the first entry; a one-entry tuple's trailing comma goes (`(g,)` -> `(None, g)`)."""
    first = value.elts[0]  # type: ignore[attr-defined]
    row, col = _start(model, first)
    if len(value.elts) == 1:  # type: ignore[attr-defined]
        end_row, end_col = _end(model, first)
        rest = model.lines[end_row - 1][end_col - 1:]
        if rest.startswith(",") and rest[1:].lstrip().startswith((")", "]")):
            text = model.lines[row - 1][col - 1:end_col - 1] if row == end_row else None
            if text is not None:
                return _edit(row, col, end_row, end_col + 1, f"None, {text}")
    return _edit(row, col, row, col, "None, ")


def _save_in_residuals(model: FileModel, fwd: ast.FunctionDef, name: str, calls: List[ast.Call],
                       alone: bool = False) -> List[Edit]:
    edits = []
    returns = own_return_values(fwd)
    if not returns:
        raise Refusal("fwd has no `return`")
    for _, value in returns:
        if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2 or \
                any(isinstance(e, ast.Starred) for e in value.elts):
            raise Refusal("a fwd `return` is not a literal (output, residuals) pair (see VJP304)")
        residual = value.elts[1]
        if any(_within(call, residual) for call in calls):
            raise Refusal("a fwd residual calls the custom_vjp itself")
        (r1, c1), (r2, c2) = _start(model, residual), _end(model, residual)
        if r1 != r2:
            raise Refusal("a fwd residual spans several lines")
        old = model.lines[r1 - 1][c1 - 1:c2 - 1]
        edits.append(_edit(r1, c1, r2, c2, name if alone else f"({old}, {name})"))
    return edits


def _call_sites(model: FileModel, d: CustomDerivative, name: str, scope: Scope, registration: ast.AST) -> List[ast.Call]:
    """Every call of `d` in its defining function, each seeing `name` bound in `scope`; any
    other use of `d` (returned, stored, passed on) refuses the fix: its callers cannot be changed."""
    index = model.index
    outer = d.enclosing
    assert outer is not None and d.primal is not None
    inside_registration = _inside(registration)
    calls = []
    for node in walk(outer):
        if not (isinstance(node, ast.Name) and node.id == d.name and isinstance(node.ctx, ast.Load)):
            continue
        if not any(b.node is d.primal for b in index.lookup(node.id, index.scope_of(node))):
            continue
        if node in inside_registration:
            continue
        parent = index.parent(node)
        if not (isinstance(parent, ast.Call) and parent.func is node):
            raise Refusal(f"`{d.name}` is used as a value at line {node.lineno}, so its callers cannot be given "
                          f"`{name}`")
        found = index.resolve(name, index.scope_of(node))
        if found is None or found[0] is not scope:
            raise Refusal(f"`{name}` means something else where `{d.name}` is called at line {node.lineno}")
        calls.append(parent)
    for node in model.index.names(d.name):  # uses outside the defining function
        if isinstance(node.ctx, ast.Load) and not _within(node, outer) and \
                any(b.node is d.primal for b in index.lookup(node.id, index.scope_of(node))):
            raise Refusal(f"`{d.name}` is used outside the function that defines it")
    return calls


def _loads_of_name(model: FileModel, name: str) -> List[ast.AST]:
    return [n for n in model.index.names(name) if isinstance(n.ctx, ast.Load)]


def _reads(fn: FunctionNode, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(fn))


def _inside(node: ast.AST) -> Set[ast.AST]:
    return set(walk(node))


def _within(node: ast.AST, container: Optional[ast.AST]) -> bool:
    return container is not None and node in _inside(container)


# -- custom_jvp ------------------------------------------------------------------------------
def closure_edits_jvp(model: FileModel, d: CustomDerivative, name: str, scope: Scope,
                      relint: Optional[Callable[[str, str], list]] = None) -> List[Edit]:
    """The custom_jvp form: `name` becomes the primal's new leading parameter, the jvp rule takes
    it from `primals` and ignores its tangent, every call passes it:

        def g(x):                          ->  def g(c, x):
        (x,), (t,) = primals, tangents     ->  (c, x,), (_, t,) = primals, tangents

    Measured on JAX 0.10.2 (docs/facts/fixes-v2.md): with only the jvp rule reading the value
    this equals the closure wherever the closure works, and also works under grad(jit(f)) and
    when differentiated with respect to both; passing it through nondiff_argnums does not (a
    traced value there still fails under grad(jit(f))). The jvp rule must unpack `primals` and
    `tangents` by tuple assignments only, so the new slot has an exact place."""
    primal = d.primal
    outer = d.enclosing
    if d.kind != "jvp" or d.api != "jax" or not isinstance(primal, ast.FunctionDef) or outer is None:
        raise Refusal("only a jax.custom_jvp defined with `def` inside a function is rewritten")
    if primal.name != d.name or d.class_node is not None:
        raise Refusal(f"`{d.name}` is not the decorated function itself")
    if d.nondiff or d.nondiff_unresolved:
        raise Refusal("it has nondiff_argnums, whose positions the new argument would shift")
    if name in ("self", "_") or not scope.is_function:
        raise Refusal(f"`{name}` is not a local value of the enclosing function")
    if len(scope.bindings.get(name, [])) != 1 or name in scope.nonlocals:
        raise Refusal(f"`{name}` is bound more than once, so calls may see different values")
    if len(d.registrations) != 1 or d.registrations[0].method != "defjvp":
        raise Refusal("there is not exactly one `defjvp` registration")
    registration = d.registrations[0]
    if truthy_or_unknown(registration.keywords.get("symbolic_zeros")):
        raise Refusal("symbolic_zeros=True changes what the rule receives")
    rule = d.rule("jvp")
    if rule is None or not isinstance(rule.node, ast.FunctionDef) or rule.bound_positional or rule.bound_keywords:
        raise Refusal("the jvp rule is not a function defined with `def` here")
    jvp = rule.node
    if jvp is primal:
        raise Refusal("the primal and the jvp rule are the same function")
    for fn in (primal, jvp):
        static = next((e for e in usage_evidence(model, fn, name) if e.kind == "static"), None)
        if static is not None:
            raise Refusal(f"`{name}` {static.reason}, which fails once it is a traced argument")
    for other in model.derivatives:
        if other is not d and other.rule("jvp") is not None and other.rule("jvp").node is jvp:  # type: ignore[union-attr]
            raise Refusal(f"the jvp rule is shared with `{other.name}`")
    marker: ast.AST = registration.node
    if registration.as_decorator:
        marker = next((e for e in jvp.decorator_list if isinstance(e, ast.Attribute) and e.attr == "defjvp"), jvp)
        if marker is jvp:
            raise Refusal("the `defjvp` decorator is not spelled `@g.defjvp`")
    if any(n not in _inside(marker) for n in _loads_of_name(model, jvp.name)):
        raise Refusal(f"the jvp rule `{jvp.name}` is also used outside `defjvp`")
    if primal.args.vararg is not None or primal.args.kwonlyargs:
        raise Refusal(f"`{d.name}` takes *args or keyword-only parameters")
    params = [*jvp.args.posonlyargs, *jvp.args.args]
    if jvp.args.vararg is not None or len(params) != 2:
        raise Refusal("the jvp rule does not take exactly (primals, tangents)")
    edits: List[Edit] = [_insert_parameter(model, primal, name)]
    edits.extend(_unpack_edits(model, jvp, params[0].arg, params[1].arg, name))
    for call in _call_sites(model, d, name, scope, marker):
        edits.append(_insert_argument(model, call, name))
    edits.extend(_ignored_tangent_mark(model, d, name, edits, relint))
    return sorted(edits, key=edit_order)


def _ignored_tangent_mark(model: FileModel, d: CustomDerivative, name: str, edits: List[Edit],
                          relint: Optional[Callable[[str, str], list]]) -> List[Edit]:
    """`  # noqa: VJP610` where VJP610 reads the rewritten rule's ignored tangent of `name` as a
    derivative missing for it: differentiating with respect to the value was never possible (it
    raised), which the ignored tangent keeps, as the bwd `None` of the custom_vjp form does for
    VJP602. Found by running VJP610 on the rewrite (its typed evidence), so a mark is never unused.
    The edits insert no line, so the rewrite's rows are the file's."""
    if any("\n" in e.content for e in edits):
        return []

    def ignored(e: object) -> bool:
        return isinstance(e, SlopeDisagrees) and e.function == d.name and e.param == name and e.zero

    from vjplint.syntax.noqa import noqa_edit

    out: List[Edit] = []
    for row in sorted(set(rewrite_rows(model, edits, IGNORED_TANGENT, ignored, relint))):
        edit = noqa_edit("\n".join(model.lines) + "\n", model.lines, row, IGNORED_TANGENT)
        if edit is not None:
            out.append(edit)
    return out


def _unpack_edits(model: FileModel, jvp: ast.FunctionDef, primals: str, tangents: str, name: str) -> List[Edit]:
    """`name, ` first in every tuple target `primals` is unpacked into, `_, ` in every one of
    `tangents`; any other use of either (`primals[0]`, passing them on) refuses."""
    if _reads(jvp, "_"):
        raise Refusal("the jvp rule reads `_`, the name the ignored tangent would get")
    covered: Set[ast.AST] = set()
    targets: List[Tuple[ast.expr, str]] = []
    for stmt in walk(jvp):
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        pairs: List[Tuple[ast.expr, ast.expr]] = []
        if isinstance(value, ast.Name):
            pairs = [(target, value)]
        elif isinstance(value, ast.Tuple) and isinstance(target, (ast.Tuple, ast.List)) and \
                len(value.elts) == len(target.elts) and all(isinstance(v, ast.Name) for v in value.elts):
            pairs = list(zip(target.elts, value.elts))
        for t, v in pairs:
            if isinstance(v, ast.Name) and v.id in (primals, tangents):
                if not isinstance(t, (ast.Tuple, ast.List)) or not t.elts or \
                        any(isinstance(e, ast.Starred) for e in t.elts):
                    raise Refusal(f"`{v.id}` is not unpacked into a tuple of names")
                if any(isinstance(e, ast.Name) and e.id == name for e in t.elts):
                    raise Refusal(f"the jvp rule already binds `{name}`")
                covered.add(v)
                targets.append((t, name if v.id == primals else "_"))
    for node in walk(jvp):
        if isinstance(node, ast.Name) and node.id in (primals, tangents) and node not in covered:
            raise Refusal(f"the jvp rule uses `{node.id}` other than by unpacking it into a tuple")
    if not any(new == name for _, new in targets):
        raise Refusal("the jvp rule never unpacks its primals")
    edits = []
    for target, new in targets:
        row, col = _start(model, target.elts[0])  # type: ignore[attr-defined]
        edits.append(_edit(row, col, row, col, f"{new}, "))
    return edits
