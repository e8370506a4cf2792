"""The residual-plus-None rewrite (SPEC section 7) as text edits at `ast` positions: the one
writer of the codemod, for every path (`--fix`, `--diff`, JSON/SARIF/LSP edits, the editor's
quick fixes, verify, the cross-module rewrite).

A custom_vjp whose nondiff positions hold arrays becomes the form JAX documents: the arrays leave
`nondiff_argnums`/`nondiff_argnames`, fwd appends them to its residuals, bwd unpacks them from the
residuals and returns `None` in their output slots. The primal's signature never changes, so
callers keep working. Plans come from `plans/residual_plan.plan()` (the `ast` model); this module
finds each plan's nodes in the module at the plan's locations (no model: a plan carried from the
lint is written as it is) and writes the few tokens that change, keeping everything else as it
was: def and lambda rules (async ones too), literal, indexed and bound returns, empty bwd returns,
positional-only parameters, the imports the rewrite leaves unused; sequences over one line or
several, with comments (`residual_layout.Items`: an end-of-line comment stays with its item, the
comments of removed nondiff keywords move above the decorator or statement); statements sharing a
line (`a; return b`, a body on the def line); the file's own line endings and indentation for
what it inserts. A plan whose code it cannot write exactly (a token layout it does not know) is
not written: its fix is not made, and the code is never guessed at.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import Counter
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

from vjplint.fixes.edits import apply_spans
from vjplint.fixes.residual_imports import first_row, import_spans
from vjplint.fixes.residual_layout import Hard, Items, Source, Span, comments
from vjplint.plans.residual_plan import Plan, loc_of
from vjplint.plans.residual_reads import own_return_values
from vjplint.syntax.positions import byte_to_char

_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*")
_PLAIN_STRING = re.compile(r"""[rRuU]?(?:"[^"\\\n]*"|'[^'\\\n]*')\Z""")
_COMMENT_LINE = re.compile(r"[ \t]*(#.*)?\Z")

ALL_PARTS = ("creation", "fwd", "bwd")


class Written(NamedTuple):
    """What `spans_of` writes: each plan's spans (in `plans` order; None for a plan it cannot
    write, whose fix is not made), the spans removing imports the rewrite leaves unused, and
    whether no two plans' spans share a line (each plan's edits can then be diffed alone)."""

    per_plan: List[Optional[List[Span]]]
    imports: List[Span]
    apart: bool


def spans_of(text: str, lines: Sequence[str], module: ast.Module, plans: Sequence[Plan],
             parts: Optional[Sequence[Tuple[str, ...]]] = None) -> Written:
    """Each plan's spans and those removing an import the rewrite leaves unused. The plans' nodes
    are found in `module` at the plans' locations. `parts[i]`: what of `plans[i]` this module
    holds ("creation", "fwd", "bwd"), for a rewrite across modules (vjplint.fixes.cross_plan);
    all when not given."""
    source = Source(text, lines)
    firsts = [first_row(s) for s in module.body]
    held = list(parts) if parts is not None else [ALL_PARTS] * len(plans)
    found: List[Optional[List[Span]]] = []
    located: List[Optional[Nodes]] = []
    for p, roles in zip(plans, held):
        try:
            nodes = _locate(source, module, firsts, p, roles)
            found.append(_plan_spans(source, module, firsts, p, nodes))
            located.append(nodes)
        except Hard:
            found.append(None)
            located.append(None)
    creating = [i for i, roles in enumerate(held) if "creation" in roles and located[i] is not None]
    try:
        imports = import_spans(source, module, firsts, [plans[i] for i in creating],
                                [located[i] for i in creating])  # type: ignore[misc]
    except Hard:  # the import stays (an unused import is the user's to remove, and safe)
        imports = []
    rows: Set[int] = set()
    apart = True
    for spans in found:
        if not spans:
            continue
        mine = {r for start, end, _ in spans for r in range(source.row_of(start), source.row_of(end) + 1)}
        apart = apart and rows.isdisjoint(mine)
        rows |= mine
    return Written(found, imports, apart)


