"""The imports the residual-plus-None rewrite leaves unused (`residual_text`'s last step): the
top-level `from functools import partial` or `import functools` whose last uses were the
collapsed `partial(custom_vjp, ...)` calls, removed as a line, as a name among several, or as a
statement sharing its line (`from functools import partial; import os`)."""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

from vjplint.fixes.residual_layout import Hard, Items, Source, Span
from vjplint.plans.residual_plan import Plan

_COMMENT_LINE = re.compile(r"[ \t]*(#.*)?\Z")
Nodes = Tuple[Optional[ast.Call], Optional[ast.AST], Optional[ast.AST]]  # a plan's creation call, fwd and bwd


def import_spans(source: Source, module: ast.Module, firsts: List[int], plans: Sequence[Plan],
                  located: Sequence[Nodes]) -> List[Span]:
    """The top-level `from functools import partial` (or `import functools`) goes when the
    collapsed calls held the name's last uses (imports already unused are the user's business).
    A use is a Name outside imports, attribute names and keyword names: one `ast` sees, or an
    occurrence of the word that is not plainly text (a def or parameter of that name)."""
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


def first_row(statement: ast.stmt) -> int:
    return min([statement.lineno, *(x.lineno for x in getattr(statement, "decorator_list", ()))])


def _used_elsewhere(source: Source, module: ast.Module, firsts: List[int], name: str, removed: Set[int],
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
    return unclear  # a def, class or parameter of that name, a `global` one...: counted as a use, the import stays


def _plain_text(source: Source, statement: Optional[ast.stmt], at: int) -> bool:
    """The occurrence at `at` is no use of the imported name: in a comment, a string, an
    attribute name, a keyword argument's name or an import."""
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
            if isinstance(n, ast.keyword) and n.arg is not None and source.start(n) == at:
                return True
            if isinstance(n, (ast.Import, ast.ImportFrom)) and source.start(n) <= at < source.end(n):
                return True
    return False


def _drop_import(source: Source, module: ast.Module, firsts: List[int], name: str) -> List[Span]:
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
    if len(drop) < len(statement.names):
        return [_drop_aliases(source, statement, set(drop))]
    beside = [s for s in module.body if s is not statement and first_row(s) <= last and (s.end_lineno or s.lineno) >= first]
    if beside:
        return [_drop_small_statement(source, statement, beside)]
    previous = module.body[index - 1] if index else None
    previous_end = (previous.end_lineno or previous.lineno) if previous is not None else 0
    if previous is not None and hasattr(previous, "body"):
        # the indented comments after a block are the block's; the lines after them lead the import
        for row in range(previous_end + 1, first):
            if re.match(r"[ \t]+#", lines[row - 1]):
                previous_end = row
    carried = previous is None or first > previous_end + 1
    end_row = last + 1  # the first row kept after the import
    if carried and index + 1 < len(module.body):  # the next statement's leading blank lines go too
        following = first_row(module.body[index + 1])
        while end_row < following and not lines[end_row - 1].strip(" \t"):
            end_row += 1
    for row in range(last + 1, first_row(module.body[index + 1]) if index + 1 < len(module.body) else last + 1):
        if not _COMMENT_LINE.match(lines[row - 1]):
            raise Hard("an unusual line between statements")
    start = source.starts[first - 1]
    end = source.starts[end_row - 1] if end_row - 1 < len(source.starts) else len(text)
    return [(start, end, "")]


def _drop_small_statement(source: Source, statement: ast.stmt, beside: Sequence[ast.stmt]) -> Span:
    """An import sharing its line with other statements (`import functools; import jax`): it
    goes with the `;` after it, or, last on its line, with the `;` before it (and its own)."""
    if any(hasattr(s, "body") for s in beside):
        raise Hard("a compound statement beside the import")
    start, end = source.start(statement), source.end(statement)
    following = [s for s in beside if source.start(s) >= end]
    if following:
        return start, min(source.start(s) for s in following), ""
    preceding = [s for s in beside if source.end(s) <= start]
    semicolon = re.compile(r"[ \t]*;").match(source.text, end)
    if not preceding:
        raise Hard("an import alone with a semicolon")
    return max(source.end(s) for s in preceding), semicolon.end() if semicolon else end, ""


def _drop_aliases(source: Source, statement: Union[ast.Import, ast.ImportFrom], drop: Set[int]) -> Span:
    """The import's names without `drop` (`Items.removed`)."""
    text = source.text
    start, end = source.start(statement), source.end(statement)
    names = alias_spans(text[start:end])
    if len(names) != len(statement.names):
        raise Hard("an unusual import")
    names = [(start + a, start + b) for a, b in names]
    first = names[0][0]
    head = text[start:first]
    if not re.match(r"(from[ \t]+functools[ \t]+)?import[ \t]+\Z", head):
        opening = re.match(r"from[ \t]+functools[ \t]+import[ \t]*\(", head)
        if opening is None or source.text[end - 1] != ")":
            raise Hard("an unusual import")
        after_open, close = start + opening.end(), end - 1
    else:
        after_open, close = first, end
    items = Items(source, statement.names, after_open, close, owner="comma", spans=names)
    return first, close, items.removed(drop, single_tuple=False)


def alias_spans(statement: str) -> List[Tuple[int, int]]:
    """The (start, end) offsets in an import statement's text of each name it imports (`name`
    or `name as other`, dotted or not), read from its tokens (`ast` gives aliases positions only
    from Python 3.10)."""
    rows = [0]
    for line in statement.splitlines(keepends=True):
        rows.append(rows[-1] + len(line))
    spans: List[Tuple[int, int]] = []
    current: Optional[List[int]] = None
    seen_import = False
    try:
        for token in tokenize.generate_tokens(io.StringIO(statement).readline):
            at = rows[token.start[0] - 1] + token.start[1]
            upto = rows[token.end[0] - 1] + token.end[1]
            if token.type == tokenize.NAME and token.string == "import" and not seen_import:
                seen_import = True
            elif not seen_import or token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                                                   tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                continue
            elif token.type == tokenize.OP and token.string in ",()":
                if current is not None:
                    spans.append((current[0], current[1]))
                current = None
            elif token.type == tokenize.NAME or (token.type == tokenize.OP and token.string == "."):
                current = [at, upto] if current is None else [current[0], upto]
            else:
                raise Hard("an unusual import")
    except (tokenize.TokenError, SyntaxError):
        raise Hard("an unusual import") from None
    if current is not None:
        spans.append((current[0], current[1]))
    return spans
