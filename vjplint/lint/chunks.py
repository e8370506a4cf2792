"""A module's top-level statements as chunks, and the chunks as families (vjplint.lint.incremental,
and the engine's grouped lint of a big module: `engine.lint_source`).

A chunk is one top-level statement (or several on one line) and the lines up to the next one.
Chunks are grouped into families: statements linked through a module-level name that one
binds and another mentions (a custom_vjp, its fwd/bwd rules, its defvjp call, its callers) are
one family; imports are context, part of every family. A family linted as a module of its own
finds exactly the whole module's findings in its own statements (tests/unit/test_incremental.py,
tests/unit/test_grouped_lint.py). Nothing here lints: only `ast` and the text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

from vjplint.syntax.walk import child_nodes, walk

# `match` patterns bind names too; ast has them from Python 3.10 (requires-python is 3.9)
_MATCH_CAPTURES = tuple(getattr(ast, n) for n in ("MatchAs", "MatchStar") if hasattr(ast, n))

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_ASSIGNMENTS = frozenset({ast.Assign, ast.AnnAssign, ast.NamedExpr})


@dataclass(frozen=True, eq=False)
class Chunk:
    """One top-level statement (or several on one line), and the lines up to the next one.
    Compared by identity: a chunk parsed again is a new one, so caches keyed by chunks are exact."""

    lines: Tuple[str, ...]  # with their line endings
    text: str
    statements: bool  # False for the comment-only lines before the first statement
    context: bool  # imports: part of every family
    binds: FrozenSet[str]  # module-level names it binds
    mentions: FrozenSet[str]  # every name it reads or writes, at any depth
    defines: FrozenSet[str] = frozenset()  # names it binds at any depth (a nested custom_vjp's)
    registers: FrozenSet[str] = frozenset()  # X of its `X.defvjp(...)`-like registrations
    odd_registration: bool = False  # a registration whose target cannot be named (`getattr(f, m)(...)`)
    # Names it binds below the module's scope that may be a family's member, which the whole lint
    # links by name wherever they are (a factory's custom_vjp, its rules; `_nested_members`): the
    # name of each function and class it defines in a function or class body (a str), and
    # (target, callee name) of each `target = callee(...)` there (`act = jax.custom_vjp(_act)`,
    # `self.f = cv(g)`). One field, not two: a tenth attribute fits each instance's dict as it was
    # (an eleventh doubled it: 3 MB more for the 14,000 chunks of the dense 1 MB module).
    nested: FrozenSet[Union[str, Tuple[str, str]]] = frozenset()


def without_lines(chunk: Chunk) -> Chunk:
    """`chunk` without its lines (`dataclasses.replace(chunk, lines=())` at 0.4 of its cost: the
    grouped lint drops the lines of every chunk of a big module once it has their rows)."""
    return Chunk((), chunk.text, chunk.statements, chunk.context, chunk.binds, chunk.mentions, chunk.defines,
                 chunk.registers, chunk.odd_registration, chunk.nested)


def make_chunk(lines: Tuple[str, ...], statements: bool, context: bool, binds: Iterable[str],
           mentions: Iterable[str], registers: Iterable[str] = (), odd: bool = False,
           defines: Iterable[str] = (), nested: Iterable[str] = (), made: Iterable[Tuple[str, str]] = ()) -> Chunk:
    binds = frozenset(binds)
    below = [*(n for n in nested if n not in binds), *(m for m in made if m[0] not in binds)]
    deeper = frozenset(defines)
    # Sets shared where they can be (`binds` itself for `defines`, one empty set for all): a set
    # costs 216 bytes, and the dense 10 MB module has 140,000 chunks.
    return Chunk(lines, "".join(lines), statements, context, binds, frozenset(mentions),
                 binds if deeper <= binds else binds | deeper, frozenset(registers) if registers else _NONE, odd,
                 frozenset(below) if below else _NONE)


_NONE: FrozenSet = frozenset()


# A longer text is parsed a piece of about this many lines at a time, each piece's tree dropped
# before the next is parsed: the tree of a 10 MB module alone is about 750 MB. Small pieces are
# split faster a line, not only in less memory (each piece's tree is made in the memory the last
# one freed): the dense 3 MB module's split (one process, the collector off, medians of 4) took
# 1.96 s in pieces of 20,000 lines, 1.74 s of 2,000, 1.70 s of 500 and 1.55 s of 200.
PIECE_LINES = 200
# A line that starts a top-level statement starts at column 0 with none of these.
_NOT_A_START = frozenset(" \t\f\r\n#)]}\\")
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")


def split(lines: List[str], begin: int, end: int) -> List[Chunk]:
    """Parse lines[begin:end] (0-based), which start a top-level statement (or the text), alone
    and cut them into chunks; SyntaxError if they do not parse. Over PIECE_LINES lines, a piece
    at a time: a piece ends before a line that looks like a statement's start (column 0, not a
    comment, a closing bracket or `else:`-like), and is taken only if it parses alone, which it
    does only if it ends with a complete statement (no open bracket, string, continuation or
    decorator); otherwise it grows. So the chunks are those of the whole range's parse."""
    chunks: List[Chunk] = []
    size = PIECE_LINES
    while end - begin > size:
        cut = _statement_start(lines, begin + size, end)
        try:
            piece = _split_piece(lines, begin, cut)
        except SyntaxError:
            if cut >= end:
                raise
            size *= 2  # the cut was inside a statement (a string, brackets): a longer piece
            continue
        chunks.extend(piece)
        begin, size = cut, PIECE_LINES
    return chunks + _split_piece(lines, begin, end)


