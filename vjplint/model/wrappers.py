"""One file's custom-derivative wrappers, found from its `ast`: the per-file half of the project
index (vjplint.project.index resolves them across the modules of a run).

A wrapper is a module-level function, or a class through its `__init__`, that hands its first
parameter to a creator (`jax.custom_vjp`, `jax.custom_jvp`, or what resolves to another wrapper):
directly, through `functools.partial(creator, ...)`, or by decorating an inner function that only
calls that parameter. What the file records is path-independent and JSON-ready (it is cached by
content digest); which callees are creators is decided later, when every module is known.
Names are spelled as `SemanticIndex.qualname` spells them; `SELF` prefixes this module's own
module-level names, `[key]` is a call through a dispatch table (`backend()["custom_vjp"](...)`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

from vjplint.model.jaxapi import PARTIAL
from vjplint.model.semantic import SemanticIndex, walk

if TYPE_CHECKING:  # the rest is imported only to detect: a warm run loads just the types below
    from vjplint.model.file_model import CustomDerivative, FileModel
    from vjplint.model.semantic import FunctionNode, Scope, SemanticIndex

TRIGGERS = (b"custom_vjp", b"custom_jvp")  # a file holding neither defines no wrapper
SELF = "<self>"
INSTANCE = "()"  # `Shim()`: an instance of the class `Shim`, a wrapper through its `__call__`
_REGISTER = {"defvjp": 2, "defjvp": 1}


class InferredKeyword(str):
    """The nondiff keyword of an inferred wrapper, as a `custom-vjp-aliases` value ("" when the
    wrapper drops nondiff arguments), carrying which of the wrapper's positional parameters are
    its rules (`f(fn, fwd, bwd)`) and why it is a wrapper. Its repr is all of it, so that a
    settings fingerprint that contains it changes with any of it."""

    rules: Tuple[int, ...]
    why: str
    exact: bool  # a re-export of JAX's own creator: no wrapper at all

    def __new__(cls, keyword: str, rules: Tuple[int, ...] = (), why: str = "",
                exact: bool = False) -> "InferredKeyword":
        self = super().__new__(cls, keyword)
        self.rules, self.why, self.exact = tuple(rules), why, exact
        return self

    def __reduce__(self):  # type: ignore[override]
        return InferredKeyword, (str(self), self.rules, self.why, self.exact)

    def __repr__(self) -> str:
        return f"InferredKeyword({str(self)!r}, {self.rules!r}, {self.why!r}, {self.exact!r})"

    def __eq__(self, other: object) -> bool:
        """Against another inferred keyword, all of it (two files' `RunFacts` differing only in a
        wrapper's rules or why are not the same facts); against a plain string, the keyword."""
        if isinstance(other, InferredKeyword):
            return (str.__eq__(self, other) and self.rules == other.rules and self.why == other.why
                    and self.exact == other.exact)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__  # equal values hash alike: the keyword's hash


@dataclass(frozen=True)
class Forward:
    """One call in a wrapper's body that passes the wrapper's first parameter on as a function."""

    callee: str  # qualified name as this file spells it (see the module docstring)
    params: Tuple[str, ...]  # the wrapper's positional parameters (`self` left out for a class)
    args: Tuple[str, ...]  # per positional argument of the call: the parameter it passes, or ""
    keywords: Tuple[Tuple[str, str], ...]  # callee keyword -> the parameter passed to it
    rules: Optional[Tuple[int, ...]]  # parameters the body registers as rules; None: fixed rules
    line: int

    def to_json(self) -> list:
        return [self.callee, list(self.params), list(self.args), [list(k) for k in self.keywords],
                None if self.rules is None else list(self.rules), self.line]

    @classmethod
    def from_json(cls, data: list) -> "Forward":
        callee, params, args, keywords, rules, line = data
        return cls(callee, tuple(params), tuple(args), tuple((k, v) for k, v in keywords),
                   None if rules is None else tuple(rules), line)


@dataclass
class FileWrappers:
    """What one module defines and re-exports of custom-derivative wrappers."""

    forwards: Dict[str, List[Forward]] = field(default_factory=dict)  # module-level name -> its forwards
    exports: Dict[str, str] = field(default_factory=dict)  # module-level name -> the name it binds to
    star: List[str] = field(default_factory=list)  # modules imported with `*`
    tables: Dict[str, str] = field(default_factory=dict)  # dispatch key -> what a module dict maps it to

    def to_json(self) -> dict:
        return {"f": {k: [f.to_json() for f in v] for k, v in self.forwards.items()},
                "e": self.exports, "s": self.star, "t": self.tables}

    @classmethod
    def from_json(cls, data: dict) -> "FileWrappers":
        return cls({k: [Forward.from_json(f) for f in v] for k, v in data["f"].items()},
                   dict(data["e"]), list(data["s"]), dict(data["t"]))


# Column-0 lines that start a statement (a clause of a compound statement does not).
_TOP = re.compile(r"^(?!(?:else|elif|except|finally)\b)[^\s#)\]}]", re.M)
_TOP_AFTER_NEWLINE = re.compile(r"\n(?=[^\s#)\]}])(?!(?:else|elif|except|finally)\b)")  # ends where _TOP starts
_TRIPLE = re.compile(r'"""|\'\'\'')
_HEAD = re.compile(r"^(?:async\s+)?(def|class)\s+(\w+)", re.M)
_FIRST_PARAM = re.compile(r"(?:async\s+)?def\s+\w+\s*(?:\[[^\]]*\])?\s*\(\s*\w")
_INIT = re.compile(r"^([ \t]+)def\s+__init__\b", re.M)
_CALL = re.compile(r"^([ \t]+)def\s+__call__\b", re.M)
_TRIGGER_TEXT = ("custom_vjp", "custom_jvp")


def detect_text(text: str) -> FileWrappers:
    """`detect` on the statements that can matter, parsed alone: imports, and module-level
    functions (with a parameter), classes (their `__init__` only), assignments and `if`/`try`
    blocks that name a trigger. Most of a big file (tests, kernels) is never parsed. When a piece
    does not parse on its own (the split is textual), the whole file is parsed instead."""
    pieces = _pieces(text)
    if pieces is None:
        from vjplint.syntax.source import parse

        return detect(parse(text))
    return detect(pieces[0], local=pieces[1])


def _pieces(text: str) -> Optional[Tuple[ast.Module, FrozenSet[str]]]:
    """The module of the pieces kept, and the names of every module-level def and class."""
    import bisect

    quotes = _triple_quotes(text)
    starts = [0] if _TOP.match(text) else []
    starts += [m.end() for m in _TOP_AFTER_NEWLINE.finditer(text)]  # (`column_zero_matches(_TOP, text)`)
    if quotes:
        starts = [at for at in starts if bisect.bisect_left(quotes, at) % 2 == 0]
    starts.append(len(text))
    body: List[ast.stmt] = []
    plain: List[str] = []  # imports and assignments, parsed together (their lines are not recorded)
    numbers: Dict[int, Tuple[str, str]] = {}  # position in `plain` -> (name, chunk) of `NAME = 123`
    parsed_texts: List[str] = []  # the defs and classes parsed
    local: List[str] = []
    line, at = 1, 0
    i = 0
    while i < len(starts) - 1:
        begin = starts[i]
        j = i + 1
        while j < len(starts) - 1 and text[starts[j - 1]] == "@":  # decorators, then what they decorate
            j += 1
        end = starts[j]
        i = j
        if text[begin] not in "@dac":  # not a def or class (this runs once per top-level statement)
            number = _NUMBER.match(text, begin, end)
            if number is not None:  # kept below only if a piece kept names it
                numbers[len(plain)] = (number.group(1), begin, end)
                plain.append("")
                continue
        chunk = text[begin:end]
        head = _HEAD.search(chunk) if chunk.startswith(("@", "def ", "async ", "class ")) else None
        if head is not None:
            line += text.count("\n", at, begin)
            at = begin
            local.append(head.group(2))
            # From the `def` line on: a function whose decorators alone name a trigger
            # (`@jax.custom_vjp`, `@partial(jax.custom_vjp, ...)`) is a derivative, not a wrapper.
            if not any(t in chunk[head.start():] for t in _TRIGGER_TEXT):
                continue
            if head.group(1) == "def":
                if not _FIRST_PARAM.match(chunk, head.start()):
                    continue
                parsed = _parse_piece(chunk, line)
            else:
                init, call = _method_head(_INIT, "__init__", chunk), _method_head(_CALL, "__call__", chunk)
                forwarding = call is not None and any(t in _block(chunk, call) for t in _TRIGGER_TEXT)
                if not forwarding and (init is None or not any(t in chunk[init.start():] for t in _TRIGGER_TEXT)):
                    continue
                # `class C:` then the `__init__` block (and a `__call__` that may forward to a
                # creator): the header (generics, bases) is not needed, and blank lines keep the
                # file's line numbers.
                parsed = _parse_methods(head.group(2), chunk, line, [m for m in (init, call) if m is not None])
        else:
            if _binds_a_name_that_matters(chunk):
                number = _NUMBER.match(chunk)
                if number is not None:  # kept below only if a piece kept names it
                    numbers[len(plain)] = (number.group(1), begin, end)
                    plain.append("")
                else:
                    plain.append(chunk if chunk.endswith("\n") else chunk + "\n")
            continue
        if parsed is not None:
            body.extend(parsed.body)
            parsed_texts.append(chunk)
        # else: a def or class of newer syntax than this Python's, which `parse` would blank too
    if numbers:
        # `NAME = 123` exports nothing; it only binds NAME, which matters to a piece that names it
        # (a file of 600k such lines parsed them all: 17 s and 2 GB for 10 MB).
        words = set(_WORDS.findall("".join(plain))) | set(_WORDS.findall("".join(parsed_texts)))
        for at, (name, begin, end) in numbers.items():
            if name in words:
                chunk = text[begin:end]
                plain[at] = chunk if chunk.endswith("\n") else chunk + "\n"
    rest = _parse_piece("".join(plain), 1)
    if rest is None:
        return None  # the textual split went wrong somewhere: parse the whole file
    return ast.Module(body=[*rest.body, *body], type_ignores=[]), frozenset(local)


def _method_head(pattern: "re.Pattern[str]", name: str, chunk: str) -> Optional["re.Match[str]"]:
    """`pattern.search(chunk)` for `_INIT` or `_CALL`, started at the line of the `def` before
    the first `name` (a match's `def` precedes its name with only blanks between): a pattern
    starting with `^` is otherwise tried at every character of a class of thousands of lines."""
    at = chunk.find(name)
    if at < 0:
        return None
    before = chunk.rfind("def", 0, at)
    return pattern.search(chunk, chunk.rfind("\n", 0, before if before >= 0 else at) + 1)


def _triple_quotes(text: str) -> List[int]:
    """Where `_TRIPLE.finditer(text)` matches, found by literal searches (the alternation is
    tried at every character: 15 ms on a 2 MB notebook export, a quarter of that this way)."""
    out: List[int] = []
    double, single = text.find('"""'), text.find("'''")
    while double >= 0 or single >= 0:
        at = double if single < 0 or 0 <= double < single else single
        out.append(at)
        end = at + 3
        if 0 <= double < end:
            double = text.find('"""', end)
        if 0 <= single < end:
            single = text.find("'''", end)
    return out


# `differentiable = plain_vjp`, `custom_vjp: Callable[..., Any] = shim`, `custom_vjp = Shim()`: another name for one
_RENAME = re.compile(r"\w+\s*(?::[^=\n]*)?=\s*[\w.]+\s*(?:\(\s*\))?\s*(?:#.*)?$")
_ASSIGN = re.compile(r"\w+\s*(?::[^=\n]*)?=[^=]")
# `NAME = 123` (a number, nothing else on its line): what `_RENAME` matches that can never export.
_NUMBER = re.compile(r"(\w+)[ \t]*=[ \t]*[0-9][0-9_]*(?:\.[0-9_]*)?[ \t]*(?:#[^\n]*)?\n?$")
_WORDS = re.compile(r"\w+")


def _binds_a_name_that_matters(chunk: str) -> bool:
    """Imports (re-exports), renames, and assignments or `if`/`try` blocks that name a trigger
    (`custom_vjp = jax.custom_vjp`, a dispatch table, `try: from jax import custom_vjp`)."""
    if chunk.startswith(("import ", "from ")) or _RENAME.match(chunk):
        return True
    if chunk.startswith(("if ", "try:")):
        return "import" in chunk or any(t in chunk for t in _TRIGGER_TEXT)
    return bool(_ASSIGN.match(chunk)) and any(t in chunk for t in _TRIGGER_TEXT)


def _parse_methods(name: str, chunk: str, line: int, methods: List["re.Match[str]"]) -> Optional[ast.Module]:
    """`class name:` with the blocks of `methods` only, each at its line in the file."""
    methods = sorted(methods, key=lambda m: m.start())
    rows = [line + chunk.count("\n", 0, m.start()) for m in methods]
    text, row = f"class {name}:\n", rows[0]
    for method, start in zip(methods, rows):
        block = _block(chunk, method)
        text += "\n" * max(0, start - row) + block
        row = start + block.count("\n")
    return _parse_piece(text, rows[0] - 1)


def _block(chunk: str, init: "re.Match[str]") -> str:
    """`def __init__` through the last line indented deeper than it (closing brackets included)."""
    indent = len(init.group(1))
    lines = chunk[init.start():].split("\n")
    kept = [lines[0]]
    for text in lines[1:]:
        stripped = text.lstrip()
        if stripped and not stripped.startswith(("#", ")", "]", "}")) and len(text) - len(stripped) <= indent:
            break
        kept.append(text)
    return "\n".join(kept) + "\n"


def _parse_piece(chunk: str, line: int) -> Optional[ast.Module]:
    try:  # blank lines first, so that positions are the file's (cheaper than ast.increment_lineno)
        return ast.parse("\n" * (line - 1) + chunk)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def detect(module: ast.Module, index: Optional[SemanticIndex] = None, local: FrozenSet[str] = frozenset()) -> FileWrappers:
    """`local`: module-level names defined by statements left out of `module` (see `detect_text`)."""
    built: List[SemanticIndex] = [index] if index is not None else []

    def indexed() -> SemanticIndex:  # built when a statement needs names resolved (most pieces are imports)
        if not built:
            built.append(SemanticIndex(module))
        return built[0]

    found = FileWrappers()
    for stmt in _module_statements(module.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            index = indexed()
            forwards = _forwards(stmt, index, skip_self=False, local=local)
            if forwards:
                found.forwards[stmt.name] = forwards
        elif isinstance(stmt, ast.ClassDef):
            index = indexed()
            init = _method(stmt, "__init__")
            forwards = _forwards(init, index, skip_self=True, local=local) if init is not None else []
            if forwards:
                found.forwards[stmt.name] = forwards
            call = _method(stmt, "__call__")  # its instances are the wrappers: `shim = Shim()`, `@Shim(...)`
            forwards = _forwards(call, index, skip_self=True, local=local, attrs=_stored_params(init)) \
                if call is not None else []
            if forwards:
                found.forwards[stmt.name + INSTANCE] = forwards
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _record_import(stmt, found)
        elif _assigned_name(stmt) is not None and not isinstance(stmt.value, ast.Constant):  # a constant names no callee
            index = indexed()
            name = _assigned_name(stmt)
            if isinstance(stmt.value, ast.Dict):
                for key, value in zip(stmt.value.keys, stmt.value.values):
                    target = _callee_name(value, index, index.module_scope, local) if value is not None else None
                    if isinstance(key, ast.Constant) and isinstance(key.value, str) and target:
                        found.tables.setdefault(key.value, target)
            else:
                value, made = stmt.value, ""
                if isinstance(value, ast.Call) and not value.args and not value.keywords:
                    value, made = value.func, INSTANCE  # `custom_vjp = Shim()`: an instance of a class
                target = _callee_name(value, index, index.module_scope, local)
                if target:
                    found.exports[name] = target + made
    return found


def _assigned_name(stmt: ast.stmt) -> Optional[str]:
    """NAME of `NAME = value` or `NAME: T = value` (tjax annotates its re-exports)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return None


def _method(cls: ast.ClassDef, name: str) -> Optional[ast.FunctionDef]:
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == name), None)


def _stored_params(init: Optional[ast.FunctionDef]) -> Dict[str, str]:
    """`self.attr = param` in `__init__`: attr -> param, so that `__call__`'s
    `jax.custom_vjp(fn, nondiff_argnums=self.attr)` reads as the constructor's keyword `param`."""
    if init is None:
        return {}
    positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)]
    me = positional[0] if init.args.posonlyargs or init.args.args else None
    out: Dict[str, str] = {}
    for node in walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name):
            t = node.targets[0]
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me \
                    and node.value.id in positional[1:]:
                out[t.attr] = node.value.id
    return out


