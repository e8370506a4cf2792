"""The regions of a module that can matter: the top-level statements the analysis needs.

A finding needs a recognised name (the prefilter names: `custom_vjp`, configured aliases...).
The model and the rules therefore see only
- the seeds, the statements whose text contains a recognised name;
- forwards from them, the statements that mention a name a seed binds (`f.defvjp(...)`,
  `g = jax.jit(f)`, a test calling `f`), and then a name those bind, transitively;
- backwards from all of these, the statements that bind a word a kept statement contains
  (helpers, constants, base classes), transitively (an import's words are not followed: it
  uses no name bound here);
- of a big class split into its members, when it is kept (its header or a member), the members
  that make what an instance is (fields, dunders, `setup`);
- every import and the module docstring.
Statements keep their positions, so a finding is the one the whole module gives. Words are read
from the text, single-quoted strings and f-strings included (comments and other triple-quoted
strings, docstrings mostly, name nothing), so a region is a superset of what names reach.
`tests/cli/test_speed_invariants.py` asserts that every fixture gives the whole module's findings.
"""

from __future__ import annotations

import ast
import functools
import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from vjplint.syntax.names import EXTENDED_NAMES
from vjplint.syntax.positions import lines_with_endings
from vjplint.syntax.walk import child_nodes, walk
from vjplint.syntax.text_spans import CodeWords, TextIndex, occurrences, prefix_groups  # noqa: F401 - occurrences: read from here too

# `match` patterns bind names too; ast has them from Python 3.10 (requires-python is 3.9)
_MATCH_CAPTURES = tuple(getattr(ast, n) for n in ("MatchAs", "MatchStar") if hasattr(ast, n))
_MATCH_MAPPING = tuple(getattr(ast, n) for n in ("MatchMapping",) if hasattr(ast, n))