def _statement_start(lines: List[str], at: int, end: int) -> int:
    """The first row from `at` that may start a top-level statement, or `end`: not the line after
    a one-line decorator, which its decorator starts (a piece ending with the decorator does not
    parse, and would be parsed again twice as long)."""
    for row in range(at, end):
        line = lines[row]
        if line and line[0] not in _NOT_A_START and _CONTINUES.match(line) is None and \
                not (row > 0 and lines[row - 1][:1] == "@"):
            return row
    return end


def _split_piece(lines: List[str], begin: int, end: int) -> List[Chunk]:
    """Parse lines[begin:end] (0-based) alone and cut them into chunks; SyntaxError if they do not parse."""
    if begin >= end:
        return []
    module = ast.parse("".join(lines[begin:end]))
    groups: List[Tuple[int, List[ast.stmt]]] = []  # (0-based first line within the region, statements)
    for stmt in module.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))]) - 1
        if groups and groups[-1][0] == first:
            groups[-1][1].append(stmt)
        else:
            groups.append((first, [stmt]))
    chunks: List[Chunk] = []
    if not groups or groups[0][0] > 0:
        stop = groups[0][0] if groups else end - begin
        chunks.append(make_chunk(tuple(lines[begin:begin + stop]), False, False, (), ()))
    for n, (first, stmts) in enumerate(groups):
        last = groups[n + 1][0] if n + 1 < len(groups) else end - begin
        binds: Set[str] = set()
        mentions: Set[str] = set()
        registers: Set[str] = set()
        defines: Set[str] = set()
        nested: Set[str] = set()
        made: Set[Tuple[str, str]] = set()
        odd = False
        for stmt in stmts:
            odd = _names(stmt, binds, mentions, defines, registers, nested, made) or odd
        context = all(_is_context(s) for s in stmts)
        chunks.append(make_chunk(tuple(lines[begin + first:begin + last]), True, context, binds, mentions, registers, odd,
                             defines, nested, made))
    return chunks


def _registration_like(name: str) -> bool:
    return name.startswith("def") and ("vjp" in name or "jvp" in name or name in ("def_fwd", "def_bwd"))