def _module_statements(body: List[ast.stmt]) -> List[ast.stmt]:
    """Module-level statements, those under `if`/`try` included (`try: from x import y`)."""
    out: List[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out.extend(_module_statements(stmt.body + stmt.orelse))
        elif isinstance(stmt, ast.Try):
            out.extend(_module_statements(stmt.body + stmt.orelse + stmt.finalbody
                                          + [s for h in stmt.handlers for s in h.body]))
    return out


def _record_import(stmt: ast.stmt, found: FileWrappers) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                found.exports[alias.asname] = alias.name
        return
    assert isinstance(stmt, ast.ImportFrom)
    base = "." * (stmt.level or 0) + (stmt.module or "")
    for alias in stmt.names:
        if alias.name == "*":
            found.star.append(base)
        else:
            found.exports[alias.asname or alias.name] = f"{base}.{alias.name}" if stmt.module else base + alias.name


def _callee_name(expr: ast.expr, index: SemanticIndex, scope: Scope, local: FrozenSet[str]) -> Optional[str]:
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str):
        return f"[{expr.slice.value}]"
    if isinstance(expr, ast.Name):
        for binding in index.lookup(expr.id, scope):
            if binding.kind in ("def", "class") and index.scope_of(binding.node) is index.module_scope:
                return f"{SELF}.{expr.id}"
    if not isinstance(expr, (ast.Name, ast.Attribute)):
        return None
    q = index.qualname(expr, scope)
    if q is not None and q.startswith("builtins."):
        return f"{SELF}.{expr.id}" if isinstance(expr, ast.Name) and expr.id in local else None
    return q


