"""What other modules of the run do with this module's custom derivatives and factories.

`vjplint.project.index` builds, once per run, a summary of every module that calls, registers or
uses a top-level custom derivative (or a factory building one) of another module: for each call,
the kind of each argument as `vjplint.facts.value_kinds` infers it in the caller (with its evidence chain,
quoted with the caller's file and line). The summaries travel to the defining module's lint as
the rows of its `vjplint.model.run_facts.RunFacts` (so a change to a caller changes the callee's
result-cache key), and rules read them through `model.facts.external`. Single-file lint has none
(`external` is None) and behaves as before.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from vjplint.diagnostics import Edit, Fix, FixElsewhere, Position
from vjplint.facts.loops import ImportedLoop, imported_loop
from vjplint.syntax.positions import column_zero_matches
from vjplint.facts.registry import query

CALL, REGISTER, USE, FORWARD_USE, LOOP = "call", "register", "use", "forward", "loop"
REVERSE_TWICE = "reverse2"  # `jax.grad(jax.grad(mod.f))`: reverse mode applied twice to the function
# The reverse-mode transformations (`jax.grad(jax.value_and_grad(f))` nests two; VJP339).
REVERSE_MODE = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.vjp"})
REGISTRATION_METHODS = frozenset({"defvjp", "defjvp", "defjvps", "def_fwd", "def_bwd", "def_jvp"})
CREATOR_TAILS = ("custom_vjp", "custom_jvp")
MAX_CALLS = 16  # per target and module: beyond that the callers are a library's users, not a pattern


@dataclass(frozen=True)
class ExternalArg:
    """One argument of a call in another module: its slot (position or keyword) and kind."""

    slot: str  # "0", "1", ... or a keyword name
    tag: str
    dtype: str
    quoted: str  # the argument's source text
    why: str  # where its kind comes from, file:line included
    traced: str
    capture: str = ""  # for a callable: the captured name known to be a tracer (`Cls.field` for an object)
    capture_traced: str = ""
    capture_may: str = ""  # for a callable: a captured `self` with array fields, an object holding a parameter (quoted)


@dataclass(frozen=True)
class ExternalCall:
    target: str  # the name in the defining module
    where: str  # "driver.py:12"
    caller: str  # the function holding the call ("" at module level)
    args: Tuple[ExternalArg, ...]
    complete: bool  # False when a starred argument or **kwargs hides some slots

    def arg(self, position: int, name: str) -> Optional[ExternalArg]:
        for a in self.args:
            if a.slot == str(position) or a.slot == name:
                return a
        return None


@dataclass
class ExternalFacts:
    calls: Dict[str, List[ExternalCall]] = field(default_factory=dict)
    registered: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)  # name -> [(method, where)]
    uses: Dict[str, List[str]] = field(default_factory=dict)  # name -> [where]
    forward: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)  # name -> [(how, where)]
    reverse_twice: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)  # name -> [(how, where)]
    # Another module's function this module calls, by its qualified name here (`mod.solve`,
    # `.mod.solve`), that feeds some parameters into a while_loop (vjplint.project.loops).
    loops: Dict[str, ImportedLoop] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Sequence[tuple]) -> "ExternalFacts":
        out = cls()
        for row in rows:
            if row[0] == CALL:
                _, target, where, caller, complete, args = row
                out.calls.setdefault(target, []).append(
                    ExternalCall(target, where, caller, tuple(ExternalArg(*a) for a in args), bool(complete)))
                out.uses.setdefault(target, []).append(where)  # `mod.f(...)` is a use too
            elif row[0] == REGISTER:
                out.registered.setdefault(row[1], []).append((row[2], row[3]))
            elif row[0] == USE:
                out.uses.setdefault(row[1], []).append(row[2])
            elif row[0] == LOOP:  # ("loop", spelling here, name, its display, def line, params)
                out.loops[row[1]] = imported_loop(*row[2:])
            elif row[0] == FORWARD_USE:  # `jax.jvp(mod.f, ...)`: forward mode applied to the function
                out.forward.setdefault(row[1], []).append((row[2], row[3]))
                out.uses.setdefault(row[1], []).append(row[3])
            elif row[0] == REVERSE_TWICE:  # `jax.grad(jax.grad(mod.f))`
                out.reverse_twice.setdefault(row[1], []).append((row[2], row[3]))
                out.uses.setdefault(row[1], []).append(row[3])
        return out


# -- the defining side: which top-level names other modules may want ---------------------------
# `.defvjp` and its kin; the registered name is read backwards from there (a regex that starts
# with `\b(\w+)` tries every word of the module, 50 times slower on JAX's big test files).
_REGISTRATION = re.compile(r"\.\s*def(?:vjp|jvp|jvps|_fwd|_bwd|_jvp)\b")
_CREATOR = re.compile(r"\bcustom_(?:vjp|jvp)\b")
# A module-level statement start: a decorator, a def, an assignment (name only), anything else.
_TOP = re.compile(r"^(?:(@)[^\n]*|(?:async[ \t]+)?def[ \t]+(\w+)|(\w+)[ \t]*=(?!=)[^\n]*|[^\s#][^\n]*)", re.MULTILINE)
_INNER_CREATOR = re.compile(r"^[ \t]+@[^\n]*\bcustom_(?:vjp|jvp)\b", re.MULTILINE)


_VJP_CREATOR = re.compile(r"\bcustom_vjp\b")
# `g = make_f(...)`: what a factory the module exports (exported_targets) returns, when it is a custom_vjp
_MADE = re.compile(r"\w+[ \t]*=[ \t]*(\w+)[ \t]*\(")
_ALIAS = re.compile(r"\w+[ \t]*=[ \t]*(\w+)[ \t]*(?:#[^\n]*)?$")  # `g = f`: another name for `f`
FORWARD_ONLY = "~"  # marks a target summarised only for forward mode applied to it


def top_statements(text: str) -> List["re.Match[str]"]:
    """The module-level statements' first lines (`_TOP`'s matches), as `exported_targets` and
    `forward_targets` read them: found once by a caller that asks both."""
    return column_zero_matches(_TOP, text)


def forward_targets(text: str, exported: Sequence[str], tops: Optional[List["re.Match[str]"]] = None) -> List[str]:
    """Top-level custom_vjp functions (decorated or assigned), their module-level aliases
    (`g = f`) and results of exported factories (`g = make_f()`) not already in `exported`, marked FORWARD_ONLY: other modules matter to them only
    where they apply `jax.jvp`/`jacfwd`/a linearized function (VJP315) or reverse mode twice
    (VJP339) to them, so only those uses are summarised."""
    names: List[str] = []
    decorators: List[str] = []
    vjps: Set[str] = set()
    for m in (tops if tops is not None else column_zero_matches(_TOP, text)):
        decorator, def_name, assigned = m.group(1), m.group(2), m.group(3)
        if decorator:
            decorators.append(m.group(0))
            continue
        alias = _ALIAS.match(m.group(0)) if assigned else None
        made = _MADE.match(m.group(0)) if assigned and not alias else None
        name = def_name if def_name and any(_VJP_CREATOR.search(d) for d in decorators) else \
            assigned if assigned and (_VJP_CREATOR.search(m.group(0)) or alias and alias.group(1) in vjps
                                      or made and made.group(1) in exported) else None
        if name:
            vjps.add(name)
        if name and name not in exported and FORWARD_ONLY + name not in names:
            names.append(FORWARD_ONLY + name)
        decorators = []
    return names


def exported_targets(text: str, tops: Optional[List["re.Match[str]"]] = None) -> List[str]:
    """Top-level names whose callers in other modules matter to a rule: custom derivatives with
    nondiff arguments (what is passed there), factories building a custom derivative inside
    (what their parameters receive), and custom derivatives this module never registers (where
    they are registered or used). Read from the text with a few regular expressions, without
    parsing: this only chooses what callers are summarised for (the rules judge definitions on
    the real model), and it keeps the index cheap on trees with many custom derivatives."""
    registered = _registered(text)
    names: List[str] = []
    decorators: List[str] = []
    defs: List[Tuple[int, str]] = []  # (offset, name) of undecorated-by-a-creator top-level defs
    for m in (tops if tops is not None else column_zero_matches(_TOP, text)):
        decorator, def_name, assigned = m.group(1), m.group(2), m.group(3)
        line = m.group(0)
        if decorator:
            decorators.append(line)
            continue
        if def_name:
            creators = [d for d in decorators if _CREATOR.search(d)]
            if creators:
                defs.append((m.start(), ""))  # a custom derivative itself, not a factory
                if def_name not in registered or any("nondiff_argnums" in d for d in creators):
                    names.append(def_name)
            else:
                defs.append((m.start(), def_name))
        elif assigned and _CREATOR.search(line) and (assigned not in registered or "nondiff_argnums" in line):
            names.append(assigned)
        elif not line.startswith((")", "]", "}")):  # any other statement ends the def above (a
            defs.append((m.start(), ""))  # closing bracket only continues the statement above)
        decorators = []
    starts = [start for start, _ in defs]
    for m in _inner_creators(text):  # a factory: a custom derivative is built inside a def
        before = bisect.bisect_right(starts, m.start())  # the last statement starting at or before it
        owner = defs[before - 1][1] if before else ""
        if owner and owner not in names:
            names.append(owner)
    return names


def _creators(text: str) -> List["re.Match[str]"]:
    """What `_CREATOR.finditer(text)` finds, tried only where `custom_` occurs (a pattern that
    starts with `\\b` is tried at every character)."""
    found: List["re.Match[str]"] = []
    at = text.find("custom_")
    while at >= 0:
        m = _CREATOR.match(text, at)
        if m is not None:
            found.append(m)
        at = text.find("custom_", at + 7)
    return found


def _inner_creators(text: str) -> List["re.Match[str]"]:
    """What `_INNER_CREATOR.finditer(text)` finds (indented decorator lines naming a creator),
    tried only on the lines where a creator's name occurs."""
    found: List["re.Match[str]"] = []
    last = -1
    for creator in _creators(text):
        start = text.rfind("\n", 0, creator.start()) + 1
        if start != last:
            last = start
            m = _INNER_CREATOR.match(text, start)
            if m is not None:
                found.append(m)
    return found


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what `\w` matches


