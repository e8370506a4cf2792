"""The residual-plus-None rewrite as text edits at `ast` positions: the writer of every
spelling it can write exactly as libcst would.

libcst (`residual_plus_none.py`) costs its import and a parse of the statements it rewrites,
several times the linter's own work on a file; most rewrites only change a few tokens. This
module writes them from the positions `ast` gives, finding each plan's nodes in the module at the
plan's locations (no model: a plan carried from the lint is written as it is): def and lambda
rules, literal, indexed and bound returns, empty bwd returns, positional-only parameters, the
imports the rewrite leaves unused. What it is not sure of raises `Hard`, and the caller runs
libcst: comments beside the changed code (in the creation call, a returned tuple, the
parameters), a sequence over several lines it must re-punctuate, a statement sharing a line with
a changed one, a word that may be a use of a dropped import, `\\r` line endings where a line is
inserted, an async rule. tests/unit/test_fix_text_edits.py compares both on every fixture and
on generated spellings.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

from vjplint.fixes.edits import apply_spans, line_starts
from vjplint.plans.residual_plan import Plan, loc_of
from vjplint.plans.residual_reads import own_return_values
from vjplint.syntax.positions import byte_to_char

Span = Tuple[int, int, str]  # (start, end, new text), character offsets in the original text
_SEPARATOR = re.compile(r"[ \t]*,[ \t]*\Z")
_BLANK = re.compile(r"[ \t]*\Z")
_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*")
_PLAIN_STRING = re.compile(r"""[rRuU]?(?:"[^"\\\n]*"|'[^'\\\n]*')\Z""")


class Hard(Exception):
    """This rewrite needs libcst."""