Rule = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Def = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Nodes = Tuple[Optional[ast.Call], Optional[Rule], Optional[Rule]]  # a plan's creation call, fwd and bwd (those held)


def _locate(source: Source, module: ast.Module, firsts: List[int], p: Plan, roles: Tuple[str, ...] = ALL_PARTS
            ) -> Nodes:
    """The creation call (the one whose callee is not itself a call) and fwd's and bwd's defs
    or lambdas at the plan's locations, each found once; Hard otherwise. Only the parts in
    `roles` are looked for (None for the others, which are in other files)."""
    wanted = {"creation": p.creation, "fwd": p.fwd.loc, "bwd": p.bwd.loc}
    rows = {wanted[role][0] for role in roles}
    statements = {bisect.bisect_right(firsts, row) - 1 for row in rows} - {-1}
    calls: List[ast.Call] = []
    defs: Dict[str, List[ast.AST]] = {"fwd": [], "bwd": []}
    for index in sorted(statements):
        for node in ast.walk(module.body[index]):
            cls = node.__class__
            if cls is ast.Call and node.lineno == p.creation[0] and not isinstance(node.func, ast.Call):  # type: ignore[attr-defined]
                calls.append(node)  # type: ignore[arg-type]
            elif cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
                for role, rule in (("fwd", p.fwd), ("bwd", p.bwd)):
                    if not rule.is_lambda and node.lineno == rule.loc[0] and node.name == rule.name:  # type: ignore[attr-defined]
                        defs[role].append(node)
            elif cls is ast.Lambda:
                for role, rule in (("fwd", p.fwd), ("bwd", p.bwd)):
                    if rule.is_lambda and node.lineno == rule.loc[0] and \
                            byte_to_char(source.lines[node.lineno - 1], node.col_offset) == rule.loc[1]:  # type: ignore[attr-defined]
                        defs[role].append(node)
    lines = source.lines
    calls = [c for c in calls if byte_to_char(lines[c.lineno - 1], c.col_offset) == p.creation[1]]
    found = {"creation": calls, **defs}
    if any(len(found[role]) != 1 for role in roles):
        raise Hard("the plan's nodes are not where it says")
    call, fwd, bwd = (found[role][0] if role in roles else None for role in ALL_PARTS)
    return call, fwd, bwd  # type: ignore[return-value]


def _plan_spans(source: Source, module: ast.Module, firsts: List[int], p: Plan, nodes: Nodes) -> List[Span]:
    call, fwd, bwd = nodes
    spans = _creation(source, module, firsts, p, call) if call is not None else []
    if fwd is not None:
        if p.fwd_capture:
            if isinstance(fwd, ast.Lambda):
                raise Hard("a copy to bind in a lambda")
            copies, params = zip(*p.fwd_capture)
            spans.append(_insert_statement(source, fwd, f"{', '.join(copies)} = {', '.join(params)}"))
        spans += _returns(source, fwd, p, "fwd")
    if bwd is None:
        return spans
    spans += _bwd_params(source, module, firsts, bwd, p)
    reads: List[Span] = []
    if p.mode != "single":
        if isinstance(bwd, ast.Lambda):  # each unpacked name read as `res[i]`
            index = {name: i for i, name in enumerate(p.unpack)}
            reads = [(source.start(n), source.end(n), f"{p.res_name}[{index[n.id]}]") for n in ast.walk(bwd.body)
                     if isinstance(n, ast.Name) and n.id in index]
        else:
            spans.append(_insert_statement(source, bwd, f"{', '.join(p.unpack)} = {p.res_name}"))
    spans += _returns(source, bwd, p, "bwd", reads)
    return spans


def _opening(source: Source, after: int, limit: int, bracket: str) -> int:
    """The offset just past `bracket`, which must follow `after` with only spaces between."""
    text = source.text
    i = after
    while i < limit and text[i] in " \t":
        i += 1
    if i >= limit or text[i] != bracket:
        raise Hard("no bracket where expected")
    return i + 1