def _registered(text: str) -> Set[str]:
    r"""The names `name.defvjp` (and kin) registers on: what `\b(\w+)\s*\.\s*defvjp\b` finds,
    matches never overlapping."""
    found: Set[str] = set()
    floor = 0  # the end of the last match: a word is never read from inside it
    for m in _REGISTRATION.finditer(text):
        end = m.start()
        while end > floor and text[end - 1].isspace():
            end -= 1
        start = end
        while start > floor and _is_word(text[start - 1]):
            start -= 1
        if start < end and (start == 0 or not _is_word(text[start - 1])):
            found.add(text[start:end])
            floor = m.end()
    return found


# -- the calling side ----------------------------------------------------------------------------
def absolute(name: str, package: str) -> Optional[str]:
    """`name` as an absolute dotted name (relative imports resolved against `package`)."""
    if not name.startswith("."):
        return name
    level = len(name) - len(name.lstrip("."))
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    rest = name[level:]
    return ".".join([*base, rest]) if rest else ".".join(base) or None


def _module_level(body: List[ast.stmt]) -> Iterable[ast.stmt]:
    """Statements run at import: the module body and its if/try/with blocks (not functions)."""
    for stmt in body:
        yield stmt
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field_name, None)
            if isinstance(inner, list) and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                   ast.ClassDef)):
                yield from _module_level([s for s in inner if isinstance(s, ast.stmt)] + [
                    s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body])


