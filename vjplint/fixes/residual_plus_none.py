"""The residual-plus-None codemod (SPEC section 7) as a pure libcst `Module -> Module` transform.

A custom_vjp whose nondiff positions hold arrays becomes the form JAX documents: the arrays
leave `nondiff_argnums`/`nondiff_argnames`, fwd appends them to its residuals, bwd unpacks them
from the residuals and returns `None` in their output slots. The primal's signature never
changes, so callers keep working. Plans come from `residual_plan.plan()` (the `ast` model);
this module only rewrites syntax, keeping formatting and comments.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from vjplint.plans.residual_plan import Loc, Plan, ReturnPlan

Items = List  # a list of Element/Arg/Param/ImportAlias: anything with a `.comma`


def residual_plus_none(module: cst.Module, plans: Sequence[Plan], used_elsewhere: FrozenSet[str] = frozenset(),
                       parts: Optional[Sequence[Tuple[str, ...]]] = None) -> cst.Module:
    """Apply every plan (made from this module's source) and drop imports the rewrite left unused.
    `used_elsewhere`: names used in code left out of `module` (fixes.apply's reduced module), whose
    imports therefore stay. `parts[i]`: what of `plans[i]` this module holds ("creation", "fwd",
    "bwd"), for a rewrite across modules (vjplint.fixes.cross_plan); all of each when not given."""
    if not plans:
        return module
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    rewriter = _Rewriter(plans, parts)
    rewritten = wrapper.visit(rewriter)
    missing = rewriter.missing()
    if missing:
        raise LookupError(f"could not locate {', '.join(missing)} for the residual-plus-None fix")
    with_creation = plans if parts is None else [p for p, held in zip(plans, parts) if "creation" in held]
    cleanup = frozenset().union(*(p.cleanup_names for p in with_creation))
    if cleanup - used_elsewhere:
        rewritten = _drop_unused_imports(module, rewritten, frozenset(cleanup - used_elsewhere))
    return rewritten


def fix_text(text: str, plans: Sequence[Plan], used_elsewhere: FrozenSet[str] = frozenset(),
             parts: Optional[Sequence[Tuple[str, ...]]] = None) -> str:
    code = residual_plus_none(cst.parse_module(text), plans, used_elsewhere, parts).code
    # libcst drops a final lone "\r" (old Mac line endings); put the file's last newline back.
    if text.endswith("\r") and not code.endswith(("\r", "\n")):
        code += "\r"
    return code


# -- the rewriter -------------------------------------------------------------------------
class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, plans: Sequence[Plan], parts: Optional[Sequence[Tuple[str, ...]]] = None) -> None:
        super().__init__()
        self.creations: Dict[Loc, Plan] = {p.creation: p for p in plans}
        self.defs: Dict[Tuple[str, Loc], Tuple[str, Plan]] = {}
        self.returns: Dict[Loc, Tuple[str, Plan, ReturnPlan]] = {}
        for p in plans:
            for role, rule in (("fwd", p.fwd), ("bwd", p.bwd)):
                self.defs[("lambda" if rule.is_lambda else "def", rule.loc)] = (role, p)
                if not rule.is_lambda:
                    for r in rule.returns:
                        self.returns[r.loc] = (role, p, r)
        if parts is not None:  # only the parts of each plan this module holds (plans matched by identity)
            def held(plan: Plan) -> Tuple[str, ...]:
                return next(roles for p, roles in zip(plans, parts) if p is plan)

            self.creations = {k: p for k, p in self.creations.items() if "creation" in held(p)}
            self.defs = {k: (role, p) for k, (role, p) in self.defs.items() if role in held(p)}
            self.returns = {k: v for k, v in self.returns.items() if v[0] in held(v[1])}
        self.seen: Set[object] = set()
        self.pending: Dict[cst.CSTNode, cst.BaseSmallStatement] = {}  # new Return (identity) -> binding statement
        self.comments: List[str] = []  # comments of removed nondiff keywords, not yet placed

    def missing(self) -> List[str]:
        wanted = [("creation", loc) for loc in self.creations]
        wanted += [(key, key[1]) for key in self.defs]
        wanted += [("return", loc) for loc in self.returns]
        return [f"{kind[0] if isinstance(kind, tuple) else kind} at {loc[0]}:{loc[1] + 1}"
                for kind, loc in wanted if (kind, loc) not in self.seen]

    def _start(self, node: cst.CSTNode) -> Loc:
        pos = self.get_metadata(PositionProvider, node).start
        return pos.line, pos.column

    # creation: remove the moved positions from the nondiff keywords
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if isinstance(original.func, cst.Call):
            return updated
        loc = self._start(original)
        p = self.creations.get(loc)
        if p is None:
            return updated
        self.seen.add(("creation", loc))
        args = list(updated.args)
        drop = set()
        for keyword, kind, kept in p.keywords:
            index = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == keyword), None)
            if index is None:
                continue
            value = _kept_value(args[index].value, kind, kept)
            if value is None:
                drop.add(index)
            else:
                args[index] = args[index].with_changes(value=value)
        args = _remove_items(args, drop, single_tuple=False)
        if p.collapse and len(args) == 1 and args[0].keyword is None and args[0].star == "":
            result: cst.BaseExpression = args[0].value
        else:
            result = updated.with_changes(args=args)
        kept = _comments(result)
        for comment in _comments(updated):  # comments of removed parts move above the statement
            if comment in kept:
                kept.remove(comment)
            else:
                self.comments.append(comment)
        return result

    def leave_Decorator(self, original: cst.Decorator, updated: cst.Decorator) -> cst.Decorator:
        return self._attach_comments(updated)

    def _attach_comments(self, node):  # type: ignore[no-untyped-def]
        if not self.comments:
            return node
        lines = [cst.EmptyLine(indent=True, comment=cst.Comment(c)) for c in self.comments]
        self.comments = []
        return node.with_changes(leading_lines=[*node.leading_lines, *lines])

    # fwd/bwd defined with `def`
    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        key = ("def", self._start(original.name))
        found = self.defs.get(key)
        if found is None:
            return updated
        self.seen.add((key, key[1]))
        role, p = found
        if role == "fwd":
            if not p.fwd_capture:
                return updated
            copies, params = zip(*p.fwd_capture)
            capture = cst.parse_statement(f"{', '.join(copies)} = {', '.join(params)}\n")
            return updated.with_changes(body=_prepend(updated.body, capture))
        updated = updated.with_changes(params=_bwd_params(updated.params, p))
        if p.mode == "single":
            return updated
        unpack = cst.parse_statement(f"{', '.join(p.unpack)} = {p.res_name}\n")
        return updated.with_changes(body=_prepend(updated.body, unpack))

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        loc = self._start(original)
        found = self.returns.get(loc)
        if found is None or updated.value is None:
            return updated
        self.seen.add(("return", loc))
        role, p, r = found
        value = updated.value
        binding: Optional[cst.BaseSmallStatement] = None
        if r.how == "bind":
            binding = cst.Assign([cst.AssignTarget(cst.Name(_bind_name(p, role)))], _strip_parens(value))
            value = cst.Name(_bind_name(p, role))
        new_value = _rewrite_value(value, role, p, r.how, in_lambda=False)
        new = updated.with_changes(value=new_value)
        if binding is not None:
            self.pending[new] = binding
        return new

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.BaseExpression:
        key = ("lambda", self._start(original))
        found = self.defs.get(key)
        if found is None:
            return updated
        self.seen.add((key, key[1]))
        role, p = found
        how = (p.fwd if role == "fwd" else p.bwd).returns[0].how
        body = updated.body
        if role == "bwd":
            updated = updated.with_changes(params=_bwd_params(updated.params, p))
            if p.mode != "single":
                body = body.visit(_Substitute({name: i for i, name in enumerate(p.unpack)}, p.res_name))
        if how == "bind":
            name = _bind_name(p, role)
            walrus = cst.NamedExpr(cst.Name(name), _strip_parens(body), lpar=[cst.LeftParen()],
                                   rpar=[cst.RightParen()])
            body = _rewrite_value(cst.Name(name), role, p, "index", in_lambda=True, first=walrus)
        else:
            body = _rewrite_value(body, role, p, how, in_lambda=True)
        return updated.with_changes(body=body)

    # binding statements go right before their `return`
    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Union[cst.SimpleStatementLine,
                                                                             cst.FlattenSentinel]:
        updated = self._attach_comments(updated)
        if not any(s in self.pending for s in updated.body):
            return updated
        if len(updated.body) == 1:
            binding = self.pending.pop(updated.body[0])
            first = cst.SimpleStatementLine([binding], leading_lines=updated.leading_lines)
            return cst.FlattenSentinel([first, updated.with_changes(leading_lines=[])])
        return updated.with_changes(body=self._with_bindings(updated.body))

    def leave_SimpleStatementSuite(self, original: cst.SimpleStatementSuite,
                                   updated: cst.SimpleStatementSuite) -> cst.SimpleStatementSuite:
        if not any(s in self.pending for s in updated.body):
            return updated
        return updated.with_changes(body=self._with_bindings(updated.body))

    def _with_bindings(self, body: Sequence[cst.BaseSmallStatement]) -> List[cst.BaseSmallStatement]:
        out: List[cst.BaseSmallStatement] = []
        for statement in body:
            binding = self.pending.pop(statement, None)
            if binding is not None:
                out.append(binding.with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))))
            out.append(statement)
        return out


def _bind_name(p: Plan, role: str) -> str:
    return p.fwd.bind_name if role == "fwd" else p.bwd.bind_name


# -- rewriting returned values --------------------------------------------------------------
def _rewrite_value(value: cst.BaseExpression, role: str, p: Plan, how: str, in_lambda: bool,
                   first: Optional[cst.BaseExpression] = None) -> cst.BaseExpression:
    """The new returned expression. For "index"/"bind", `value` is the name to index; `first`
    replaces that name at its first use (a walrus in a lambda)."""
    if role == "fwd":
        moved = [cst.Name(n) for n in p.fwd_moved]
        if how == "literal":
            assert isinstance(value, (cst.Tuple, cst.List))
            elements = list(value.elements)
            old = elements[1].value
            if p.mode == "single":
                residual: cst.BaseExpression = moved[0]
            elif p.mode == "tuple":
                residual = _tuple(moved)
            else:
                residual = _tuple([old, *moved])
            elements[1] = elements[1].with_changes(value=residual)
            return value.with_changes(elements=elements)
        head = first if first is not None else value
        pair = [_index(head, 0), _tuple([_index(value, 1), *moved])]
        return _tuple(pair, parens=in_lambda)
    slots = list(p.none_slots)
    if how == "literal":
        assert isinstance(value, (cst.Tuple, cst.List))
        inserts = [(slot - n, cst.Name("None")) for n, slot in enumerate(slots)]
        return _insert_items(value, inserts)
    items: List[cst.BaseExpression] = []
    old = 0
    for index in range(p.d_old + len(slots)):
        if index in slots:
            items.append(cst.Name("None"))
        else:
            base = first if (first is not None and old == 0) else value
            items.append(_index(base, old))
            old += 1
    return _tuple(items)


def _index(value: cst.BaseExpression, i: int) -> cst.Subscript:
    return cst.Subscript(value, [cst.SubscriptElement(cst.Index(cst.Integer(str(i))))])


def _tuple(values: Sequence[cst.BaseExpression], parens: bool = True) -> cst.Tuple:
    elements = [cst.Element(v) for v in values]
    if len(elements) == 1:
        elements[0] = elements[0].with_changes(comma=cst.Comma())
    return cst.Tuple(elements) if parens else cst.Tuple(elements, lpar=[], rpar=[])


def _strip_parens(value: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(value, cst.Tuple):
        return value  # a tuple's parentheses may be required (e.g. `x = (*a,)`)
    if getattr(value, "lpar", None):
        return value.with_changes(lpar=[], rpar=[])
    return value


class _Substitute(cst.CSTTransformer):
    """Inside a lambda bwd: `lo` -> `res[0]`, leaving attribute names and keywords alone."""

    def __init__(self, index: Dict[str, int], res_name: str) -> None:
        super().__init__()
        self.index = index
        self.res_name = res_name

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if original.value in self.index:
            return _index(cst.Name(self.res_name), self.index[original.value])
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


# -- bwd's parameters and body ------------------------------------------------------------------
def _bwd_params(params: cst.Parameters, p: Plan) -> cst.Parameters:
    positional = [*params.posonly_params, *params.params]
    n_posonly = len(params.posonly_params)
    res = positional[p.bwd_res_index]
    if p.mode == "single":
        moved = positional[p.bwd_drop[0]]
        new_res = moved.with_changes(comma=res.comma, default=res.default, equal=res.equal,
                                     whitespace_after_param=res.whitespace_after_param)
    else:
        new_res = res.with_changes(name=cst.Name(p.res_name), annotation=None)
    positional[p.bwd_res_index] = new_res
    drop = set(p.bwd_drop)
    posonly = [x for i, x in enumerate(positional[:n_posonly]) if i not in drop]
    regular = [x for i, x in enumerate(positional[n_posonly:], start=n_posonly) if i not in drop]
    changes: Dict[str, object] = {"posonly_params": posonly, "params": regular}
    if not posonly:
        changes["posonly_ind"] = cst.MaybeSentinel.DEFAULT
    return params.with_changes(**changes)


def _prepend(body: cst.BaseSuite, statement: cst.SimpleStatementLine) -> cst.BaseSuite:
    if isinstance(body, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(list(body.body), trailing_whitespace=body.trailing_whitespace)
        line = line.with_changes(body=[s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) if i == len(body.body) - 1
                                       else s for i, s in enumerate(line.body)])
        return cst.IndentedBlock([statement, line])
    assert isinstance(body, cst.IndentedBlock)
    statements = list(body.body)
    at = 1 if statements and _is_docstring(statements[0]) else 0
    statements.insert(at, statement)
    return body.with_changes(body=statements)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


# -- nondiff keyword values ------------------------------------------------------------------------
def _kept_value(value: cst.BaseExpression, kind: str, kept: Tuple[Union[int, str], ...]) -> Optional[cst.BaseExpression]:
    """The keyword's new value holding only `kept`, or None when nothing is left."""
    if not kept:
        return None
    keep = set(kept)
    if kind == "names" and isinstance(value, cst.SimpleString):
        return value
    if isinstance(value, (cst.Tuple, cst.List)):
        literal = [_literal(e.value) for e in value.elements]
        if all(v is not None for v in literal) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            drop = {i for i, v in enumerate(literal) if v not in keep}
            elements = _remove_items(list(value.elements), drop, single_tuple=isinstance(value, cst.Tuple))
            return value.with_changes(elements=elements)
    values = [cst.Integer(str(v)) if isinstance(v, int) else cst.SimpleString(f'"{v}"') for v in kept]
    return _tuple(values)


def _literal(node: cst.BaseExpression) -> Optional[Union[int, str]]:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


# -- comma-aware sequence edits --------------------------------------------------------------------
def _remove_items(items: Items, drop: Set[int], single_tuple: bool) -> Items:
    """Remove `drop` (indices); the new last item takes over the old last item's comma."""
    if not drop:
        return items
    kept = [item for i, item in enumerate(items) if i not in drop]
    if not kept:
        return kept
    if len(items) - 1 in drop:
        changes = {"comma": _inherit(kept[-1].comma, items[-1].comma)}
        for attribute in ("whitespace_after_arg", "whitespace_after_param"):  # what leads to `)`
            if hasattr(items[-1], attribute):
                changes[attribute] = getattr(items[-1], attribute)
        kept[-1] = kept[-1].with_changes(**changes)
    if single_tuple and len(kept) == 1 and not isinstance(kept[0].comma, cst.Comma):
        kept[0] = kept[0].with_changes(comma=cst.Comma())
    return kept


def _insert_items(node: Union[cst.Tuple, cst.List], inserts: List[Tuple[int, cst.BaseExpression]]
                  ) -> Union[cst.Tuple, cst.List]:
    """Insert values before old indices; new separators copy the sequence's own style, and
    end-of-line comments stay with the element they follow."""
    old = list(node.elements)
    n = len(old)
    trailing = old[-1].comma if n and isinstance(old[-1].comma, cst.Comma) else None
    multiline = _multiline(node, old)
    template = next((_plain(e.comma) for e in old[:-1] if isinstance(e.comma, cst.Comma)), None)
    if template is None:
        opener = node.lbracket if isinstance(node, cst.List) else (node.lpar[0] if node.lpar else None)
        ws = opener.whitespace_after if opener is not None else None
        if multiline and isinstance(ws, cst.ParenthesizedWhitespace):
            template = cst.Comma(whitespace_after=ws)
        else:
            template = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    keep_trailing = trailing is not None and (n > 1 or multiline)
    sequence: List[Tuple[str, object]] = []
    pending = sorted(inserts, key=lambda x: x[0])
    k = 0
    for i in range(n + 1):
        while k < len(pending) and pending[k][0] == i:
            sequence.append(("new", pending[k][1]))
            k += 1
        if i < n:
            sequence.append(("old", i))
    out: Items = []
    for position, (kind, what) in enumerate(sequence):
        last = position == len(sequence) - 1
        if kind == "old":
            element = old[what]  # type: ignore[index]
            own = element.comma
            if last:
                comma = trailing if keep_trailing else cst.MaybeSentinel.DEFAULT
            elif what < n - 1 and isinstance(own, cst.Comma):  # type: ignore[operator]
                comma = own
            else:  # the old last element: a separator now, with its own end-of-line comment
                comma = _with_comment(template, own)
            out.append(element.with_changes(comma=comma))
        else:
            comma = (_plain(trailing) if keep_trailing and trailing is not None else cst.MaybeSentinel.DEFAULT) \
                if last else template
            out.append(cst.Element(what, comma=comma))  # type: ignore[arg-type]
    if n and sequence[-1][0] == "new":
        return _keep_last_comment(node, out, sequence.index(("old", n - 1)))
    return node.with_changes(elements=out)


def _keep_last_comment(node: Union[cst.Tuple, cst.List], out: Items, index: int) -> Union[cst.Tuple, cst.List]:
    """`(..., g,  # d/db\n)`: the comment sits before the closing bracket; when values are
    appended it must stay on `g`'s line."""
    if isinstance(node, cst.List):
        closer, attribute = node.rbracket, "rbracket"
    elif node.rpar:
        closer, attribute = node.rpar[-1], "rpar"
    else:
        return node.with_changes(elements=out)
    ws = closer.whitespace_before
    comma = out[index].comma
    if not (isinstance(ws, cst.ParenthesizedWhitespace) and ws.first_line.comment is not None
            and isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)):
        return node.with_changes(elements=out)
    out[index] = out[index].with_changes(comma=comma.with_changes(
        whitespace_after=comma.whitespace_after.with_changes(first_line=ws.first_line)))
    closer = closer.with_changes(whitespace_before=ws.with_changes(first_line=cst.TrailingWhitespace()))
    if attribute == "rpar":
        return node.with_changes(elements=out, rpar=[*node.rpar[:-1], closer])
    return node.with_changes(elements=out, rbracket=closer)


def _inherit(own: object, last: object) -> object:
    """The comma a new last item gets: the old last one's layout (it leads to the closing
    bracket) with the item's own end-of-line comment, never the removed item's."""
    if not isinstance(last, cst.Comma):
        return last
    ws = last.whitespace_after
    if isinstance(ws, cst.ParenthesizedWhitespace):
        mine = own.whitespace_after if isinstance(own, cst.Comma) else None
        first = mine.first_line if isinstance(mine, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
        ws = ws.with_changes(first_line=first, empty_lines=[])
    return last.with_changes(whitespace_after=ws)


def _with_comment(template: cst.Comma, own: object) -> cst.Comma:
    mine = own.whitespace_after if isinstance(own, cst.Comma) else None
    ws = template.whitespace_after
    if isinstance(mine, cst.ParenthesizedWhitespace) and isinstance(ws, cst.ParenthesizedWhitespace):
        return template.with_changes(whitespace_after=ws.with_changes(first_line=mine.first_line))
    return template


def _plain(comma: cst.Comma) -> cst.Comma:
    """A separator like `comma` without the comment that belongs to its element."""
    ws = comma.whitespace_after
    if isinstance(ws, cst.ParenthesizedWhitespace):
        ws = ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return comma.with_changes(whitespace_after=ws)


def _comments(node: cst.CSTNode) -> List[str]:
    found: List[str] = []

    class _Collect(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment.value)

    node.visit(_Collect())
    return found


def _multiline(node: Union[cst.Tuple, cst.List], elements: Items) -> bool:
    spaces = [e.comma.whitespace_after for e in elements if isinstance(e.comma, cst.Comma)]
    if isinstance(node, cst.List):
        spaces += [node.lbracket.whitespace_after, node.rbracket.whitespace_before]
    else:
        spaces += [x.whitespace_after for x in node.lpar] + [x.whitespace_before for x in node.rpar]
    return any(isinstance(s, cst.ParenthesizedWhitespace) for s in spaces)


# -- unused import cleanup ------------------------------------------------------------------------
class _NameUses(cst.CSTVisitor):
    """Counts loads of some names, outside imports, attribute names and keyword names."""

    def __init__(self, names: FrozenSet[str]) -> None:
        super().__init__()
        self.names = names
        self.counts: Dict[str, int] = {n: 0 for n in names}

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.counts:
            self.counts[node.value] += 1


def _uses(module: cst.Module, names: FrozenSet[str]) -> Dict[str, int]:
    counter = _NameUses(names)
    module.visit(counter)
    return counter.counts


def _drop_unused_imports(before: cst.Module, after: cst.Module, names: FrozenSet[str]) -> cst.Module:
    """Remove `from functools import partial` / `import functools` that the fix made unused
    (imports that were already unused are the user's business)."""
    old, new = _uses(before, names), _uses(after, names)
    unused = frozenset(n for n in names if old[n] > 0 and new[n] == 0)
    if not unused:
        return after
    body: List[cst.BaseStatement] = []
    carried: Optional[List[cst.EmptyLine]] = None  # the removed statement's leading lines
    for statement in after.body:
        if carried is not None:
            if carried or not body:  # its blank lines and comments replace the next one's blank lines
                own = list(statement.leading_lines)
                while own and own[0].comment is None:
                    own.pop(0)
                statement = statement.with_changes(leading_lines=[*carried, *own])
            carried = None
        if isinstance(statement, cst.SimpleStatementLine):
            small = [s for s in (_without(s, unused) for s in statement.body) if s is not None]
            if not small:
                carried = list(statement.leading_lines)
                continue
            if len(small) != len(statement.body) or any(a is not b for a, b in zip(small, statement.body)):
                small[-1] = small[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                statement = statement.with_changes(body=small)
        body.append(statement)
    return after.with_changes(body=body)


def _without(statement: cst.BaseSmallStatement, unused: FrozenSet[str]) -> Optional[cst.BaseSmallStatement]:
    if isinstance(statement, cst.ImportFrom) and not isinstance(statement.names, cst.ImportStar):
        module = statement.module
        if statement.relative or not isinstance(module, cst.Name) or module.value != "functools":
            return statement
        drop = {i for i, a in enumerate(statement.names)
                if a.name.value == "partial" and _bound(a) in unused}  # type: ignore[union-attr]
    elif isinstance(statement, cst.Import):
        drop = {i for i, a in enumerate(statement.names)
                if isinstance(a.name, cst.Name) and a.name.value == "functools" and _bound(a) in unused}
    else:
        return statement
    if not drop:
        return statement
    names = _remove_items(list(statement.names), drop, single_tuple=False)
    return statement.with_changes(names=names) if names else None


def _bound(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = alias.name
    return name.value if isinstance(name, cst.Name) else ""