# -- the creation site -----------------------------------------------------------------------------
def _creation(source: Source, module: ast.Module, firsts: List[int], p: Plan, call: ast.Call) -> List[Span]:
    """The nondiff keywords lose the moved positions; `partial(custom_vjp)` with nothing left
    becomes `custom_vjp`. Comments of what goes move above the decorator or statement holding
    the call, at its indentation, in their order."""
    spans = _creation_spans(source, p, call)
    return spans + _moved_comments(source, module, firsts, call, source.start(call), source.end(call), spans)


def _moved_comments(source: Source, module: ast.Module, firsts: List[int], node: ast.AST, start: int, end: int,
                    spans: Sequence[Span]) -> List[Span]:
    """The comments between `start` and `end` that `spans` remove, above the decorator or the
    statement holding `node`, at its indentation, in their order (none is lost with its code)."""
    before = comments(source.text[start:end])
    if not before:
        return []
    inside = [(a - start, b - start, v) for a, b, v in spans if start <= a and b <= end]
    after = Counter(comments(apply_spans(source.text[start:end], inside)))
    lost = []
    for comment in before:
        if after[comment]:
            after[comment] -= 1
        else:
            lost.append(comment)
    if not lost:
        return []
    at = _holder_line(source, module, firsts, node)
    line = source.lines[source.row_of(at) - 1]
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    return [(at, at, "".join(f"{indent}{c}{source.newline}" for c in lost))]


def _holder_line(source: Source, module: ast.Module, firsts: List[int], node: ast.AST) -> int:
    """The offset of the line starting the decorator or the simple statement that holds `node`
    (a def: its first decorator's line, or its own)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return source.starts[first_row(node) - 1]
    index = bisect.bisect_right(firsts, node.lineno) - 1  # type: ignore[attr-defined]
    at = source.start(node)
    holder: Optional[ast.AST] = None
    for node in ast.walk(module.body[index]):
        for decorator in getattr(node, "decorator_list", ()):
            if source.start(decorator) <= at < source.end(decorator):
                return source.line_start(source.start(decorator))
        if isinstance(node, ast.stmt) and not hasattr(node, "body") and source.start(node) <= at < source.end(node):
            holder = node
    if holder is None:
        raise Hard("a creation call in a compound statement's header")
    start = source.start(holder)
    if source.text[source.line_start(start):start].strip(" \t") and \
            not source.text[source.line_start(start):start].rstrip(" \t").endswith(";"):
        raise Hard("a creation call in a statement after a colon")
    return source.line_start(start)


def _creation_spans(source: Source, p: Plan, call: ast.Call) -> List[Span]:
    start, end = source.start(call), source.end(call)
    text = source.text
    if text[end - 1] != ")":
        raise Hard("a call without its closing bracket at its end")
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise Hard("starred arguments")
    items: List[Union[ast.expr, ast.keyword]] = sorted(
        [*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    after_open = _opening(source, source.end(call.func), end, "(")
    names = [it.arg if isinstance(it, ast.keyword) else None for it in items]
    drop: Set[int] = set()
    values: Dict[int, str] = {}
    for keyword, kind, kept in p.keywords:
        if keyword not in names:
            continue
        index = names.index(keyword)
        new = _kept_value(source, items[index], kind, kept)  # type: ignore[arg-type]
        if new is None:
            drop.add(index)
        elif new is not _SAME:
            values[index] = new
    if p.collapse:
        rest = [i for i in range(len(items)) if i not in drop]
        if len(rest) == 1 and names[rest[0]] is None:
            first = items[rest[0]]
            _check_plain(source, after_open, first, items, end - 1)
            return [(start, end, text[source.start(first):source.end(first)])]
    if not drop:
        return [(a, b, v) for a, b, v in (_value_span(source, items[i], v) for i, v in values.items())]
    sequence = Items(source, items, after_open, end - 1, owner="comma")
    for i, v in values.items():
        a, _, _ = _value_span(source, items[i], v)
        sequence.values[i] = text[sequence.starts[i]:a] + v
    first = sequence.starts[0] if items else after_open
    return [(first, end - 1, sequence.removed(drop, single_tuple=False))]


def _check_plain(source: Source, after_open: int, first: ast.AST, items: Sequence[ast.AST], close: int) -> None:
    """The call's first argument is written without parentheses of its own (kept as the node is)."""
    text = source.text
    if text[after_open:source.start(first)].strip(" \t\r\n") and \
            not _only_comments(text[after_open:source.start(first)]):
        raise Hard("parentheses around the first argument")
    following = items[1] if len(items) > 1 and items[0] is first else None
    rest = text[source.end(first):source.start(following) if following is not None else close]
    head = rest.lstrip(" \t")
    if following is None:
        if head.startswith(","):
            head = head[1:]
        if not _only_comments(head):
            raise Hard("parentheses around the first argument")
    elif not head.startswith(","):
        raise Hard("parentheses around the first argument")


