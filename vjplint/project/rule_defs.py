"""fwd/bwd/jvp rules registered in one module and defined in another module of the run.

`f.defvjp(f_fwd, f_bwd)` after `from ._rules import f_fwd, f_bwd` (or `R.f_fwd` after
`from . import _rules as R`): the rules that read a rule's body (what it returns, its arity, its
branches, its callbacks...) need the body, which lives in `_rules.py`. The registering module gets
one row per rule it imports, ("ruledef", the spelling at the registration, the name in the
defining module, that module's display path, its imports as source lines, the source blocks
(first line, text) of the def and the top-level functions and constants it reads there). The
collector grafts those blocks into the registering module's model (vjplint.facts.crossmodule
`graft`), where every rule reads them as a local def; what the rules report inside them is
reported on the registration, naming the def's file and line (vjplint.lint.engine).

Per file, kept with the loop helpers' info (vjplint.project.loops.file_info): "g", the imported
names that head an argument of a registration on a receiver the module does not import (a cheap
test from the bytes: most registering modules define their rules, and JAX's own `ad.defjvp` is
no custom derivative's). Only those modules are parsed, and only the defining modules they name.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from vjplint.facts.crossmodule import RULE_DEF, absolute, imported_names
from vjplint.project.text import parse

Info = Dict[str, object]
METHODS = frozenset({"defvjp", "defjvp", "defjvps"})
MAX_BLOCKS = 12  # the def and the top-level helpers it reads, per rule
MAX_HOPS = 3  # re-exports followed (`pkg/__init__.py`: `from .rules import f_fwd`)

_REGISTRATION = re.compile(rb"\.[ \t]*def(?:vjp|jvp|jvps)[ \t]*\(")
_WORD = re.compile(rb"[A-Za-z_]\w*")
_KEYWORDS = frozenset({b"None", b"partial", b"functools", b"lambda", b"fwd", b"bwd", b"jvp", b"symbolic_zeros",
                       b"optimize_remat", b"True", b"False"})


def rule_info(data: bytes, registers: Optional[bool] = None) -> Info:
    """{"g": [...], "p": [...]}: "g", the imported names that head an argument of a registration
    (`f.defvjp(a, R.b)`, `partial(a, 2)`: `a`, `R`) on a receiver the module does not import (its
    own custom derivative, not JAX's internal `ad.defjvp`): the candidates for rules defined in
    another module; "p", the imported names a registration is made on (`from ops import f;
    f.defvjp(f_fwd, f_bwd)`): the candidates for a primal defined in another module (JAX's
    `ad.defjvp` is one too, and `rule_rows` finds no custom derivative of the run there). From
    the bytes, without parsing; most modules have neither."""
    if registers is None:
        registers = b"defvjp" in data or b"defjvp" in data
    if not registers or b"import" not in data:
        return {}
    imported: Optional[Set[bytes]] = None
    defined: Optional[Set[bytes]] = None  # the module's `def` names, once: JAX's lax.py registers hundreds of rules
    found: Set[bytes] = set()
    receivers: Set[bytes] = set()  # imported names registered on: primals of another module (rule_rows checks)
    for m in _registrations(data):
        end = m.start()
        start = end
        while start > 0 and (data[start - 1:start].isalnum() or data[start - 1:start] == b"_"):
            start -= 1
        if start == end or data[start - 1:start] == b".":  # `lax.ad.defjvp`
            continue
        if imported is None:
            imported = _imported_names(data)
        if data[start:end] in imported:  # `ad.defjvp`: no custom derivative of this module, or
            first = _FIRST.match(data[m.end():_close(data, m.end())] + b")")
            if first is not None and defined is None:
                defined = _defined_names(data)
            if first is not None and first.group(1) in defined:  # `from ops import f; f.defvjp(f_fwd, ...)`
                receivers.add(data[start:end])  # with a rule of its own: one of another module
            continue
        found.update(_argument_heads(data[m.end():_close(data, m.end())]))
    for name in _decorator_receivers(data):  # `@f.defjvp` over a def: no call to read
        if imported is None:
            imported = _imported_names(data)
        if name in imported:
            receivers.add(name)
    found = (found & imported if imported is not None else set()) - _KEYWORDS
    out: Info = {"g": sorted(h.decode() for h in found)} if found else {}
    if receivers:
        out["p"] = sorted(h.decode() for h in receivers)
    return out


_FIRST = re.compile(rb"\s*(?:fwd\s*=\s*|jvp\s*=\s*)?([A-Za-z_]\w*)\s*[,)]")


_DEF_AT = re.compile(rb"def[ \t]+(\w+)[ \t]*\(")
_DECORATOR_LINE = re.compile(rb"[ \t]*@[ \t]*([A-Za-z_]\w*)[ \t]*\.[ \t]*$")


def _defined_names(data: bytes) -> Set[bytes]:
    """The names of the module's `def name(` lines (a registration's first argument so defined: a
    rule written beside a registration on another module's primal; JAX's `ad.defjvp(sin_p, ...)`
    passes a primitive). Searched for as bytes, each `def` checked in place."""
    names: Set[bytes] = set()
    at = data.find(b"def")
    while at >= 0:
        m = _DEF_AT.match(data, at)
        if m is not None and (at == 0 or data[at - 1:at] in (b" ", b"\t", b"\n")):
            names.add(m.group(1))
        at = data.find(b"def", at + 3)
    return names


def _decorator_receivers(data: bytes) -> Set[bytes]:
    """`f` of each `@f.defjvp` / `@f.defvjp` line (read back from where the method's name occurs)."""
    found: Set[bytes] = set()
    if b"@" not in data:
        return found
    for word in (b"defvjp", b"defjvp"):
        at = data.find(word)
        while at >= 0:
            after = data[at + 6:at + 7]
            if not (after.isalnum() or after == b"_" or after == b"s"):
                start = data.rfind(b"\n", 0, at) + 1
                m = _DECORATOR_LINE.match(data[start:at])
                if m is not None:
                    found.add(m.group(1))
            at = data.find(word, at + 6)
    return found


def _registrations(data: bytes) -> List["re.Match[bytes]"]:
    """What `_REGISTRATION.finditer(data)` finds, tried only where `defvjp`/`defjvp` occurs (a
    pattern that starts with `\\.` is tried at every dot of the module)."""
    starts: Set[int] = set()
    for word in (b"defvjp", b"defjvp"):
        at = data.find(word)
        while at >= 0:
            dot = at - 1
            while dot >= 0 and data[dot:dot + 1] in (b" ", b"\t"):
                dot -= 1
            if dot >= 0 and data[dot:dot + 1] == b".":
                starts.add(dot)
            at = data.find(word, at + 6)
    return [m for m in (_REGISTRATION.match(data, i) for i in sorted(starts)) if m is not None]


_ARGUMENT = re.compile(rb"\s*(?:\w+\s*=\s*)?(?:(?:functools\s*\.\s*)?partial\s*\(\s*)?([A-Za-z_]\w*)(?:\s*\.\s*\w+)*\s*[,)]?")


def _argument_heads(args: bytes) -> Set[bytes]:
    """The heads of the call's arguments that are a dotted name or `partial(name, ...)` (`R` of
    `R.f_fwd`), read at the call's own level: a lambda's or a nested call's words are not."""
    out: Set[bytes] = set()
    depth = 0
    start = 0
    for i in range(len(args) + 1):
        c = args[i:i + 1]
        if c in (b"(", b"[", b"{"):
            depth += 1
        elif c in (b")", b"]", b"}"):
            depth -= 1
        elif c == b"," and depth == 0 or i == len(args):
            piece = args[start:i] + b","
            m = _ARGUMENT.match(piece)
            if m is not None and (m.end() == len(piece) or piece[m.end():].strip(b" \t\r\n,") == b""
                                  or b"partial" in piece[:m.start(1)]):
                out.add(m.group(1))
            start = i + 1
    return out


_FROM_IMPORT = re.compile(rb"[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)")
_PLAIN_IMPORT = re.compile(rb"[ \t]*import[ \t]+([^\n]*)")
_AS = re.compile(rb"(\w+)(?:[ \t]+as[ \t]+(\w+))?")


def _imported_names(data: bytes) -> Set[bytes]:
    """The names the module's import statements bind (`from m import (a, b as c)`: `a`, `c`;
    `import p.q as r`: `r`; `import p.q`: `p`), read from the lines that start with one."""
    names: Set[bytes] = set()
    line = -1
    at = data.find(b"import")
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        if start != line:
            line = start
            m = _FROM_IMPORT.match(data, start)
            if m is not None:
                for a in _AS.finditer(m.group(1)):
                    names.add(a.group(2) or a.group(1))
            else:
                m = _PLAIN_IMPORT.match(data, start)
                if m is not None:
                    for part in m.group(1).split(b","):
                        a = re.match(rb"[ \t]*([\w.]+)(?:[ \t]+as[ \t]+(\w+))?", part)
                        if a is not None:
                            names.add(a.group(2) or a.group(1).split(b".")[0])
        at = data.find(b"import", at + 6)
    return names


def _close(data: bytes, start: int) -> int:
    """Where the call opened before `start` closes (its parenthesis), or 400 bytes on."""
    depth = 1
    end = min(len(data), start + 400)
    for i in range(start, end):
        c = data[i:i + 1]
        if c in (b"(", b"[", b"{"):
            depth += 1
        elif c in (b")", b"]", b"}"):
            depth -= 1
            if depth == 0:
                return i
    return end


def _spelling(expr: ast.expr) -> Optional[str]:
    parts: List[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return ".".join([expr.id, *reversed(parts)])


def _rule_exprs(call: ast.Call) -> List[ast.expr]:
    out = []
    for arg in [*call.args, *(k.value for k in call.keywords if k.arg in ("fwd", "bwd", "jvp"))]:
        while isinstance(arg, ast.Call) and arg.args:  # `partial(f_fwd, 2)`
            arg = arg.args[0]
        if isinstance(arg, (ast.Name, ast.Attribute)):
            out.append(arg)
    return out


def registered_imports(tree: ast.Module, package: str, words: Set[str]) -> List[Tuple[str, str]]:
    """(spelling, absolute name) of each registration argument bound by a module-level import."""
    imports = imported_names(tree, package)
    local = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: Dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in METHODS):
            continue
        for expr in _rule_exprs(node):
            spelled = _spelling(expr)
            if spelled is None:
                continue
            head, _, rest = spelled.partition(".")
            if head not in words:
                continue
            if head in local or head not in imports:
                continue
            found[spelled] = f"{imports[head]}.{rest}" if rest else imports[head]
    return sorted(found.items())


def _definition(tree: ast.Module, name: str) -> Optional[ast.stmt]:
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def _reexport(tree: ast.Module, package: str, name: str) -> Optional[str]:
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = absolute("." * node.level + (node.module or ""), package)
            for alias in node.names:
                if base and (alias.asname or alias.name) == name:
                    return f"{base}.{alias.name}"
    return None


def _imports_text(tree: ast.Module, package: str) -> Tuple[str, ...]:
    """The module's top-level imports, made absolute (the graft sits in another package)."""
    out: List[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.extend(f"import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute("." * node.level + (node.module or ""), package)
            if base and node.module != "__future__":
                out.extend(f"from {base} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                           for a in node.names if a.name != "*")
    return tuple(out)


def _blocks(tree: ast.Module, lines: List[str], fn: ast.stmt, decorated: bool = False) -> Tuple[Tuple[int, str], ...]:
    """(first line, text) of `fn` (without its decorators, unless `decorated`) and the top-level
    functions and constants it reads, transitively (at most MAX_BLOCKS)."""
    top: Dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            top[node.targets[0].id] = node
    chosen: List[ast.stmt] = []
    todo = [fn]
    while todo and len(chosen) < MAX_BLOCKS:
        node = todo.pop(0)
        if node in chosen:
            continue
        chosen.append(node)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in top and top[n.id] not in chosen:
                todo.append(top[n.id])
    chosen.sort(key=lambda n: n.lineno)

    def first(n: ast.stmt) -> int:
        if n is fn and decorated:
            return min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", ()))])
        return n.lineno
    return tuple((first(n), "\n".join(lines[first(n) - 1:n.end_lineno or n.lineno])) for n in chosen)


def rule_rows(files: Sequence[Tuple[str, str, str]], infos: Dict[str, Info],
              read: Callable[[str], Optional[bytes]]) -> Dict[str, List[tuple]]:
    """module -> its "ruledef" rows. `files` holds (module, package, display); `infos` maps a
    display to its file info ("g": see rule_info)."""
    registering = [f for f in files if infos.get(f[2], {}).get("g") or infos.get(f[2], {}).get("p")]
    if not registering:
        return {}
    # a module's name -> every file of the run that has it (two `clipops` packages: the project
    # index names the second `clipops.rules#2`); the importer's own tree decides between them
    by_module: Dict[str, List[Tuple[str, str]]] = {}
    for module, package, display in files:
        by_module.setdefault(module.split("#", 1)[0], []).append((package, display))
    parsed: Dict[str, object] = {}

    def tree_of(display: str):
        if display not in parsed:
            data = read(display)
            parsed[display] = parse(data) if data is not None else None
        return parsed[display]

    out: Dict[str, List[tuple]] = {}
    for module, package, display in registering:
        found = tree_of(display)
        if found is None:
            continue
        for spelled, target in registered_imports(found[0], package, set(infos[display].get("g", ()))):  # type: ignore[arg-type]
            row = _row(spelled, target, by_module, tree_of, display)
            if row is not None:
                out.setdefault(module, []).append(row)
        for spelled, target in registered_primals(found[0], package, set(infos[display].get("p", ()))):  # type: ignore[arg-type]
            row = _row(spelled, target, by_module, tree_of, display, primal=True)
            if row is not None:
                out.setdefault(module, []).append(row)
    return out


def registered_primals(tree: ast.Module, package: str, words: Set[str]) -> List[Tuple[str, str]]:
    """(spelling, absolute name) of each module-level import a registration is made on
    (`from ops import f` ... `f.defvjp(f_fwd, f_bwd)`), where the module binds the name only so."""
    imports = imported_names(tree, package)
    local = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    local |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    found: Dict[str, str] = {}
    for node in ast.walk(tree):
        heads = [node.func] if isinstance(node, ast.Call) else list(node.decorator_list) \
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
        for head in heads:  # `f.defvjp(...)`, `@f.defjvp`
            if isinstance(head, ast.Attribute) and head.attr in METHODS and isinstance(head.value, ast.Name):
                name = head.value.id
                if name in words and name in imports and name not in local:
                    found[name] = imports[name]
    return sorted(found.items())


def _is_custom_primal(fn: ast.stmt) -> bool:
    """A def decorated with `custom_vjp`/`custom_jvp` (bare, called, or through `partial`)."""
    return isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(n, (ast.Name, ast.Attribute)) and (n.id if isinstance(n, ast.Name) else n.attr)
        in ("custom_vjp", "custom_jvp") for d in fn.decorator_list for n in ast.walk(d))


def _row(spelled: str, target: str, by_module: Dict[str, List[Tuple[str, str]]], tree_of, importer: str,
         primal: bool = False) -> Optional[tuple]:
    """The "ruledef" row of the def `target` names (a rule; with `primal`, a custom derivative's
    decorated primal, its decorators grafted with it), following re-exports."""
    for _ in range(MAX_HOPS):
        owner, _, name = target.rpartition(".")
        chosen = _nearest(by_module.get(owner, []), importer)
        if chosen is None:
            return None
        package, display = chosen
        found = tree_of(display)
        if found is None:
            return None
        fn = _definition(found[0], name)
        if fn is not None:
            if primal and not _is_custom_primal(fn):
                return None
            row = (RULE_DEF, spelled, name, display, fn.lineno, _imports_text(found[0], package),
                   _blocks(found[0], found[1], fn, decorated=primal))
            return (*row, True) if primal else row
        nxt = _reexport(found[0], package, name)
        if nxt is None:
            return None
        target = nxt
    return None


def _nearest(candidates: List[Tuple[str, str]], importer: str) -> Optional[Tuple[str, str]]:
    """The file of a module's name that `importer` (a display path) reaches: the one sharing the
    most leading directories with it; None for the importer itself, or when two tie (a rule
    read from the wrong copy of a package would be judged against the wrong registration)."""
    if not candidates:
        return None
    home = importer.replace("\\", "/").split("/")[:-1]

    def shared(display: str) -> int:
        parts = display.replace("\\", "/").split("/")[:-1]
        n = 0
        while n < min(len(parts), len(home)) and parts[n] == home[n]:
            n += 1
        return n
    ranked = sorted(((shared(d), (p, d)) for p, d in candidates), key=lambda x: -x[0])
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        return None
    best = ranked[0][1]
    return None if best[1] == importer else best


def with_rule_rows(rows: Dict[str, List[tuple]], files: Sequence[Tuple[str, str, str]], infos: Dict[str, Info],
                   read: Callable[[str], Optional[bytes]]) -> Dict[str, List[tuple]]:
    """`rows` (module -> rows) with the run's "ruledef" rows added after each module's own."""
    for module, more in rule_rows(files, infos, read).items():
        rows.setdefault(module, []).extend(more)
    return rows