GLOBAL = re.compile(r"^[ \t]*global[ \t]", re.MULTILINE)
IDENTIFIERS = re.compile(r"[A-Za-z0-9_.]+")
MIN_STATEMENTS = 8  # below this, selecting costs more than it saves
_IMPORTS = (ast.Import, ast.ImportFrom)
# Names whose rules look at one expression and its bindings, never at callers.
LOCAL_NAMES = frozenset({"JVPTracer", "direct_linearize", "DIRECT_LINEARIZE", "custom_transforms"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS_SET = frozenset(_DEFS)
_TARGETED = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)
_ALWAYS_KEPT_METHODS = frozenset({"setup"})  # flax linen's constructor
SELF_ATTRIBUTE = re.compile(r"self\.(?<!\wself\.)([A-Za-z_][A-Za-z0-9_]*)\s*(?:=(?!=)|[-+*/%@&|^]=|:|,)")


def row_offsets(text: str, lines: Sequence[str], rows: Iterable[int]) -> Dict[int, int]:
    """Offset in `text` of the start of each 1-based row in `rows` (one past the last row: the end)."""
    if "\r" in text:
        lengths: Sequence[int] = list(map(len, lines_with_endings(text)))
        extra = 0
    else:
        lengths, extra = list(map(len, lines)), 1  # each line's "\n"
    found: Dict[int, int] = {}
    before = list(accumulate(lengths, initial=0))  # before[k]: the length of the first k lines
    size = len(text)
    for wanted in sorted(set(rows)):
        wanted = max(1, min(wanted, len(lengths) + 1))
        found[wanted] = min(before[wanted - 1] + extra * (wanted - 1), size)
    return found


def focus(module: ast.Module, text: str, lines: Sequence[str], names: Iterable[str],
          index: Optional[TextIndex] = None) -> ast.Module:
    """A module of only the statements of `module` that can matter. The units are the top-level
    statements, except that a big class holding a recognised name is split into its members."""
    body = module.body
    if len(body) < MIN_STATEMENTS and not any(isinstance(s, ast.ClassDef) for s in body):
        return module
    rows: List[int] = []
    for statement in body:
        rows += (first_line(statement), (statement.end_lineno or statement.lineno) + 1)
        if isinstance(statement, ast.ClassDef):
            rows += (r for m in statement.body for r in (first_line(m), (m.end_lineno or m.lineno) + 1))
    offsets = row_offsets(text, lines, rows)
    last = max(offsets)
    names = [n for n in names if n]
    local = [n for n in names if n in LOCAL_NAMES]
    spread = [n for n in names if n not in LOCAL_NAMES]

    def span(first: int, end: int) -> Tuple[int, int]:
        return offsets[min(first, last)], offsets[min(end + 1, last)]

    index = TextIndex.of(text, index)
    found_at = index.occurrences(names)

    def mentions(where: Tuple[int, int], among: Sequence[str]) -> bool:
        """Whether `text[where[0]:where[1]]` holds one of `among` (what `text.find(n, *where)` says)."""
        start, end = where
        for n in among:
            at = found_at[n]
            if at:
                i = bisect_left(at, start)
                if i < len(at) and at[i] + len(n) <= end:
                    return True
        return False

    units: List[ast.stmt] = []  # a member unit's statement, or a split class's header (the ClassDef)
    spans: List[Tuple[int, int]] = []
    members: Dict[int, List[int]] = {}  # split class's unit -> its members' units
    for statement in body:
        whole = span(first_line(statement), statement.end_lineno or statement.lineno)
        if isinstance(statement, ast.ClassDef) and len(statement.body) >= MIN_STATEMENTS and mentions(whole, names):
            header = len(units)
            units.append(statement)
            spans.append(span(first_line(statement), first_line(statement.body[0]) - 1))
            members[header] = []
            for member in statement.body:
                members[header].append(len(units))
                units.append(member)
                spans.append(span(first_line(member), member.end_lineno or member.lineno))
        else:
            units.append(statement)
            spans.append(whole)
    if len(units) < MIN_STATEMENTS:
        return module
    top_level = set(body)
    member_units = {m for group in members.values() for m in group}
    bound = []
    for i, unit in enumerate(units):
        if i in members:
            bound.append({unit.name})
        elif i in member_units and isinstance(unit, _FUNCTIONS):
            bound.append({unit.name, *SELF_ATTRIBUTE.findall(text, *spans[i])})  # what a method sets on self
        else:
            bound.append(_bound_names(unit, text, spans[i]))
    callable_names = {u.name for u in units if isinstance(u, _DEFS)}
    # Seeds: a unit naming a creator in its code (a comment or a sentence that mentions
    # `jax.custom_jvp` is no reason to follow what the unit binds), and, kept but not followed,
    # a unit holding a name of the rules that read one expression (VJP401, VJP402).
    forward = [i not in members and mentions(spans[i], spread) and _names_in_code(unit, spread)
               for i, unit in enumerate(units)]
    for header, group in members.items():  # a class holding a derivative: its instances matter
        forward[header] = mentions(spans[header], spread) or any(forward[m] for m in group)
    local_seeds = [i not in members and mentions(spans[i], local) for i in range(len(units))]
    # `ad.defjvp(prim, rule)`, a registration on an imported module or object, is kept (VJP403
    # reads `jax.defvjp`) but neither followed nor read backwards: no rule reads a rule registered
    # on an import (JAX's lax.py registers a hundred primitives' rules this way), unless the
    # statement also names what a followed statement binds (then it is followed as any other).
    imported = _imported_only(units, bound, top_level)
    registration = [False] * len(units)
    for i, unit in enumerate(units):
        if forward[i] and isinstance(unit, ast.Expr) and _registers_on(unit, spread, imported):
            forward[i], registration[i] = False, True
    words = _Words(text, spans, index)
    # One step on from a statement holding such a name: an import or constant (`JVPTracer as _T`,
    # `NAMES = ("JVPTracer",)`) is read where the test is; a function testing it is exempt when
    # only `jax.jvp` calls it, which its users show.
    aliases: Set[str] = set()
    for i, seeded in enumerate(local_seeds):
        if seeded:
            aliases |= bound[i]
    if aliases:
        for i in words.holding(aliases, (i for i in range(len(units)) if not local_seeds[i] and i not in members)):
            local_seeds[i] = True
    class_of = {m: header for header, group in members.items() for m in group}
    _close_forward(units, bound, forward, words, callable_names, class_of)
    keep = [f or l or r for f, l, r in zip(forward, local_seeds, registration)]
    alone = {i for i, r in enumerate(registration) if r and not forward[i] and not local_seeds[i]}
    # Fields, dunders and setup make what an instance is: kept with a class that is kept (its
    # header or one of its members), not with every class whose text holds a name.
    instance = {header: [m for m in group if not isinstance(units[m], _FUNCTIONS)
                         or units[m].name in _ALWAYS_KEPT_METHODS or units[m].name.startswith("__")]
                for header, group in members.items()}
    for i, unit in enumerate(units):
        if isinstance(unit, _IMPORTS) and unit in top_level:
            keep[i] = True
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        keep[0] = True  # the module docstring
    backward = _Backward(bound, keep, words)
    # An import names modules and what it binds, never a name bound here: not followed.
    backward.close([i for i, k in enumerate(keep) if k and i not in alone
                    and not (isinstance(units[i], _IMPORTS) and units[i] in top_level)])
    # A bare call passing a top-level class (`jax.tree_util.register_static(Cls)`, `register_pytree_node(Cls, ...)`)
    # makes what an instance is too (a pytree or a static leaf): kept with the class.
    classes = {u.name: i for i, u in enumerate(units) if isinstance(u, ast.ClassDef) and u in top_level}
    passed: Dict[int, List[int]] = {}
    for i, unit in enumerate(units) if classes else ():
        if isinstance(unit, ast.Expr) and isinstance(unit.value, ast.Call) and unit in top_level:
            for a in unit.value.args:
                if isinstance(a, ast.Name) and a.id in classes:
                    passed.setdefault(classes[a.id], []).append(i)
    while True:
        fresh = [m for header, group in members.items() if keep[header] or any(keep[m] for m in group)
                 for m in instance[header] if not keep[m]]
        fresh += [r for header, calls in passed.items() if keep[header] or any(keep[m] for m in members.get(header, ()))
                  for r in calls if not keep[r] and r not in fresh]
        if not fresh:
            break
        for m in fresh:
            keep[m] = True
        backward.close(fresh)
    if all(keep):
        return module
    kept: List[ast.stmt] = []
    for i, unit in enumerate(units):
        if i in members:
            chosen = [units[m] for m in members[i] if keep[m]]
            if keep[i] or chosen:
                kept.append(unit if len(chosen) == len(unit.body) or not chosen else _with_body(unit, chosen))
        elif keep[i] and unit in top_level:
            kept.append(unit)
    return ast.Module(body=kept, type_ignores=module.type_ignores)




def _with_body(cls: ast.ClassDef, body: List[ast.stmt]) -> ast.ClassDef:
    copy = ast.ClassDef(name=cls.name, bases=cls.bases, keywords=cls.keywords, body=body,
                        decorator_list=cls.decorator_list)
    for field in ("lineno", "col_offset", "end_lineno", "end_col_offset", "type_params"):
        if hasattr(cls, field):
            setattr(copy, field, getattr(cls, field))
    return copy


class _Words:
    """Each unit's words in code (not in its comments or docstrings: `vjplint.syntax.text_spans`), read
    when first asked for (only kept units are ever asked)."""

    def __init__(self, text: str, spans: Sequence[Tuple[int, int]], index: Optional[TextIndex] = None) -> None:
        self.text, self.spans = text, spans
        self.code = CodeWords(text, index)
        self.found: Dict[int, Set[str]] = {}
        self._order: Optional[Tuple[List[int], List[int]]] = None  # span starts, sorted, and their units

    def __getitem__(self, i: int) -> Set[str]:
        found = self.found.get(i)
        if found is None:
            found = self.found[i] = self.code.between(*self.spans[i])
        return found

    def holding(self, names: Set[str], among: Iterable[int]) -> Set[int]:
        """Those units of `among` whose words include one of `names` (`not names.isdisjoint(self[i])`
        for each). The text is searched for each name (up to 64 of them) and only the units where
        one stands as a word are read: a unit's words are its whole text, and most units are never
        kept (a fifth of linting JAX's tree read every unit's words)."""
        among = list(among)
        if not names or not among:
            return set()
        if len(names) > 64:  # many searches: read them all
            return {i for i in among if not names.isdisjoint(self[i])}
        if self._order is None:
            order = sorted(range(len(self.spans)), key=lambda k: self.spans[k][0])
            self._order = [self.spans[k][0] for k in order], order
        starts, order = self._order
        spans = self.spans
        candidates: Set[int] = set()
        for name in names:
            for at in _standing(self.text, name):
                k = bisect_right(starts, at) - 1
                if k >= 0 and at + len(name) <= spans[order[k]][1]:
                    candidates.add(order[k])
        wanted = set(among)
        return {i for i in candidates if i in wanted and not names.isdisjoint(self[i])}


_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_WORD_CHARS = _LETTERS | frozenset("0123456789")


def _standing(text: str, name: str) -> Iterator[int]:
    """Where `name` stands with no letter or underscore before it and no letter, digit or
    underscore after it (`_standalone`'s matches). A name of three characters or more is
    searched with str.find: it is rare, and a regular expression per name (most are a file's
    own) cost more to compile than to run."""
    if len(name) < 3:
        for m in _standalone(name).finditer(text):
            yield m.start()
        return
    size, at = len(name), text.find(name)
    while at >= 0:
        if (at == 0 or text[at - 1] not in _LETTERS) and text[at + size:at + size + 1] not in _WORD_CHARS:
            yield at
        at = text.find(name, at + 1)


@functools.lru_cache(maxsize=256)
def _standalone(name: str) -> "re.Pattern[str]":
    """`name` with no letter or underscore before it and no letter, digit or underscore after it,
    the literal first (the scan runs at memchr speed) and the sides checked after: a superset of
    where it is a word (after a digit it may be one: `3f` holds the word `f`)."""
    quoted = re.escape(name)
    return re.compile(f"{quoted}(?<![A-Za-z_]{quoted})(?![A-Za-z0-9_])")




def _close_forward(units: List[ast.stmt], bound: List[Set[str]], forward: List[bool], words: _Words,
                   callable_names: Set[str], class_of: Dict[int, int]) -> None:
    """Mark the units that mention a name a forward unit binds, or a function a forward statement
    outside functions passes (`f.defvjp(f_fwd, f_bwd)`: who else calls `f_fwd`), or that bind a
    name made from one (`f_fwd` for `f`), until none is new. What a member of a split class binds
    (a method, a field, what a method sets on self: `self.f = jax.custom_vjp(...)`) reaches the
    members of its class that mention it; code outside the class reaches them through the
    class's name (`Model.f`, `m = Model()`)."""

    def reach(i: int, names: Set[str], on_self: Dict[int, Set[str]]) -> None:
        if i in class_of:
            on_self.setdefault(class_of[i], set()).update(bound[i])
        elif isinstance(units[i], _DEFS):
            names |= bound[i]
        else:
            named = words[i] & callable_names
            names |= bound[i] | (_passed(units[i], named) if named else named)

    known: Set[str] = set()
    known_on_self: Dict[int, Set[str]] = {}
    fresh: Set[str] = set()
    fresh_on_self: Dict[int, Set[str]] = {}
    for i, f in enumerate(forward):
        if f:
            reach(i, fresh, fresh_on_self)
    while fresh or fresh_on_self:
        known |= fresh
        for header, attrs in fresh_on_self.items():
            known_on_self.setdefault(header, set()).update(attrs)
        prefixes = tuple(n + "_" for n in fresh if len(n) > 1)
        suffixes = tuple("_" + n for n in fresh if len(n) > 1)
        became: List[int] = []
        holding = words.holding(fresh, (i for i in range(len(units)) if not forward[i]))
        for i in range(len(units)):  # set lookups, not a regex of every name: linear in the module
            if forward[i]:
                continue
            on_self = fresh_on_self.get(class_of[i]) if i in class_of else None
            if i in holding or (on_self and not on_self.isdisjoint(words[i])) or any(
                    name.lstrip("_").startswith(prefixes) or name.endswith(suffixes) for name in bound[i]):
                forward[i] = True
                became.append(i)
        fresh, fresh_on_self = set(), {}
        for i in became:
            reach(i, fresh, fresh_on_self)
        fresh -= known
        for header in list(fresh_on_self):
            fresh_on_self[header] -= known_on_self.get(header, set())
            if not fresh_on_self[header]:
                del fresh_on_self[header]


def _passed(unit: ast.AST, names: Set[str]) -> Set[str]:
    """Those of `names` that `unit` passes as values (an argument, an assigned value):
    `f.defvjp(f_fwd, f_bwd)` passes `f_fwd`; `mul(g, ans)` only calls `mul`, `Mode.HIGH` reads an
    attribute, and a lambda's parameter (`lambda g, max: ...`) is not the module's name."""
    found: Set[str] = set()
    stack: List[Tuple[ast.AST, FrozenSet[str]]] = [(unit, frozenset())]
    while stack:
        node, hidden = stack.pop()
        if isinstance(node, ast.Name):
            if node.id in names and node.id not in hidden:
                found.add(node.id)
            continue
        if isinstance(node, ast.Lambda):
            a = node.args
            hidden = hidden | {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}
        for child in child_nodes(node):
            if not (isinstance(child, ast.Name) and (
                    (isinstance(node, ast.Call) and child is node.func) or isinstance(node, ast.Attribute))):
                stack.append((child, hidden))
    return found


class _Backward:
    """Marks the units that bind a word a marked unit contains, until none is new; `close` may be
    called again with more marked units (a word already followed is not followed again)."""

    def __init__(self, bound: List[Set[str]], keep: List[bool], words: _Words) -> None:
        self.keep, self.words = keep, words
        self.binders: Dict[str, List[int]] = {}
        for i, found in enumerate(bound):
            for name in found:
                self.binders.setdefault(name, []).append(i)
        self.seen: Set[str] = set()

    def close(self, start: List[int]) -> None:
        keep, words, binders, seen = self.keep, self.words, self.binders, self.seen
        pending = start
        while pending:
            later: List[int] = []
            for i in pending:
                for word in words[i] - seen:
                    seen.add(word)
                    for j in binders.get(word, ()):
                        if not keep[j]:
                            keep[j] = True
                            later.append(j)
            pending = later


REGISTRATIONS = frozenset({"defvjp", "defjvp", "defjvps", "defvjp_all", "defjvp_all"})


def _imported_only(units: Sequence[ast.stmt], bound: Sequence[Set[str]], top_level: Set[int]) -> Set[str]:
    """The module-level names that only imports bind."""
    imported: Set[str] = set()
    other: Set[str] = set()
    for unit, names in zip(units, bound):
        (imported if isinstance(unit, _IMPORTS) and unit in top_level else other).update(names)
    return imported - other


def _registers_on(unit: ast.AST, names: Sequence[str], imported: Set[str]) -> bool:
    """Whether every recognised name in the unit's code (as `_names_in_code` reads them) is a
    registration method of a name only an import binds (`ad.defjvp`)."""
    if not imported:
        return False
    ends = _identifier_ends(tuple(names))
    seen = False
    for node in walk(unit):  # in any order: the answer is the same
        if node.__class__ in _DEFS_SET or node.__class__ is ast.alias:
            return False  # a definition or an import inside: not a lone registration
        found = _spelled(node)
        if found is not None and any(n in found for n in names) and ends.search(found) is not None:
            if not (node.__class__ is ast.Attribute and found in REGISTRATIONS and isinstance(node.value, ast.Name)  # type: ignore
                    and node.value.id in imported):  # type: ignore[attr-defined]
                return False
            seen = True
    return seen


def _names_in_code(unit: ast.AST, names: Sequence[str]) -> bool:
    """Whether an identifier, an attribute, an import, a keyword or a word-like string constant
    (`backend()["custom_vjp"]`) in `unit` holds one of `names` where an identifier ends, as the
    prefilter reads names (`jax.custom_vjp`, `filter_custom_vjp`; not JAX's internal
    `process_custom_jvp_call` or `ad.defjvp2`, another API that no rule reads)."""
    key = tuple(names)
    ends, held = _identifier_ends(key), _any_of(key)
    stack: List[ast.AST] = [unit]
    while stack:  # decorators, then the rest in source order (a creator is most often named near a unit's top)
        node = stack.pop()
        found = _spelled(node)
        if found and held.search(found) is not None and ends.search(found) is not None:
            return True
        stack.extend(reversed(child_nodes(node)))
        if node.__class__ in _DEFS_SET and node.decorator_list:  # type: ignore[attr-defined]
            stack.extend(reversed(node.decorator_list))  # type: ignore[attr-defined]  (`@jax.custom_vjp`)
    return False


@functools.lru_cache(maxsize=32)
def _any_of(names: Tuple[str, ...]) -> "re.Pattern[str]":
    """One of `names` anywhere (`any(n in s for n in names)`, one search)."""
    return re.compile("|".join(re.escape(n) for n in names if n) or "(?!)")


def _spelled(node: ast.AST) -> Optional[str]:
    """What a node spells in code where a recognised name can stand: an identifier, an
    attribute, an import (`name asname`), a definition's name, a keyword, a word-like string."""
    cls = node.__class__
    if cls is ast.Name:
        return node.id  # type: ignore[attr-defined]
    if cls is ast.Attribute:
        return node.attr  # type: ignore[attr-defined]
    if cls is ast.alias:
        return f"{node.name} {node.asname or ''}"  # type: ignore[attr-defined]
    if cls in _DEFS_SET:
        return node.name  # type: ignore[attr-defined]
    if cls is ast.keyword:
        return node.arg or ""  # type: ignore[attr-defined]
    if cls is ast.Constant:
        value = node.value  # type: ignore[attr-defined]
        return value if isinstance(value, str) and IDENTIFIERS.fullmatch(value) else None
    return None


@functools.lru_cache(maxsize=32)
def _identifier_ends(names: Tuple[str, ...]) -> "re.Pattern[str]":
    """A name where an identifier ends (vjplint.lint.engine.may_contain_findings, on text)."""
    alternatives = sorted({*names, *(e.decode() for e in EXTENDED_NAMES)}, key=len, reverse=True)
    return re.compile("(?:" + "|".join(re.escape(n) for n in alternatives if n) + ")(?![A-Za-z0-9_])")


def first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    return min(statement.lineno, *(d.lineno for d in decorators)) if decorators else statement.lineno


def _bound_names(statement: ast.stmt, text: str, span) -> Set[str]:
    """The module-level names a top-level statement binds (not those of nested scopes)."""
    if isinstance(statement, _DEFS):
        if text.find("global", *span) < 0 or GLOBAL.search(text, *span) is None:
            return {statement.name}
        # `global X` inside binds X in the module.
        return {statement.name, *(n for node in walk(statement) if isinstance(node, ast.Global) for n in node.names)}
    if isinstance(statement, _IMPORTS):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    stack: List[ast.AST]
    if not isinstance(statement, _TARGETED) or text.find(":=", *span) >= 0:
        stack = [statement]  # a compound statement, or a walrus: bindings anywhere outside nested scopes
    elif isinstance(statement, ast.Assign):
        stack = list(statement.targets)
    elif isinstance(statement, ast.Expr):
        stack = []
    else:
        stack = [statement.target]
    found: Set[str] = set()
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                found.add(node.id)
            continue
        if isinstance(node, _IMPORTS):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
            continue
        if isinstance(node, _DEFS):
            found.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, _MATCH_CAPTURES) and node.name:
            found.add(node.name)
        elif isinstance(node, _MATCH_MAPPING) and node.rest:
            found.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return found