def _only_comments(piece: str) -> bool:
    return all(_COMMENT_LINE.match(line) for line in re.split(r"\r\n?|\n", piece))


_SAME = ""  # a sentinel: the keyword keeps its value as written


def _kept_value(source: Source, keyword: ast.keyword, kind: str, kept: Tuple[Union[int, str], ...]) -> Optional[str]:
    """None to drop the keyword, `_SAME` to keep it, else its new value: a literal tuple or list
    loses the moved entries (its layout kept), anything else is written as a new tuple."""
    if not kept:
        return None
    value = keyword.value
    text = source.text
    segment = text[source.start(value):source.end(value)]
    if kind == "names" and isinstance(value, ast.Constant) and isinstance(value.value, str):
        if not _PLAIN_STRING.match(segment):
            raise Hard("a string read as concatenated")
        return _SAME
    keep = set(kept)
    if isinstance(value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in value.elts):
        literal = [_literal(source, e) for e in value.elts]
        if all(v is not None for v in literal):
            drop = {i for i, v in enumerate(literal) if v not in keep}
            if not drop:
                return _SAME
            start, end = source.start(value), source.end(value)
            bracket = "(" if isinstance(value, ast.Tuple) else "["
            if text[start] != bracket or text[end - 1] != {"(": ")", "[": "]"}[bracket]:
                raise Hard("a tuple without its own parentheses")
            sequence = Items(source, value.elts, start + 1, end - 1)
            first = sequence.starts[0]
            inner = sequence.removed(drop, single_tuple=isinstance(value, ast.Tuple))
            _, value_start = _keyword_value_start(source, keyword)
            return text[value_start:first] + inner + text[end - 1:source.end(keyword)]
    return _tuple([str(v) if isinstance(v, int) else f'"{v}"' for v in kept])


def _literal(source: Source, node: ast.expr) -> Optional[Union[int, str]]:
    """An integer or a (single) string; anything else is None."""
    if not isinstance(node, ast.Constant):
        return None
    segment = source.text[source.start(node):source.end(node)]
    if type(node.value) is int:
        if not re.match(r"[0-9]", segment):
            raise Hard("a parenthesised number")
        return node.value
    if isinstance(node.value, str):
        if not _PLAIN_STRING.match(segment):
            raise Hard("a string read as concatenated")
        return node.value
    return None


def _keyword_value_start(source: Source, keyword: ast.keyword) -> Tuple[int, int]:
    start = source.start(keyword)
    m = _KEYWORD.match(source.text, start)
    if m is None or m.group(1) != keyword.arg:
        raise Hard("an unusual keyword")
    return start, m.end()


def _value_span(source: Source, keyword: ast.AST, value: str) -> Span:
    """The span replacing the keyword's value (with its parentheses) by `value`."""
    assert isinstance(keyword, ast.keyword)
    _, value_start = _keyword_value_start(source, keyword)
    return value_start, source.end(keyword), value