class _Source:
    """A text with its lines and line offsets, converting `ast` positions to offsets."""

    def __init__(self, text: str, lines: Sequence[str]) -> None:
        self.text = text
        self.lines = lines
        self.starts = line_starts(text)

    def at(self, row: int, byte_col: int) -> int:
        return self.starts[row - 1] + byte_to_char(self.lines[row - 1], byte_col)

    def start(self, node: ast.AST) -> int:
        return self.at(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.at(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def row_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


ALL_PARTS = ("creation", "fwd", "bwd")


def spans_of(text: str, lines: Sequence[str], module: ast.Module, plans: Sequence[Plan],
             parts: Optional[Sequence[Tuple[str, ...]]] = None) -> Optional[Tuple[List[List[Span]], List[Span]]]:
    """Each plan's spans (in `plans` order) and those removing an import the rewrite leaves
    unused, or None when any of them needs libcst. The plans' nodes are found in `module` at the
    plans' locations (no model is needed: a plan carried from the lint is written as it is).
    `parts[i]`: what of `plans[i]` this module holds ("creation", "fwd", "bwd"), for a rewrite
    across modules (vjplint.fixes.cross_plan), as libcst's `fix_text(parts=)`; all when not given."""
    source = _Source(text, lines)
    firsts = [_first_row(s) for s in module.body]
    held = list(parts) if parts is not None else [ALL_PARTS] * len(plans)
    try:
        located = [_locate(source, module, firsts, p, roles) for p, roles in zip(plans, held)]
        creating = [i for i, roles in enumerate(held) if "creation" in roles]
        imports = _import_spans(source, module, firsts, [plans[i] for i in creating], [located[i] for i in creating])
        found = [_plan_spans(source, p, nodes) for p, nodes in zip(plans, located)]
    except Hard:
        return None
    rows: Set[int] = set()
    for spans in found:  # each plan's edits are diffed alone: no two may share a line
        mine = {r for start, end, _ in spans for r in range(source.row_of(start), source.row_of(end) + 1)}
        if not rows.isdisjoint(mine):
            return None
        rows |= mine
    return found, imports


Rule = Union[ast.FunctionDef, ast.Lambda]
Nodes = Tuple[Optional[ast.Call], Optional[Rule], Optional[Rule]]  # a plan's creation call, fwd and bwd (those held)


def _locate(source: _Source, module: ast.Module, firsts: List[int], p: Plan, roles: Tuple[str, ...] = ALL_PARTS
            ) -> Nodes:
    """The creation call (the one whose callee is not itself a call, as libcst's writer reads it)
    and fwd's and bwd's defs or lambdas at the plan's locations, each found once; Hard otherwise.
    Only the parts in `roles` are looked for (None for the others, which are in other files)."""
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
    if any(not isinstance(found[role][0], (ast.FunctionDef, ast.Lambda)) for role in ("fwd", "bwd") if role in roles):
        raise Hard("an async rule")
    call, fwd, bwd = (found[role][0] if role in roles else None for role in ALL_PARTS)
    return call, fwd, bwd  # type: ignore[return-value]


def _plan_spans(source: _Source, p: Plan, nodes: Nodes) -> List[Span]:
    call, fwd, bwd = nodes
    spans = _creation(source, p, call) if call is not None else []
    if fwd is not None:
        if p.fwd_capture:
            if not isinstance(fwd, ast.FunctionDef):
                raise Hard("a copy to bind in a lambda")
            copies, params = zip(*p.fwd_capture)
            spans.append(_insert_statement(source, fwd, f"{', '.join(copies)} = {', '.join(params)}"))
        spans += _returns(source, fwd, p, "fwd")
    if bwd is None:
        return spans
    spans += _bwd_params(source, bwd, p)
    reads: List[Span] = []
    if p.mode != "single":
        if isinstance(bwd, ast.Lambda):  # libcst's `_Substitute`: each unpacked name read as `res[i]`
            index = {name: i for i, name in enumerate(p.unpack)}
            reads = [(source.start(n), source.end(n), f"{p.res_name}[{index[n.id]}]") for n in ast.walk(bwd.body)
                     if isinstance(n, ast.Name) and n.id in index]
        else:
            spans.append(_insert_statement(source, bwd, f"{', '.join(p.unpack)} = {p.res_name}"))
    spans += _returns(source, bwd, p, "bwd", reads)
    return spans


# -- sequences: the text between items ------------------------------------------------------------
class _Items:
    """Items of a one-line bracketed sequence (call arguments, tuple elements): their text and the
    text after each (its comma and spaces; the last one's runs to the closing bracket)."""

    def __init__(self, source: _Source, nodes: Sequence[ast.AST], after_open: int, close: int) -> None:
        text = source.text
        self.starts = [source.start(n) for n in nodes]
        self.ends = [source.end(n) for n in nodes]
        self.close = close
        if "\n" in text[after_open:close] or "\r" in text[after_open:close]:
            raise Hard("a multi-line sequence")
        if nodes and not _BLANK.match(text, after_open, self.starts[0]) or not nodes and not _BLANK.match(
                text, after_open, close):
            raise Hard("text before the first item")
        self.values = [text[s:e] for s, e in zip(self.starts, self.ends)]
        self.tails = [text[e:s] for e, s in zip(self.ends, [*self.starts[1:], close])]
        for tail in self.tails[:-1]:
            if not _SEPARATOR.match(tail):
                raise Hard("a separator that is not a plain comma")
        if self.tails and self.tails[-1] not in ("", ","):
            raise Hard("spaces or parentheses before the closing bracket")

    def removed(self, drop: Set[int], single_tuple: bool) -> str:
        """The text from the first item to the closing bracket with `drop` removed, as libcst's
        `_remove_items` writes it: the new last item takes the old last item's comma."""
        n = len(self.values)
        kept = [i for i in range(n) if i not in drop]
        out: List[str] = []
        for k, i in enumerate(kept):
            last = k == len(kept) - 1
            tail = self.tails[n - 1] if last and n - 1 in drop else self.tails[i]
            if last and single_tuple and len(kept) == 1 and "," not in tail:
                tail = "," + tail
            out.append(self.values[i] + tail)
        return "".join(out)


def _opening(source: _Source, after: int, limit: int, bracket: str) -> int:
    """The offset just past `bracket`, which must follow `after` with only spaces between."""
    text = source.text
    i = after
    while i < limit and text[i] in " \t":
        i += 1
    if i >= limit or text[i] != bracket:
        raise Hard("no bracket where expected")
    return i + 1


# -- the creation site -----------------------------------------------------------------------------
def _creation(source: _Source, p: Plan, call: ast.Call) -> List[Span]:
    start, end = source.start(call), source.end(call)
    text = source.text
    if "#" in text[start:end] or text[end - 1] != ")":
        raise Hard("comments in the creation call")
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
    sequence = _Items(source, items, after_open, end - 1)
    for i, v in values.items():
        a, _, _ = _value_span(source, items[i], v)
        sequence.values[i] = text[sequence.starts[i]:a] + v
    first = sequence.starts[0] if items else after_open
    return [(first, end - 1, sequence.removed(drop, single_tuple=False))]


def _check_plain(source: _Source, after_open: int, first: ast.AST, items: Sequence[ast.AST], close: int) -> None:
    """The call's first argument is written plainly (libcst keeps it with its parentheses)."""
    text = source.text
    if not re.match(r"\s*\Z", text[after_open:source.start(first)]):
        raise Hard("parentheses around the first argument")
    following = items[1] if len(items) > 1 and items[0] is first else None
    rest = text[source.end(first):source.start(following) if following is not None else close]
    if not re.match(r"\s*,?\s*\Z" if following is None else r"\s*,", rest):
        raise Hard("parentheses around the first argument")


_SAME = ""  # a sentinel: the keyword keeps its value as written


def _kept_value(source: _Source, keyword: ast.keyword, kind: str, kept: Tuple[Union[int, str], ...]) -> Optional[str]:
    """libcst's `_kept_value`: None to drop the keyword, `_SAME` to keep it, else its new value."""
    if not kept:
        return None
    value = keyword.value
    text = source.text
    segment = text[source.start(value):source.end(value)]
    if kind == "names" and isinstance(value, ast.Constant) and isinstance(value.value, str):
        if not _PLAIN_STRING.match(segment):
            raise Hard("a string libcst may read as concatenated")
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
            sequence = _Items(source, value.elts, start + 1, end - 1)
            first = sequence.starts[0]
            inner = sequence.removed(drop, single_tuple=isinstance(value, ast.Tuple))
            _, value_start = _keyword_value_start(source, keyword)
            return text[value_start:first] + inner + text[end - 1:source.end(keyword)]
    rebuilt = [str(v) if isinstance(v, int) else f'"{v}"' for v in kept]
    return "(" + ", ".join(rebuilt) + ("," if len(rebuilt) == 1 else "") + ")"


def _literal(source: _Source, node: ast.expr) -> Optional[Union[int, str]]:
    """libcst's `_literal`: an Integer or a (single) string; anything else is None."""
    if not isinstance(node, ast.Constant):
        return None
    segment = source.text[source.start(node):source.end(node)]
    if type(node.value) is int:
        if not re.match(r"[0-9]", segment):
            raise Hard("a parenthesised number")
        return node.value
    if isinstance(node.value, str):
        if not _PLAIN_STRING.match(segment):
            raise Hard("a string libcst may read as concatenated")
        return node.value
    return None


def _keyword_value_start(source: _Source, keyword: ast.keyword) -> Tuple[int, int]:
    start = source.start(keyword)
    m = _KEYWORD.match(source.text, start)
    if m is None or m.group(1) != keyword.arg:
        raise Hard("an unusual keyword")
    return start, m.end()


def _value_span(source: _Source, keyword: ast.AST, value: str) -> Span:
    """The span replacing the keyword's value (with its parentheses) by `value`."""
    assert isinstance(keyword, ast.keyword)
    _, value_start = _keyword_value_start(source, keyword)
    return value_start, source.end(keyword), value


# -- returns ---------------------------------------------------------------------------------------
def _returns(source: _Source, fn: Rule, p: Plan, role: str, reads: Sequence[Span] = ()) -> List[Span]:
    """The spans rewriting each `return` of `fn` (a lambda's body); `reads`: names of a bwd
    lambda's body to write as `res[i]` (within its returned tuple's elements)."""
    rule = p.fwd if role == "fwd" else p.bwd
    found = own_return_values(fn)
    if len(found) != len(rule.returns):
        raise Hard("returns differ from the plan")
    spans = []
    for (node, value), r in zip(found, rule.returns):
        if loc_of(_Lines(source.lines), node) != r.loc:
            raise Hard("a return moved")
        if r.how in ("index", "bind") and isinstance(node, ast.Return) and value is not None and not reads:
            spans += _bound_return(source, node, value, p, role, r.how)
            continue
        if r.how != "literal" or not isinstance(value, (ast.Tuple, ast.List)):
            raise Hard("a bound or indexed return")
        spans.append(_fwd_return(source, value, p) if role == "fwd" else _bwd_return(source, value, p, reads))
    return spans


def _bound_return(source: _Source, ret: ast.Return, value: ast.expr, p: Plan, role: str, how: str) -> List[Span]:
    """libcst's rewrite of a `return` whose value is indexed ("index": a name) or first bound to
    a fresh name ("bind": a line `name = value` right before the `return`, the comments above it
    staying above both): fwd returns `v[0], (v[1], *moved)`, bwd `(v[0], None, v[1], ...)`."""
    text, lines = source.text, source.lines
    line = lines[ret.lineno - 1]
    column = byte_to_char(line, ret.col_offset)
    last = lines[(ret.end_lineno or ret.lineno) - 1]
    if line[:column].strip(" \t") or not re.match(r"[ \t]*(#.*)?\Z", last[byte_to_char(last, ret.end_col_offset or 0):]):
        raise Hard("a return beside another statement")
    keyword = source.start(ret) + len("return")
    start = re.compile(r"[ \t]*").match(text, keyword).end()  # type: ignore[union-attr]
    end = source.end(ret)
    if start == keyword or not (text[start] == "(" or start == source.start(value)):
        raise Hard("an unusual return")
    spans: List[Span] = []
    if how == "index":
        name = text[start:end]  # with its parentheses, as libcst indexes the node
    else:
        if "\r" in text:
            raise Hard("a line ending libcst picks")
        name = p.fwd.bind_name if role == "fwd" else p.bwd.bind_name
        # libcst strips a value's parentheses, but a tuple's are its own
        bound = text[start:end] if isinstance(value, ast.Tuple) else text[source.start(value):source.end(value)]
        row_start = source.starts[ret.lineno - 1]
        spans.append((row_start, row_start, f"{line[:column]}{name} = {bound}\n"))
    if role == "fwd":
        new = f"{name}[0], " + _tuple([f"{name}[1]", *p.fwd_moved])
    else:
        slots, items, old = set(p.none_slots), [], 0
        for index in range(p.d_old + len(slots)):
            if index in slots:
                items.append("None")
            else:
                items.append(f"{name}[{old}]")
                old += 1
        new = _tuple(items)
    spans.append((start, end, new))
    return spans


class _Lines:
    """What `loc_of` reads of a model."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines


def _sequence(source: _Source, value: Union[ast.Tuple, ast.List]) -> Tuple[_Items, int]:
    """The elements of a one-line tuple or list, and the end of the text they live in (the
    closing bracket, or for a tuple without parentheses its end)."""
    text = source.text
    start, end = source.start(value), source.end(value)
    if "#" in text[start:end]:
        raise Hard("comments in the returned tuple")
    if not value.elts:
        raise Hard("an empty tuple")
    first = source.start(value.elts[0])
    if first > start:  # brackets of its own
        if text[start] not in "([" or text[end - 1] not in ")]":
            raise Hard("brackets where none were expected")
        return _Items(source, value.elts, start + 1, end - 1), end - 1
    return _Items(source, value.elts, first, end), end


def _fwd_return(source: _Source, value: Union[ast.Tuple, ast.List], p: Plan) -> Span:
    if len(value.elts) != 2:
        raise Hard("not a pair")
    items, _ = _sequence(source, value)
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


def _bwd_return(source: _Source, value: Union[ast.Tuple, ast.List], p: Plan, reads: Sequence[Span] = ()) -> Span:
    """libcst's `_insert_items` on a one-line sequence: `None` at each new slot, separators
    copied from the sequence's first comma, a trailing comma kept when there was one (and more
    than one element). An empty `()` or `[]` gets its `None`s joined by ", " (a lone one in a
    tuple with its comma). `reads`: spans within the elements, applied to their text."""
    if not value.elts:
        if reads:
            raise Hard("names to read outside the elements")
        start, end = source.start(value), source.end(value)
        if source.text[start:end] not in ("()", "[]"):
            raise Hard("an empty sequence with text inside its brackets")
        nones = ["None"] * len(p.none_slots)
        single = isinstance(value, ast.Tuple) and len(nones) == 1
        return start + 1, end - 1, ", ".join(nones) + ("," if single else "")
    items, close = _sequence(source, value)
    if reads:
        _substitute(source, items, reads)
    n = len(items.values)
    template = items.tails[0] if n > 1 else ", "
    keep_trailing = n > 1 and items.tails[-1] == ","
    sequence: List[Tuple[str, int]] = []
    pending = sorted(slot - k for k, slot in enumerate(p.none_slots))
    k = 0
    for i in range(n + 1):
        while k < len(pending) and pending[k] == i:
            sequence.append(("new", i))
            k += 1
        if i < n:
            sequence.append(("old", i))
    out = []
    for position, (kind, i) in enumerate(sequence):
        last = position == len(sequence) - 1
        if kind == "old":
            comma = ("," if keep_trailing else "") if last else items.tails[i] if i < n - 1 else template
            out.append(items.values[i] + comma)
        else:
            out.append("None" + (("," if keep_trailing else "") if last else template))
    return items.starts[0], close, "".join(out)


def _substitute(source: _Source, items: _Items, reads: Sequence[Span]) -> None:
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
def _bwd_params(source: _Source, fn: Rule, p: Plan) -> List[Span]:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    text = source.text
    begin, finish = source.start(positional[0]), source.end(positional[-1])
    if "#" in text[begin:finish]:
        raise Hard("comments among the parameters")
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
        # (when none is left, libcst drops the `/` too: the span runs to the next parameter)
        spans.append((source.start(positional[i]), end, ""))
    return spans


# -- a statement first in a body -------------------------------------------------------------------
def _insert_statement(source: _Source, fn: ast.FunctionDef, statement: str) -> Span:
    """libcst's `_prepend`: `statement` first in `fn`'s body, after a docstring, before the
    comments and blank lines that lead the statement it goes before."""
    text, lines = source.text, source.lines
    if "\r" in text:
        raise Hard("a line ending libcst picks")
    body = fn.body
    head = body[0]
    anchor = _header_row(source, fn)
    if head.lineno <= anchor:
        raise Hard("a body on the def line")
    at = 0
    if _is_docstring(head):
        if len(body) > 1 and body[1].lineno <= (head.end_lineno or head.lineno):
            raise Hard("a statement beside the docstring")
        line = lines[(head.end_lineno or head.lineno) - 1]
        rest = line[byte_to_char(line, head.end_col_offset or 0):]  # type: ignore[arg-type]
        if not re.match(r"[ \t]*(#.*)?\Z", rest):
            raise Hard("text after the docstring")
        anchor, at = head.end_lineno or head.lineno, 1
    target = body[at] if at < len(body) else head
    line = lines[target.lineno - 1]
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    if byte_to_char(line, target.col_offset) != len(indent):
        raise Hard("an unusual indentation")
    offset = source.starts[anchor]
    return offset, offset, f"{indent}{statement}\n"


def _header_row(source: _Source, fn: ast.FunctionDef) -> int:
    """The row of the `:` that ends `fn`'s signature: the last line before its first statement
    that is not blank or a comment."""
    lines = source.lines
    row = fn.body[0].lineno - 1
    while row > fn.lineno and re.match(r"[ \t]*(#.*)?\Z", lines[row - 1]):
        row -= 1
    signature_end = max([fn.lineno, *(getattr(n, "end_lineno", None) or 0 for n in ast.walk(fn.args)),
                         (fn.returns.end_lineno or 0) if fn.returns is not None else 0])
    if row < signature_end:
        raise Hard("a signature the scan cannot place")
    return row


def _is_docstring(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, (str, bytes)))


# -- imports the rewrite leaves unused -----------------------------------------------------------
def _import_spans(source: _Source, module: ast.Module, firsts: List[int], plans: Sequence[Plan],
                  located: Sequence[Nodes]) -> List[Span]:
    """libcst's `_drop_unused_imports`: the top-level `from functools import partial` (or
    `import functools`) goes when the collapsed calls held the name's last uses. A use is what
    libcst counts: a Name outside imports, attribute names and keyword names; `ast` sees the same
    Names, and an occurrence of the word that is neither one nor plainly text raises Hard."""
    cleanup = frozenset().union(*(p.cleanup_names for p in plans))
    if not cleanup:
        return []
    removed: Set[ast.AST] = set()  # the nodes of the collapsed calls, which lose their Names
    cut: List[Tuple[int, int]] = []
    for p, (call, _, _) in zip(plans, located):
        if p.collapse and call is not None:
            removed.update(ast.walk(call))
            cut.append((source.start(call), source.end(call)))
    spans: List[Span] = []
    for name in sorted(cleanup):
        if not _used_elsewhere(source, module, firsts, name, removed, cut):
            spans += _drop_import(source, module, firsts, name)
    return spans


def _first_row(statement: ast.stmt) -> int:
    return min([statement.lineno, *(x.lineno for x in getattr(statement, "decorator_list", ()))])


def _used_elsewhere(source: _Source, module: ast.Module, firsts: List[int], name: str, removed: Set[int],
                    cut: Sequence[Tuple[int, int]]) -> bool:
    text = source.text
    unclear = False
    checked: Dict[int, bool] = {}
    for m in re.finditer(r"\b%s\b" % re.escape(name), text):
        at = m.start()
        if any(a <= at < b for a, b in cut):
            continue  # the collapsed call's own use
        index = bisect.bisect_right(firsts, source.row_of(at)) - 1
        statement = module.body[index] if index >= 0 else None
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if statement is not None:
            if index not in checked:
                checked[index] = any(isinstance(n, ast.Name) and n.id == name and n not in removed
                                     for n in ast.walk(statement))
            if checked[index]:
                return True
        if not _plain_text(source, statement, at):
            unclear = True
    if unclear:
        raise Hard(f"`{name}` appears where libcst may count it")
    return False


def _plain_text(source: _Source, statement: Optional[ast.stmt], at: int) -> bool:
    """The occurrence at `at` is in a comment, a string or an attribute name: libcst counts none."""
    text = source.text
    line_start = source.starts[source.row_of(at) - 1]
    before = text[line_start:at]
    if "#" in before and not any(q in before for q in "'\""):
        return True
    if before.rstrip(" \t").endswith("."):
        return True
    if statement is not None:
        for n in ast.walk(statement):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and source.start(n) <= at < source.end(n):
                return True
    return False


def _drop_import(source: _Source, module: ast.Module, firsts: List[int], name: str) -> List[Span]:
    """The spans removing the top-level imports that bind `name` (only a lone one: Hard otherwise)."""
    found = []
    for index, statement in enumerate(module.body):
        if isinstance(statement, ast.ImportFrom) and statement.module == "functools" and not statement.level:
            drop = [i for i, a in enumerate(statement.names) if a.name == "partial" and (a.asname or a.name) == name]
        elif isinstance(statement, ast.Import):
            drop = [i for i, a in enumerate(statement.names) if a.name == "functools" and (a.asname or a.name) == name]
        else:
            continue
        if drop:
            found.append((index, statement, drop))
    if not found:
        return []
    if len(found) > 1:
        raise Hard("several imports to drop")
    index, statement, drop = found[0]
    text, lines = source.text, source.lines
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    if any(s is not statement and _first_row(s) <= last and (s.end_lineno or s.lineno) >= first for s in module.body) \
            or ";" in lines[last - 1][byte_to_char(lines[last - 1], statement.end_col_offset or 0):]:
        raise Hard("another statement on the import's line")
    if len(drop) < len(statement.names):
        return [_drop_aliases(source, statement, set(drop))]
    if "\r" in text:
        raise Hard("line endings libcst may rewrite")
    previous = module.body[index - 1] if index else None
    if previous is not None and hasattr(previous, "body"):
        raise Hard("a compound statement before the import")
    carried = previous is None or first > (previous.end_lineno or previous.lineno) + 1
    end_row = last + 1  # the first row kept after the import
    if carried and index + 1 < len(module.body):  # the next statement's leading blank lines go too
        following = _first_row(module.body[index + 1])
        while end_row < following and not lines[end_row - 1].strip(" \t"):
            end_row += 1
    for row in range(last + 1, _first_row(module.body[index + 1]) if index + 1 < len(module.body) else last + 1):
        if not re.match(r"[ \t]*(#.*)?\Z", lines[row - 1]):
            raise Hard("an unusual line between statements")
    start = source.starts[first - 1]
    end = source.starts[end_row - 1] if end_row - 1 < len(source.starts) else len(text)
    return [(start, end, "")]


def _drop_aliases(source: _Source, statement: Union[ast.Import, ast.ImportFrom], drop: Set[int]) -> Span:
    """libcst's `_remove_items` on the import's names, on one line."""
    if not all(hasattr(a, "lineno") for a in statement.names):
        raise Hard("alias positions need Python 3.10")
    text = source.text
    start, end = source.start(statement), source.end(statement)
    first = source.start(statement.names[0])
    head = text[start:first]
    if not re.match(r"(from[ \t]+functools[ \t]+)?import[ \t]+\Z", head):
        if not re.match(r"from[ \t]+functools[ \t]+import[ \t]*\([ \t]*\Z", head):
            raise Hard("an unusual import")
        close = end - 1
    else:
        close = end
    items = _Items(source, statement.names, first, close)
    return first, close, items.removed(drop, single_tuple=False)