def _is_context(stmt: ast.stmt) -> bool:
    """Imports, also inside a top-level if/try (`try: import x` / `except ImportError: x = None`)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, (ast.If, ast.Try, getattr(ast, "TryStar", ast.Try))):
        return any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in _module_scope(stmt))
    return False


def _module_scope(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes of `node` evaluated in the module's scope (not inside a def, class body, lambda)."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend([*current.decorator_list, *current.args.defaults,
                         *(d for d in current.args.kw_defaults if d is not None)])
            if current.returns is not None:
                todo.append(current.returns)
        elif isinstance(current, ast.ClassDef):
            todo.extend([*current.decorator_list, *current.bases, *current.keywords])
        elif isinstance(current, ast.Lambda):
            todo.extend([*current.args.defaults, *(d for d in current.args.kw_defaults if d is not None)])
        elif not isinstance(current, _COMPREHENSIONS):
            todo.extend(child_nodes(current))  # `ast.iter_child_nodes` without the contexts: no name is bound there
        else:  # a comprehension binds its own names; only a walrus inside it binds the module's
            todo.extend(n for n in walk(current) if isinstance(n, ast.NamedExpr))


def _names(stmt: ast.stmt, binds: Set[str], mentions: Set[str], defines: Set[str], registers: Set[str],
           nested: Set[str], made: Set[Tuple[str, str]]) -> bool:
    """Fill the names of a top-level statement: `binds` (module-level bindings), `mentions`
    (every name, at any depth), `defines` (names bound at any depth, `self.f` included),
    `registers` (X of `X.defvjp`-like registrations: VJP301 reads them module-wide, and one that
    registers no derivative it knows silences it for the file), `nested` (every function and
    class it defines; those bound at module level are dropped by `make_chunk`) and `made`
    ((target, callee name) of each `target = callee(...)`: `Chunk.made`). True for a registration
    whose target has no name (`getattr(f, method)(...)`, `getattr(f, "defvjp")`)."""
    odd = False
    for node in _module_scope(stmt):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            binds.add(node.id)
        elif isinstance(node, ast.alias):
            binds.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            binds.add(node.target.id)
        elif isinstance(node, _MATCH_CAPTURES) and node.name:
            binds.add(node.name)
    for node in walk(stmt):
        kind = type(node)
        if kind is ast.Name:
            mentions.add(node.id)  # type: ignore[attr-defined]
            if not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                defines.add(node.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            attr = node.attr  # type: ignore[attr-defined]
            if not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                defines.add(attr)  # `self.f = jax.custom_vjp(...)`
            if _registration_like(attr):
                base = node.value  # type: ignore[attr-defined]
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
                if name is None:
                    odd = True
                else:
                    registers.add(name)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            mentions.add(node.name)  # type: ignore[attr-defined]
            defines.add(node.name)  # type: ignore[attr-defined]
            nested.add(node.name)  # type: ignore[attr-defined]
        elif kind in _ASSIGNMENTS and type(node.value) is ast.Call:  # type: ignore[attr-defined]
            _made(node, made)
        elif kind is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            odd = odd or (isinstance(value, str) and _registration_like(value))
        elif kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if isinstance(func, ast.Name) and func.id in ("getattr", "setattr"):
                args = node.args  # type: ignore[attr-defined]
                odd = odd or not (len(args) >= 2 and isinstance(args[1], ast.Constant))
        elif kind is ast.Global:
            mentions.update(node.names)  # type: ignore[attr-defined]
            binds.update(node.names)  # type: ignore[attr-defined]  # a function assigning a module name binds it
        elif kind is ast.Nonlocal:
            mentions.update(node.names)  # type: ignore[attr-defined]
    mentions.update(binds)
    mentions.update(registers)
    for name in binds:  # rules pair `f` with `f_fwd`, `f_bwd`, `f_jvp`, `fwd_f` by their names
        parts = name.split("_")
        for cut in range(1, len(parts)):
            mentions.add("_".join(parts[:cut]))
            mentions.add("_".join(parts[cut:]))
    return odd


def _made(node: ast.AST, made: Set[Tuple[str, str]]) -> None:
    """(target, callee name) of `node`, an assignment of a call: each name or attribute it
    assigns, with the callee's name (`cv`, `custom_vjp` of `jax.custom_vjp`) or, for a computed
    callee, each name and attribute it reads (`partial(jax.custom_vjp, nondiff_argnums=(0,))`)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    named = [t.id if isinstance(t, ast.Name) else t.attr for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
    if not named:
        return
    func = node.value.func  # type: ignore[attr-defined]
    if func.__class__ is ast.Name:
        callee = {func.id}
    elif func.__class__ is ast.Attribute:
        callee = {func.attr}  # `jax.custom_vjp`, `jax.custom_derivatives.custom_vjp`: the creator's name is the last
    else:
        callee = {n.id if isinstance(n, ast.Name) else n.attr for n in walk(func) if isinstance(n, (ast.Name, ast.Attribute))}
    made.update((target, name) for target in named for name in callee)


def _nested_members(chunks: Sequence[Chunk], members: Sequence[int], triggers: Sequence[str],
                    triggered: Sequence[bool]) -> Dict[str, List[int]]:
    """The names bound below the module's scope that a family's statements may name from
    anywhere in the file, and the chunks that bind them. The whole lint links a custom
    derivative, its registration and its rules by name wherever each is (VJP301 reads a
    registration of `act` in any function as `act`'s; a factory's `act`, moved by an edit into
    another function, is still the one `act.defvjp` names), so a family holds every chunk that
    binds such a name and every chunk that mentions it. Such a name is one a statement holding a
    creator's or registration's name mentions (`triggered`: the chunk's text holds one of
    `triggers`), bound by a nested `def`/`class`, or one assigned a call of a creator (a trigger,
    or a name an import of one binds: `from jax import custom_vjp as cv`). The local names of
    plain code (`y = jnp.sin(x)` in every function) link nothing."""
    out: Dict[str, List[int]] = {}
    holding = [i for i in members if chunks[i].nested]
    if not holding:
        return out
    creators = set(triggers)
    hot: Set[str] = set()
    nesting = any(n.__class__ is str for i in holding for n in chunks[i].nested)  # else `hot` is not read
    for c, t in zip(chunks, triggered):
        if t and c.statements:
            if c.context:
                creators |= c.binds
            if nesting:
                hot |= c.mentions
    for i in holding:
        c = chunks[i]
        names = {n if n.__class__ is str else n[0] for n in c.nested
                 if (n in hot if n.__class__ is str else n[1] in creators)}
        for name in names:
            out.setdefault(name, []).append(i)
    return out


def _families(chunks: Sequence[Chunk], members: Sequence[int],
              nested: Optional[Dict[str, List[int]]] = None) -> List[List[int]]:
    """Connected groups of `members`: two chunks are linked when one mentions a name another binds."""
    parent = {i: i for i in members}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    binders: Dict[str, int] = {}
    for i in members:
        for name in chunks[i].binds:
            if name in binders:
                parent[find(i)] = find(binders[name])
            else:
                binders[name] = i
    for name, binding in (nested or {}).items():  # a member bound below the module's scope: one
        j = binders.setdefault(name, binding[0])   # family with every chunk that binds it
        for i in binding:
            a, b = find(i), find(j)
            if a != b:
                parent[a] = b
    for i in members:
        for name in chunks[i].mentions:
            j = binders.get(name)
            if j is not None:
                a, b = find(i), find(j)
                if a != b:
                    parent[a] = b
    groups: Dict[int, List[int]] = {}
    for i in members:
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def module_wide(chunks: Sequence[Chunk], triggers: Sequence[str], triggered: Optional[Sequence[bool]] = None) -> bool:
    """Whether a registration may target no derivative: its target is named by no statement
    that can create one (at any depth; `triggers`: the prefilter names; `triggered`: whether each
    chunk's text holds one), or it has no name at all. Such a registration silences VJP301
    file-wide, with messages that depend on everything: then the file is one family."""
    if triggered is None:
        triggered = _triggered(chunks, triggers)
    creators: Set[str] = set()
    for c, t in zip(chunks, triggered):
        if t and c.statements and not c.context:
            creators.update(c.defines)
    return any(c.odd_registration or not c.registers <= creators for c in chunks if c.statements)


def _triggered(chunks: Sequence[Chunk], triggers: Sequence[str]) -> List[bool]:
    return [any(t in c.text for t in triggers) for c in chunks]


def grouped(chunks: Sequence[Chunk], triggers: Sequence[str]) -> List[List[int]]:
    """The families of `chunks` (indices of statements that are not context)."""
    members = [i for i, c in enumerate(chunks) if c.statements and not c.context]
    triggered = _triggered(chunks, triggers)
    if module_wide(chunks, triggers, triggered):
        return [members]
    return _families(chunks, members, _nested_members(chunks, members, triggers, triggered))


def starts_of(chunks: Sequence[Chunk]) -> List[int]:
    """The 1-based row each chunk starts at."""
    starts: List[int] = []
    row = 1
    for chunk in chunks:
        starts.append(row)
        row += len(chunk.lines)
    return starts


def shift(statement: ast.stmt, by: int) -> None:
    """`ast.increment_lineno` of one statement (its decorators included), by the faster walk: a
    family parsed compact is moved to its real rows."""
    for node in walk(statement):
        if "lineno" in node._attributes:
            node.lineno += by  # type: ignore[attr-defined]
            end = getattr(node, "end_lineno", None)
            if end is not None:
                node.end_lineno = end + by  # type: ignore[attr-defined]