# -- returns ---------------------------------------------------------------------------------------
def _returns(source: Source, fn: Rule, p: Plan, role: str, reads: Sequence[Span] = ()) -> List[Span]:
    """The spans rewriting each `return` of `fn` (a lambda's body); `reads`: names of a bwd
    lambda's body to write as `res[i]`."""
    rule = p.fwd if role == "fwd" else p.bwd
    found = own_return_values(fn)
    if len(found) != len(rule.returns):
        raise Hard("returns differ from the plan")
    spans = []
    for (node, value), r in zip(found, rule.returns):
        if loc_of(_Lines(source.lines), node) != r.loc:
            raise Hard("a return moved")
        if isinstance(fn, ast.Lambda):
            if r.how != "literal" or not isinstance(value, (ast.Tuple, ast.List)):
                spans.append(_lambda_return(source, fn, p, role, r.how, reads))
                continue
        elif r.how in ("index", "bind") and isinstance(node, ast.Return) and value is not None:
            spans += _bound_return(source, node, value, p, role, r.how)
            continue
        if r.how != "literal" or not isinstance(value, (ast.Tuple, ast.List)):
            raise Hard("a bound or indexed return")
        spans.append(_fwd_return(source, value, p) if role == "fwd" else _bwd_return(source, value, p, reads))
    return spans


def _new_value(p: Plan, role: str, name: str, first: Optional[str] = None, parens: bool = False) -> str:
    """The returned value of an indexed or bound return: fwd `v[0], (v[1], *moved)`, bwd
    `(v[0], None, v[1], ...)`; `first` replaces `v` at its first use (a walrus in a lambda)."""
    head = first if first is not None else name
    if role == "fwd":
        pair = f"{head}[0], " + _tuple([f"{name}[1]", *p.fwd_moved])
        return f"({pair})" if parens else pair
    slots, items, old = set(p.none_slots), [], 0
    for index in range(p.d_old + len(slots)):
        if index in slots:
            items.append("None")
        else:
            items.append(f"{head if old == 0 else name}[{old}]")
            old += 1
    return _tuple(items)


def _bound_return(source: Source, ret: ast.Return, value: ast.expr, p: Plan, role: str, how: str) -> List[Span]:
    """A `return` whose value is indexed ("index": a name) or first bound to a fresh name
    ("bind": `name = value` right before the `return`, on a line of its own after the comments
    above it, or before it on its line when it shares one: `name = value; return ...`)."""
    text, lines = source.text, source.lines
    line = lines[ret.lineno - 1]
    column = byte_to_char(line, ret.col_offset)
    last = lines[(ret.end_lineno or ret.lineno) - 1]
    after = last[byte_to_char(last, ret.end_col_offset or 0):]
    shared = bool(line[:column].strip(" \t")) or not _COMMENT_LINE.match(after)
    keyword = source.start(ret) + len("return")
    start = re.compile(r"[ \t]*").match(text, keyword).end()  # type: ignore[union-attr]
    end = source.end(ret)
    if not (text[start] == "(" or start == source.start(value)):
        raise Hard("an unusual return")
    spans: List[Span] = []
    if how == "index":
        name = text[start:end]  # with its parentheses, as the node is indexed
    else:
        name = p.fwd.bind_name if role == "fwd" else p.bwd.bind_name
        # a value's parentheses go, but a tuple's are its own
        bound = text[start:end] if isinstance(value, ast.Tuple) else text[source.start(value):source.end(value)]
        if shared:
            spans.append((source.start(ret), source.start(ret), f"{name} = {bound}; "))
        else:
            row_start = source.starts[ret.lineno - 1]
            spans.append((row_start, row_start, f"{line[:column]}{name} = {bound}{source.newline}"))
    new = _new_value(p, role, name)
    if start == keyword and not new.startswith("("):
        new = " " + new  # `return(v)` becomes `return v[0], (...)`, never `returnv[0]`
    spans.append((start, end, new))
    return spans