def imported_names(tree: ast.Module, package: str) -> Dict[str, str]:
    """local name -> absolute dotted name, for the module-level imports of the module."""
    out: Dict[str, str] = {}
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    out[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = absolute("." * node.level + (node.module or ""), package)
            if base is None:
                continue
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{base}.{alias.name}"
    return out


def _dotted(expr: ast.expr, imports: Dict[str, str]) -> Optional[str]:
    parts: List[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in imports:
        return None
    return ".".join([imports[expr.id], *reversed(parts)])


def references(tree: ast.Module, package: str, targets: Set[str]) -> bool:
    """Cheap test: does the module import any of `targets` (absolute `module.name`)?"""
    imports = imported_names(tree, package)
    for value in imports.values():
        if value in targets or any(t.startswith(value + ".") for t in targets):
            return True
    return False


_LINE = re.compile(r"\b(?:at )?line (\d+)")


def _located(text: str, display: str) -> str:
    """A chain computed in the caller, with its line numbers made `file:line`."""
    return _LINE.sub(lambda m: f"at {display}:{m.group(1)}", text) if text else ""


ExportKind = Callable[[str], Optional[Tuple[str, str, str]]]  # absolute name -> (tag, dtype, why)


@query
def is_top_level(model, node: ast.AST) -> bool:
    """Other modules can reach only module-level names: the statement holding `node` (a
    decorator belongs to its def) sits in the module body."""
    statement = node
    while not isinstance(statement, ast.stmt):
        parent = model.index.parent(statement)
        if parent is None:
            return False
        statement = parent
    return isinstance(model.index.parent(statement), ast.Module)


@query
def external_calls(model, name: str, node: ast.AST) -> List[ExternalCall]:
    """Calls of the module-level `name` (defined at `node`) from other modules of the run."""
    external = model.facts.external
    if external is None or not is_top_level(model, node):
        return []
    return external.calls.get(name, [])


@query
def transformed_elsewhere(model, d, table: str) -> List[Tuple[str, str]]:
    """(how, where) for each place another module of the run applies a transformation to the
    custom derivative `d`, by its name (a module-level one) or a module-level name bound to it (`g = f`,
    `g = make_f()` of a factory returning it):
    `table` is "forward" (forward mode, VJP315) or "reverse_twice" (reverse mode twice, VJP339)."""
    external = model.facts.external
    if external is None:
        return []
    rows: Dict[str, List[Tuple[str, str]]] = getattr(external, table)
    names = [d.name] if is_top_level(model, d.anchor) else []
    for node in d.bound_at:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id not in names and is_top_level(model, node)):
            names.append(node.targets[0].id)
    return [use for name in names for use in rows.get(name, ())]


# -- rules defined in another module of the run (vjplint.project.rule_defs) -----------------------
RULE_DEF = "ruledef"
_GRAFT = "__vjplint_rules_of_{}__"  # the function holding one module's grafted rules


@dataclass(frozen=True)
class RuleDef:
    """A rule registered here and defined in another module of the run: ("ruledef", its spelling
    at the registration, its name there, that module's display path, the def's line, the
    module's imports (absolute), the source blocks (first line, text) of the def and what it reads;
    an eighth field, True, for the decorated primal of a derivative registered here)."""

    spelling: str
    name: str
    display: str
    line: int
    imports: Tuple[str, ...]
    blocks: Tuple[Tuple[int, str], ...]
    primal: bool = False  # the decorated primal of a custom derivative this module registers rules on


@dataclass(eq=False)
class Graft:
    """The rules of other modules grafted into this module's model: each module's, inside a
    function of its own (`__vjplint_rules_of_1__`) appended after the file's last line, with its
    imports, so their names resolve as there and none is bound in this module's scope. Rows from
    `first_row` on are grafted; `origin` says where each was; `defs` maps a spelling at a
    registration to its grafted def, `anchors` each grafted def to the registration's expression
    that names it (set by the collector)."""

    first_row: int
    origin: Dict[int, Tuple[str, int]]
    defs: Dict[str, ast.AST]
    named: Dict[ast.AST, RuleDef]
    anchors: Dict[ast.AST, ast.expr] = field(default_factory=dict)


def rule_defs(rows: Sequence[tuple]) -> List[RuleDef]:
    out = []
    for row in rows:
        if row and row[0] == RULE_DEF and len(row) in (7, 8):
            _, spelling, name, display, line, imports, blocks = row[:7]
            out.append(RuleDef(spelling, name, display, int(line), tuple(imports),
                               tuple((int(b[0]), b[1]) for b in blocks), len(row) == 8 and bool(row[7])))
    return out


def graft(module: ast.Module, lines: List[str], defs: Sequence[RuleDef]) -> Optional[Tuple[ast.Module, List[str], Graft]]:
    """`module` with the rules `defs` appended (see Graft), its lines, and the graft; None when
    nothing could be grafted (a block that does not parse here is left out with its module)."""
    by_display: Dict[str, List[RuleDef]] = {}
    for d in defs:
        by_display.setdefault(d.display, []).append(d)
    body = list(module.body)
    all_lines = list(lines)
    origin: Dict[int, Tuple[str, int]] = {}
    found: Dict[str, ast.AST] = {}
    named: Dict[ast.AST, RuleDef] = {}
    for number, (display, group) in enumerate(by_display.items(), 1):
        text = [f"def {_GRAFT.format(number)}():"]
        where: List[Optional[int]] = [None]
        for imported in dict.fromkeys(i for d in group for i in d.imports):
            text.append("    " + imported)
            where.append(None)
        blocks = sorted({b for d in group for b in d.blocks})
        for first, block in blocks:
            for k, line in enumerate(block.split("\n")):
                text.append("    " + line if line.strip() else "")
                where.append(first + k)
        try:
            tree = ast.parse("\n".join(text) + "\n")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        offset = len(all_lines)
        ast.increment_lineno(tree, offset)
        wrapper = tree.body[0]
        for row, at in enumerate(where, offset + 1):
            if at is not None:
                origin[row] = (display, at)
        all_lines.extend(text)
        body.append(wrapper)
        inner = {n.name: n for n in getattr(wrapper, "body", ()) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for d in group:
            fn = inner.get(d.name)
            if fn is not None and origin.get(fn.lineno) == (d.display, d.line):
                found[d.spelling] = fn
                named.setdefault(fn, d)
    if not found:
        return None
    made = ast.Module(body=body, type_ignores=list(getattr(module, "type_ignores", [])))
    return made, all_lines, Graft(len(lines) + 1, origin, found, named)


def grafted_text(rows: Sequence[tuple]) -> str:
    """The source of the rules of other modules that `rows` graft here (their imports and blocks):
    what a rule's trigger words are looked for in, beside the file's own text."""
    return "\n".join(text for d in rule_defs(rows) for text in (*d.imports, *(b for _, b in d.blocks)))


@query
def grafted(model, node: ast.AST) -> bool:
    """Whether `node` belongs to a rule of another module grafted here (see Graft)."""
    graft = model.facts.graft
    return graft is not None and getattr(node, "lineno", 0) >= graft.first_row


@query
def relocation(model, node: ast.AST) -> Optional[Tuple[ast.AST, RuleDef]]:
    """(the registration expression to report on, the rule) for a node of a grafted rule (or of
    what it reads there); None for a node of this file, or of a grafted primal (its own module
    reports what is found in it)."""
    graft = model.facts.graft
    row = getattr(node, "lineno", 0)
    if graft is None or row < graft.first_row:
        return None
    origin = graft.origin.get(row)
    for fn, d in graft.named.items():  # a primal of another module: what is found in it is reported there
        first = min([fn.lineno, *(x.lineno for x in getattr(fn, "decorator_list", ()))])  # type: ignore[attr-defined]
        if d.primal and first <= row <= (fn.end_lineno or fn.lineno):  # type: ignore[attr-defined]
            return None
    for fn, d in graft.named.items():
        if fn.lineno <= row <= (fn.end_lineno or fn.lineno) and fn in graft.anchors:  # type: ignore[attr-defined]
            return graft.anchors[fn], d
    if origin is None:
        return None
    for fn, d in graft.named.items():  # a helper a rule reads: the first rule whose row brought it
        if fn in graft.anchors and d.display == origin[0] and any(
                first <= origin[1] < first + block.count("\n") + 1 for first, block in d.blocks):
            return graft.anchors[fn], d
    return None


_CITED_LINE = re.compile(r"\bline (\d+)")


@query(memo=False)
def cite_grafted(model, text: str) -> str:
    """`text` with "line N" of a grafted row written as the file and line it comes from."""
    graft = model.facts.graft
    if graft is None:
        return text

    def where(m: "re.Match[str]") -> str:
        row = int(m.group(1))
        if row < graft.first_row or row not in graft.origin:
            return m.group(0)
        display, line = graft.origin[row]
        return f"{display}:{line}"
    return _CITED_LINE.sub(where, text)


_INDENT = "    "  # what `graft` puts before each non-blank line of a grafted block


def _origin_position(graft: Graft, row: int, column: int) -> Optional[Tuple[str, int, int]]:
    """(display, line, column) in the rules' own file of a grafted position; None for one that
    is not in a grafted block's text (a wrapper's line, the indentation the graft added)."""
    if column == 1:  # a line's start: that line's, or the line after the previous one (an edit's end)
        if row in graft.origin:
            display, line = graft.origin[row]
            return display, line, 1
        if row - 1 in graft.origin:
            display, line = graft.origin[row - 1]
            return display, line + 1, 1
        return None
    if row not in graft.origin or column <= len(_INDENT):
        return None
    display, line = graft.origin[row]
    return display, line, column - len(_INDENT)


@query(memo=False)
def relocated_fix(model, fix: Fix) -> Optional[FixElsewhere]:
    """The fix `fix` (made on the grafted text of a rule defined in another module: see Graft)
    as a `FixElsewhere`: its edits moved to the rules' own file, rows and columns as there, the
    indentation the graft added taken off the lines it inserts. None when the fix is a plan
    (computed when applied, from this file's text), an edit reaches outside the grafted blocks,
    or its edits are in two files."""
    graft = model.facts.graft
    if graft is None or fix.plan is not None or not fix.edits:
        return None
    displays: Set[str] = set()
    moved = []
    for edit in fix.edits:
        if edit.location.row < graft.first_row or edit.end_location.row < graft.first_row:
            return None
        start = _origin_position(graft, edit.location.row, edit.location.column)
        end = _origin_position(graft, edit.end_location.row, edit.end_location.column)
        if start is None or end is None or start[0] != end[0]:
            return None
        displays.add(start[0])
        head, *rest = edit.content.split("\n")
        if edit.location.column == 1:  # inserted at a line's start: its first line is indented as the graft is
            rest = [head, *rest]
            head = ""
        content = "\n".join([head, *(line[len(_INDENT):] if line.startswith(_INDENT) else line for line in rest)])
        if edit.location.column == 1:
            content = content[1:]
        moved.append(Edit(content, Position(start[1], start[2]), Position(end[1], end[2])))
    if len(displays) != 1:
        return None
    return FixElsewhere(displays.pop(), replace(fix, message=cite_grafted(model, fix.message), edits=tuple(moved)))