def _forwards(fn: FunctionNode, index: SemanticIndex, skip_self: bool, local: FrozenSet[str],
              attrs: Optional[Dict[str, str]] = None) -> List[Forward]:
    """`attrs`: for a `__call__`, what `__init__` stored on self (see `_stored_params`)."""
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    params = tuple(positional[1:] if skip_self else positional)
    if not params:
        return []
    every = set(params) | {a.arg for a in fn.args.kwonlyargs}
    me = positional[0] if skip_self and positional else None
    inner_forwarders = {}  # inner defs that only call the first parameter: `def _f(*a, **k): return f(*a, **k)`
    calls: List[Tuple[ast.expr, List[ast.expr], List[ast.keyword], int]] = []
    rules: Optional[Tuple[int, ...]] = ()

    for node in walk(fn):  # `ast.walk`'s order, without the expression contexts it would also yield
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn and any(
                isinstance(d, ast.Attribute) and d.attr in _REGISTER for d in node.decorator_list):
            called = _called_name(node)  # `@wrapped.defjvp def rule(p, t): return jvp_fn(p, t)`
            if rules is not None:
                rules = (*rules, params.index(called)) if called in params else None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn and \
                _called_name(node) == params[0]:
            inner_forwarders[node.name] = node
            for decorator in node.decorator_list:  # `@partial(jax.custom_vjp, nondiff_argnums=n)` on it
                call = decorator if isinstance(decorator, ast.Call) else None
                calls.append((decorator, [ast.Name(id=params[0])], [], decorator.lineno) if call is None
                             else (call.func, [*call.args, ast.Name(id=params[0])], call.keywords, decorator.lineno))
        elif isinstance(node, ast.Call):
            method = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if method in _REGISTER:
                names = [a.id if isinstance(a, ast.Name) else "" for a in node.args]
                if rules is not None:
                    rules = tuple(params.index(n) for n in names) if all(n in params for n in names) else None
            else:
                calls.append((node.func, list(node.args), node.keywords, node.lineno))
    out = []
    for func, args, keywords, line in calls:
        scope = index.scope_of(func)
        if isinstance(func, ast.Call):  # `partial(creator, kw=...)(f)`
            if not (func.args and index.qualname(func.func, scope) in PARTIAL):
                continue
            func, keywords = func.args[0], [*func.keywords, *keywords]
        elif args and index.qualname(func, scope) in PARTIAL:  # `partial(creator, f, kw=...)`
            func, args = args[0], args[1:]
        callee = _callee_name(func, index, scope, local)
        if callee is None or not args:
            continue
        passed = tuple(_param_of(a, every, inner_forwarders, params[0]) for a in args)
        if passed[0] != params[0]:
            continue
        kw = tuple((k.arg, k.value.id) for k in keywords
                   if k.arg and isinstance(k.value, ast.Name) and k.value.id in every)
        if attrs:
            kw += tuple((k.arg, attrs[k.value.attr]) for k in keywords
                        if k.arg and isinstance(k.value, ast.Attribute) and isinstance(k.value.value, ast.Name)
                        and k.value.value.id == me and k.value.attr in attrs)
        out.append(Forward(callee, params, passed, kw, rules, line))
    return out