def _lambda_return(source: Source, fn: ast.Lambda, p: Plan, role: str, how: str, reads: Sequence[Span]) -> Span:
    """A lambda rule's body that is not a literal pair: indexed as it is ("index", with its
    parentheses), or bound by a walrus at its first use ("bind": `((v := body)[0], (v[1], ...))`)."""
    text = source.text
    end = source.end(fn)
    a = fn.args
    params = [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs,
              *([a.kwarg] if a.kwarg else []), *a.defaults, *(d for d in a.kw_defaults if d is not None)]
    after_params = max([source.start(fn) + len("lambda"), *(source.end(x) for x in params)])
    colon = text.find(":", after_params, source.start(fn.body))
    start = re.compile(r"[ \t]*").match(text, colon + 1).end()  # type: ignore[union-attr]
    if colon < 0 or "\n" in text[colon:start] or not (text[start] == "(" or start == source.start(fn.body)):
        raise Hard("an unusual lambda body")
    inner = [(a - start, b - start, v) for a, b, v in reads if start <= a and b <= end]
    if len(inner) != len(reads):
        raise Hard("names to read outside the body")
    if how == "index":
        return start, end, _new_value(p, role, apply_spans(text[start:end], inner), parens=True)
    if how != "bind":
        raise Hard("an unusual lambda return")
    body = fn.body
    a, b = (start, end) if isinstance(body, ast.Tuple) else (source.start(body), source.end(body))
    bound = apply_spans(text[a:b], [(x - a + start, y - a + start, v) for x, y, v in inner])
    name = p.fwd.bind_name if role == "fwd" else p.bwd.bind_name
    return start, end, _new_value(p, role, name, first=f"({name} := {bound})", parens=True)


class _Lines:
    """What `loc_of` reads of a model."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines


def _sequence(source: Source, value: Union[ast.Tuple, ast.List]) -> Items:
    """The elements of a returned tuple or list (closed by its bracket, or for a tuple without
    parentheses by its end)."""
    text = source.text
    start, end = source.start(value), source.end(value)
    if not value.elts:
        raise Hard("an empty tuple")
    first = source.start(value.elts[0])
    if first > start:  # brackets of its own
        if text[start] not in "([" or text[end - 1] not in ")]":
            raise Hard("brackets where none were expected")
        return Items(source, value.elts, start + 1, end - 1)
    return Items(source, value.elts, first, end)


def _fwd_return(source: Source, value: Union[ast.Tuple, ast.List], p: Plan) -> Span:
    if len(value.elts) != 2:
        raise Hard("not a pair")
    items = _sequence(source, value)
    moved = list(p.fwd_moved)
    if p.mode == "single":
        residual = moved[0]
    elif p.mode == "tuple":
        residual = _tuple(moved)
    else:
        residual = _tuple([items.values[1], *moved])
    return items.starts[1], items.ends[1], residual


def _tuple(values: Sequence[str]) -> str:
    return "(" + ", ".join(values) + ("," if len(values) == 1 else "") + ")"


def _bwd_return(source: Source, value: Union[ast.Tuple, ast.List], p: Plan, reads: Sequence[Span] = ()) -> Span:
    """`None` at each new slot of bwd's returned sequence (`Items.inserted`). An empty `()` or
    `[]` gets its `None`s joined by ", " (a lone one in a tuple with its comma). `reads`: spans
    within the elements, applied to their text."""
    if not value.elts:
        if reads:
            raise Hard("names to read outside the elements")
        start, end = source.start(value), source.end(value)
        if source.text[start:end] not in ("()", "[]"):
            raise Hard("an empty sequence with text inside its brackets")
        nones = ["None"] * len(p.none_slots)
        single = isinstance(value, ast.Tuple) and len(nones) == 1
        return start + 1, end - 1, ", ".join(nones) + ("," if single else "")
    items = _sequence(source, value)
    if reads:
        _substitute(items, reads)
    new, _ = items.inserted(sorted(slot - k for k, slot in enumerate(p.none_slots)))
    return items.starts[0], items.close, new


def _substitute(items: Items, reads: Sequence[Span]) -> None:
    """`items`' values with `reads` applied (each must lie inside one element)."""
    by_item: Dict[int, List[Span]] = {}
    for start, end, new in reads:
        k = bisect.bisect_right(items.starts, start) - 1
        if k < 0 or end > items.ends[k]:
            raise Hard("a name to read outside the elements")
        base = items.starts[k]
        by_item.setdefault(k, []).append((start - base, end - base, new))
    for k, spans in by_item.items():
        items.values[k] = apply_spans(items.values[k], spans)


# -- bwd's parameters ------------------------------------------------------------------------------
def _bwd_params(source: Source, module: ast.Module, firsts: List[int], fn: Rule, p: Plan) -> List[Span]:
    """The residual parameter renamed (or, for one moved value, the moved parameter in its
    place); the moved parameters go with what follows them up to the next parameter (their
    comma and end-of-line comment, which moves above the def)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    text = source.text
    res = positional[p.bwd_res_index]
    if p.mode == "single":
        moved = positional[p.bwd_drop[0]]
        new_res = text[source.start(moved):source.end(moved)]
    else:
        new_res = p.res_name
    spans = [(source.start(res), source.end(res), new_res)]
    posonly = len(args.posonlyargs)
    kept_posonly = any(i not in p.bwd_drop for i in range(posonly))
    for i in p.bwd_drop:
        if i + 1 >= len(positional) or i >= p.bwd_res_index:
            raise Hard("a dropped parameter after the residuals")
        end = source.start(positional[i + 1])
        if i == posonly - 1 and kept_posonly:  # the last positional-only one goes, the `/` stays
            slash = re.compile(r"[ \t]*,[ \t]*/").match(text, source.end(positional[i]))
            if slash is None:
                raise Hard("an unusual `/`")
            end = slash.end() - 1
        # (when none is left, the `/` goes too: the span runs to the next parameter)
        spans.append((source.start(positional[i]), end, ""))
    first, last = source.start(positional[0]), source.end(positional[-1])
    return spans + _moved_comments(source, module, firsts, fn, first, last, spans)


# -- a statement first in a body -------------------------------------------------------------------
def _insert_statement(source: Source, fn: Def, statement: str) -> Span:
    """`statement` first in `fn`'s body, after a docstring (a string statement alone on its
    line), before the comments and blank lines that lead the statement it goes before, in the
    file's line ending. A body on the def line (`def f(a): return a`) becomes a block, at the
    def's indentation plus one level of the file's."""
    text, lines = source.text, source.lines
    body = fn.body
    head = body[0]
    head_start = source.start(head)
    if text[source.line_start(head_start):head_start].strip(" \t"):  # the body follows the colon
        colon = len(text[:head_start].rstrip(" \t")) - 1
        if text[colon] != ":":
            raise Hard("a body after something other than the colon")
        def_line = lines[fn.lineno - 1]
        indent = def_line[:len(def_line) - len(def_line.lstrip(" \t"))] + source.indent()
        return colon + 1, head_start, f"{source.newline}{indent}{statement}{source.newline}{indent}"
    anchor = _header_row(source, fn)
    at = 0
    if _is_docstring(head) and not (len(body) > 1 and body[1].lineno <= (head.end_lineno or head.lineno)):
        line = lines[(head.end_lineno or head.lineno) - 1]
        rest = line[byte_to_char(line, head.end_col_offset or 0):]  # type: ignore[arg-type]
        if not re.match(r"[ \t]*;?[ \t]*(#.*)?\Z", rest):
            raise Hard("text after the docstring")
        anchor, at = head.end_lineno or head.lineno, 1
    target = body[at] if at < len(body) else head
    line = lines[target.lineno - 1]
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    if byte_to_char(line, target.col_offset) != len(indent):
        raise Hard("an unusual indentation")
    offset = source.starts[anchor]
    return offset, offset, f"{indent}{statement}{source.newline}"


def _header_row(source: Source, fn: Def) -> int:
    """The row of the `:` that ends `fn`'s signature: the last line before its first statement
    that is not blank or a comment."""
    lines = source.lines
    row = fn.body[0].lineno - 1
    while row > fn.lineno and _COMMENT_LINE.match(lines[row - 1]):
        row -= 1
    signature_end = max([fn.lineno, *(getattr(n, "end_lineno", None) or 0 for n in ast.walk(fn.args)),
                         (fn.returns.end_lineno or 0) if fn.returns is not None else 0])
    if row < signature_end:
        raise Hard("a signature the scan cannot place")
    return row


def _is_docstring(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, (str, bytes)))