def _param_of(arg: ast.expr, params: set, forwarders: Dict[str, ast.AST], first: str) -> str:
    if isinstance(arg, ast.Name):
        if arg.id in forwarders:
            return first
        return arg.id if arg.id in params else ""
    return ""


def _called_name(fn: ast.AST) -> Optional[str]:
    """NAME when `fn`'s body is (a docstring and) `return NAME(...)`."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # type: ignore[attr-defined]
    if (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)
            and isinstance(body[0].value.func, ast.Name)):
        return body[0].value.func.id
    return None


def with_wrapper_note(model: "FileModel", node: ast.AST, message: str) -> str:
    """`message`, naming the inferred wrapper when `node` lies in the definition, a rule or a call
    of a custom derivative made through one (so the user sees why it is one)."""
    row = getattr(node, "lineno", None)
    if row is None:
        return message
    for d in model.made_via_wrapper():
        via = getattr(d, "via", "")
        if via and any(first <= row <= last for first, last in _spans(d)):
            label = getattr(d, "label", f"custom_{d.kind}")
            return f"{message} ({label} `{d.name}` {via})"
    return message


def _spans(d: "CustomDerivative") -> List[Tuple[int, int]]:
    nodes: List[ast.AST] = [d.anchor]
    if d.primal is not None:
        nodes.append(d.primal)
    for registration in d.registrations:
        nodes.append(registration.node)
        nodes.extend(rule.node for rule in registration.rules if rule.node is not None)
    nodes.extend(site.call for site in d.call_sites)
    return [(n.lineno, getattr(n, "end_lineno", None) or n.lineno) for n in nodes]  # type: ignore[attr-defined]
