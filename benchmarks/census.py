"""Census of custom-derivative definitions: a grep-based count versus what vjplint recognises.

Usage: python benchmarks/census.py [--json] [--markdown] [--name NAME ...] TREE [TREE ...]

The census blanks comments and string literals (tokenize), then finds every use of a creator
name (`custom_vjp`, `custom_jvp`, `custom_gradient`, `filter_custom_vjp`, `filter_custom_jvp`,
tjax's `custom_vjp_method`/`custom_jvp_method`, plus `--name`s), under any dotted prefix
(`jax.`, `nnx.`, `eqx.`, `fastmath.`, ...), in one of three forms:

- decorator  `@jax.custom_vjp`, `@nnx.custom_vjp(nondiff_argnums=(0,))`
- partial    `partial(jax.custom_vjp, ...)` / `functools.partial(custom_jvp, ...)`
- call       `jax.custom_vjp(f, ...)`, `nn.custom_vjp(fn, fwd, bwd)`, `jax.custom_jvp(self.fn)`

Each hit is also classified from the file's `ast` (when it parses): `definition`, `alias` (a
`partial(custom_vjp, ...)` that is stored, not applied) or `wrapper-internal` (a call form
applied to what a wrapper received: a parameter of the enclosing function, a call on one or on
`param.attr`, a local function that calls one, or any hit inside a function named like a
creator; decorated defs are always definitions), so a later session
can state the ratio over definitions alone. The main ratio counts every hit.

Registrations are counted too (`f.defvjp(`, `@f.defjvp`, `f.def_fwd(`..., not JAX's primitive
`ad.defjvp` nor HIPS autograd's), with those whose receiver no recognised definition owns
(`orphans`: a definition the name census cannot see; `wrapper-internal` when made on `self` or in
an API's own methods). Notebooks (`.ipynb`) count as their code cells in order (vjplint.syntax.notebook).

Bare references (imports, `isinstance(f, jax.custom_vjp)`, annotations, `custom_vjp.defvjp`),
the API's own `def custom_vjp(`/`class custom_vjp`, and TensorFlow's `tf.custom_gradient` are
not definitions. vjplint's side: `vjplint.facts.collect.collect` with the default Recognizer; a census
hit is recognised when a collected definition's creation expression spans its line.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tokenize
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

NAMES: Tuple[str, ...] = ("custom_vjp", "custom_jvp", "custom_gradient", "filter_custom_vjp",
                          "filter_custom_jvp", "custom_vjp_method", "custom_jvp_method")
FOREIGN_PREFIXES: Tuple[str, ...] = ("tf.", "tensorflow.")  # tf.custom_gradient is not JAX
DOTTED_TAIL = re.compile(r"(?:[A-Za-z_]\w*\s*\.\s*)+$")
PARTIAL_TAIL = re.compile(r"\bpartial\s*\(\s*$")
DEFINING_TAIL = re.compile(r"\b(?:def|class)\s+$")


@dataclass
class Hit:
    path: str
    line: int
    form: str  # "decorator", "partial" or "call"
    spelling: str  # e.g. "@nnx.custom_vjp", "partial(jax.custom_vjp", "jax.custom_jvp("
    recognised: bool = False
    role: str = "definition"  # or "alias", "wrapper-internal" (see the module docstring)


@dataclass
class TreeReport:
    tree: str
    files: int
    census: int
    recognised: int
    beyond_census: int  # definitions vjplint collected where the census saw none
    parse_failures: List[str]
    unrecognised: List[Hit]
    definitions: int = 0  # hits whose role is "definition"
    definitions_recognised: int = 0
    registrations: int = 0  # `f.defvjp(...)`, `@f.defjvp`, `f.def_fwd`... in code
    orphans: List[Hit] = field(default_factory=list)  # registrations of no recognised definition

    @property
    def ratio(self) -> float:
        return self.recognised / self.census if self.census else 1.0

    @property
    def definitions_ratio(self) -> float:
        return self.definitions_recognised / self.definitions if self.definitions else 1.0


def blank_code(text: str) -> str:
    """The text with comments and string literals replaced by spaces (newlines kept)."""
    lines = text.splitlines(keepends=True)
    out = [list(line) for line in lines]
    blank_kinds = {tokenize.COMMENT, tokenize.STRING}
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END"):  # Python 3.12+
        if hasattr(tokenize, name):
            blank_kinds.add(getattr(tokenize, name))
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type not in blank_kinds:
                continue
            (r1, c1), (r2, c2) = tok.start, tok.end
            for row in range(r1, r2 + 1):
                if row - 1 >= len(out):
                    break
                chars = out[row - 1]
                start = c1 if row == r1 else 0
                stop = c2 if row == r2 else len(chars)
                for i in range(start, min(stop, len(chars))):
                    if chars[i] not in "\r\n":
                        chars[i] = " "
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # keep what was blanked so far; the rest is scanned as it is
    return "".join("".join(chars) for chars in out)


def census_hits(text: str, path: str, names: Sequence[str] = NAMES) -> List[Hit]:
    code = blank_code(text)
    pattern = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\s*\.\s*)*(?P<name>" +
                         "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    hits: List[Hit] = []
    for match in pattern.finditer(code):
        dotted = re.sub(r"\s+", "", match.group(0))
        if dotted.startswith(FOREIGN_PREFIXES):
            continue
        before = code[max(0, match.start() - 400): match.start()]  # enough for `@partial(\n`
        after = code[match.end():]
        line = code.count("\n", 0, match.start("name")) + 1
        head = before.rstrip(" \t")
        if DEFINING_TAIL.search(before):
            continue
        if head.endswith("@") and _starts_logical_line(head[:-1]):
            form, spelling = "decorator", "@" + dotted
        elif PARTIAL_TAIL.search(before) and re.match(r"\s*[,)]", after):
            prefix = DOTTED_TAIL.search(before[: PARTIAL_TAIL.search(before).start()])  # type: ignore[union-attr]
            form, spelling = "partial", (re.sub(r"\s+", "", prefix.group(0)) if prefix else "") + "partial(" + dotted
        elif re.match(r"\s*\(", after):
            form, spelling = "call", dotted + "("
        else:
            continue  # a bare reference: import, isinstance, annotation, attribute access
        hits.append(Hit(path, line, form, spelling))
    _classify(text, hits, names)
    return hits


def _tail(expr: ast.expr) -> Optional[str]:
    return expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else None


def _classify(text: str, hits: List[Hit], names: Sequence[str]) -> None:
    """Set each hit's role from the file's ast; hits keep "definition" if it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return
    by_line: Dict[int, Tuple[ast.AST, List[ast.AST], Optional[ast.AST]]] = {}  # line -> (node, ancestors, applied)

    def visit(node: ast.AST, ancestors: List[ast.AST]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                creator = dec.args[0] if isinstance(dec, ast.Call) and dec.args and _tail(dec.func) == "partial" \
                    else dec.func if isinstance(dec, ast.Call) else dec
                if _tail(creator) in names:
                    by_line[getattr(creator, "end_lineno", creator.lineno)] = (node, ancestors, node)
        if isinstance(node, ast.Call):
            is_partial = _tail(node.func) == "partial" and node.args and _tail(node.args[0]) in names
            creator = node.args[0] if is_partial else node.func
            if _tail(creator) in names and getattr(creator, "end_lineno", 0) not in by_line:
                parent = ancestors[-1] if ancestors else None
                applied = parent.args[0] if (is_partial and isinstance(parent, ast.Call) and parent.func is node
                                             and parent.args) else None
                target = applied if is_partial else _fun_arg(node)
                by_line[getattr(creator, "end_lineno", creator.lineno)] = (node, ancestors, target)
        for child in ast.iter_child_nodes(node):
            visit(child, [*ancestors, node])

    visit(tree, [])
    for hit in hits:
        found = by_line.get(hit.line)
        if found is None:
            continue
        node, ancestors, target = found
        hit.role = _role(node, ancestors, target, names)


def _fun_arg(call: ast.Call) -> Optional[ast.AST]:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in ("fun", "fn", "f", "func")), None)


def _names_param(expr: ast.AST, params: Set[str]) -> bool:
    """`p` or `p.attr` for a parameter p (`self.fun` inside a wrapper's method)."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name) and expr.id in params


def _role(node: ast.AST, ancestors: List[ast.AST], target: Optional[ast.AST], names: Sequence[str]) -> str:
    enclosing = next((a for a in reversed(ancestors) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
                     None)
    if isinstance(node, ast.Call) and _tail(node.func) == "partial" and target is None:
        parent = ancestors[-1] if ancestors else None
        if not (isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in parent.decorator_list):
            return "alias"
    if enclosing is None:
        return "definition"
    if enclosing.name.lstrip("_") in names:
        return "wrapper-internal"
    a = enclosing.args
    params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]}

    def calls_param(body: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in params
                   for n in ast.walk(body))

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "definition"  # a decorated def is a definition, even one forwarding to a parameter
    if isinstance(target, ast.Name) and target.id in params:
        return "wrapper-internal"
    if isinstance(target, ast.Call) and any(_names_param(x, params)
                                            for x in [*target.args, *(k.value for k in target.keywords)]):
        return "wrapper-internal"
    if isinstance(target, ast.Name):
        local = [n for n in ast.walk(enclosing) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == target.id and n is not enclosing]
        if local and calls_param(local[0]):
            return "wrapper-internal"
    return "definition"


def _starts_logical_line(text: str) -> bool:
    tail = text.rsplit("\n", 1)[-1]
    return tail.strip() == ""


def recognised_spans(text: str, filename: str, recognizer: object = None) -> Optional[List[Tuple[int, int]]]:
    """Line spans of the creation expressions vjplint collects; None if it cannot parse."""
    from vjplint.facts.collect import collect
    from vjplint.syntax.positions import source_lines
    from vjplint.syntax.source import SourceError, parse

    try:
        module = parse(text, filename)
    except (SourceError, RecursionError):
        return None
    model = collect(module, source_lines(text), recognizer)  # type: ignore[arg-type]
    return [(d.creation.lineno, getattr(d.creation, "end_lineno", None) or d.creation.lineno)
            for d in model.derivatives]


REGISTRATION = re.compile(r"(?<![\w.])(?P<receiver>[A-Za-z_][\w.]*)\s*\.\s*"
                          r"(?P<method>defvjp|defjvp|defjvps|def_fwd|def_bwd|def_jvp)\s*\(")
REGISTRATION_BYTES = (b".defvjp", b".defjvp", b".def_fwd", b".def_bwd", b".def_jvp")


def registration_hits(text: str, path: str) -> List[Hit]:
    """Every registration call or decorator in code (comments and strings blanked). A
    registration whose receiver no recognised definition owns is a definition vjplint does not
    see, however its creator is spelled: the census of names cannot miss it."""
    code = blank_code(text)
    hits = []
    for match in REGISTRATION.finditer(code):
        line = code.count("\n", 0, match.start("method")) + 1
        receiver = match.group("receiver")
        if receiver.split(".")[0] in FOREIGN_RECEIVERS or receiver.endswith(
                ("custom_vjp", "custom_jvp", "filter_custom_vjp", "filter_custom_jvp")):
            continue  # `jax.custom_vjp.defvjp` referenced, JAX's primitive rules, HIPS autograd
        hits.append(Hit(path, line, "registration", f"{receiver}.{match.group('method')}("))
    _registration_roles(text, hits)
    return hits


# `ad.defjvp(prim, ...)` registers a primitive's rule (jax.interpreters.ad), `autograd.extend.defvjp`
# is HIPS autograd's: neither is a custom derivative.
FOREIGN_RECEIVERS = ("jax", "eqx", "equinox", "nnx", "ad", "autograd")
API_METHODS = ("__init__", "__call__", "defvjp", "defjvp", "def_fwd", "def_bwd", "def_jvp")


def _registration_roles(text: str, hits: List[Hit]) -> None:
    """`wrapper-internal` for a registration made inside an API's own implementation: on `self`, or
    in a method such as `defvjp`/`__init__` of a class, or in a function named like a creator."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return
    inside: Dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in API_METHODS:
                    for line in range(item.lineno, (item.end_lineno or item.lineno) + 1):
                        inside[line] = "wrapper-internal"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.lstrip("_") in NAMES:
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                inside[line] = "wrapper-internal"
    for hit in hits:
        if hit.spelling.startswith("self.") or hit.line in inside:
            hit.role = "wrapper-internal"


def recognised_registrations(text: str, filename: str, recognizer: object = None) -> Optional[Set[int]]:
    """The lines of the registrations vjplint attaches to a definition; None if it cannot parse."""
    from vjplint.facts.collect import collect
    from vjplint.syntax.positions import source_lines
    from vjplint.syntax.source import SourceError, parse

    try:
        module = parse(text, filename)
    except (SourceError, RecursionError):
        return None
    model = collect(module, source_lines(text), recognizer)  # type: ignore[arg-type]
    lines: Set[int] = set()
    for d in model.derivatives:
        if d.api == "equinox":  # its deprecated `f.defvjp(fwd, bwd)` (old signatures) is not attached
            lines.update(c.lineno for c in ast.walk(module) if isinstance(c, ast.Call) and isinstance(
                c.func, ast.Attribute) and c.func.attr == "defvjp" and isinstance(c.func.value, ast.Name)
                and c.func.value.id == d.name)
        for r in d.registrations:
            node = r.node
            first = min([node.lineno, *(x.lineno for x in getattr(node, "decorator_list", []))])
            lines.update(range(first, (getattr(node, "end_lineno", None) or node.lineno) + 1))
    return lines


def census_tree(tree: Path, names: Sequence[str] = NAMES, wrappers: bool = True) -> TreeReport:
    """`wrappers`: recognise the tree's own wrappers as `vjplint check` does (vjplint.project.index)."""
    from vjplint.facts.collect import Recognizer
    from vjplint.settings.config import Config
    from vjplint.project.index import ProjectIndex, build_index
    from vjplint.syntax.source import SourceError, decode

    files = sorted(p for p in (*tree.rglob("*.py"), *tree.rglob("*.ipynb")) if p.is_file())
    index = build_index(files, Config(), use_cache=False, base=str(tree)) if wrappers else ProjectIndex()
    census: List[Hit] = []
    beyond = 0
    failures: List[str] = []
    registrations = 0
    orphans: List[Hit] = []
    for path in files:
        data = _python_bytes(path)
        if data is None:
            failures.append(str(path.relative_to(tree)))
            continue
        if any(r in data for r in REGISTRATION_BYTES):
            text = decode_text(data)
            rel = str(path.relative_to(tree))
            regs = registration_hits(text, rel)
            seen = recognised_registrations(text, rel, Recognizer.for_run(
                Config(), index.facts_for(Config(), path))) if regs else set()
            registrations += len(regs)
            orphans.extend(h for h in regs if seen is not None and h.line not in seen)
        if not any(n.encode() in data for n in names):
            continue
        try:
            text = decode(data).text
        except SourceError:
            text = data.decode("utf-8", "replace")
        rel = str(path.relative_to(tree))
        hits = census_hits(text, rel, names)
        spans = recognised_spans(text, rel, Recognizer.for_run(Config(), index.facts_for(Config(), path)))
        if spans is None:
            failures.append(rel)
            spans = []
        used: Set[int] = set()
        for hit in hits:
            for i, (first, last) in enumerate(spans):
                if first <= hit.line <= last and i not in used:
                    hit.recognised = True
                    used.add(i)
                    break
        beyond += len(spans) - len(used)
        census.extend(hits)
    unrecognised = [h for h in census if not h.recognised]
    definitions = [h for h in census if h.role == "definition"]
    return TreeReport(tree.name, len(files), len(census), len(census) - len(unrecognised), beyond, failures,
                      unrecognised, len(definitions), sum(h.recognised for h in definitions), registrations, orphans)


def _python_bytes(path: Path) -> Optional[bytes]:
    """A file's Python; a notebook's code cells joined in order (vjplint.syntax.notebook), so that its
    lines are those of the joined module; None for a notebook that cannot be read."""
    from vjplint.syntax.notebook import NotebookError, python_bytes

    data = path.read_bytes()
    if path.suffix != ".ipynb":
        return data
    try:
        return python_bytes(path.name, data)
    except NotebookError:
        return None


def decode_text(data: bytes) -> str:
    from vjplint.syntax.source import SourceError, decode

    try:
        return decode(data).text
    except SourceError:
        return data.decode("utf-8", "replace")


def by_spelling(hits: Sequence[Hit]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for h in hits:
        counts[h.spelling] = counts.get(h.spelling, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def print_text(reports: Sequence[TreeReport]) -> None:
    for r in reports:
        print(f"== {r.tree}: {r.files} files, census {r.census}, recognised {r.recognised}, "
              f"ratio {r.ratio:.1%}, beyond census {r.beyond_census}; definitions {r.definitions}, "
              f"recognised {r.definitions_recognised}, ratio {r.definitions_ratio:.1%}; registrations "
              f"{r.registrations}, of no recognised definition {len(r.orphans)}")
        for f in r.parse_failures:
            print(f"   unparsable: {f}")
        for h in [*r.unrecognised, *r.orphans]:
            role = "" if h.role == "definition" else f", {h.role}"
            print(f"   {h.path}:{h.line}: {h.spelling} [{h.form}{role}]")
    total = sum(r.census for r in reports)
    seen = sum(r.recognised for r in reports)
    if len(reports) > 1:
        print(f"== total: census {total}, recognised {seen}, ratio {seen / total if total else 1.0:.1%}")


def print_markdown(reports: Sequence[TreeReport]) -> None:
    print("| tree | files | census | recognised | ratio | definitions only: census / recognised / ratio "
          "| registrations / of no recognised definition (outside API internals) | unrecognised by spelling |")
    print("|---|---|---|---|---|---|---|---|")
    for r in reports:
        spellings = ", ".join(f"`{s}` {n}" for s, n in by_spelling([*r.unrecognised, *r.orphans]).items())
        print(f"| {r.tree} | {r.files} | {r.census} | {r.recognised} | {r.ratio:.1%} | {r.definitions} / "
              f"{r.definitions_recognised} / {r.definitions_ratio:.1%} | {r.registrations} / {len(r.orphans)} "
              f"({sum(h.role == 'definition' for h in r.orphans)}) | {spellings} |")
    total = sum(r.census for r in reports)
    seen = sum(r.recognised for r in reports)
    defs = sum(r.definitions for r in reports)
    defs_seen = sum(r.definitions_recognised for r in reports)
    print(f"| **total** | {sum(r.files for r in reports)} | {total} | {seen} | "
          f"{seen / total if total else 1.0:.1%} | {defs} / {defs_seen} / {defs_seen / defs if defs else 1.0:.1%} | "
          f"{sum(r.registrations for r in reports)} / {sum(len(r.orphans) for r in reports)} "
          f"({sum(h.role == 'definition' for r in reports for h in r.orphans)}) | |")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--name", action="append", default=[], help="another creator name to census")
    parser.add_argument("--json", action="store_true", help="one JSON object per tree")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--no-wrappers", action="store_true",
                        help="do not recognise the trees' own wrappers (vjplint.project.index): only JAX's spellings")
    args = parser.parse_args(argv)
    names = tuple(dict.fromkeys([*NAMES, *args.name]))
    for tree in args.trees:
        if not tree.is_dir():
            parser.error(f"not a directory: {tree}")
    reports = [census_tree(t, names, wrappers=not args.no_wrappers) for t in args.trees]
    if args.json:
        for r in reports:
            data = asdict(r)
            data["ratio"] = r.ratio
            data["definitions_ratio"] = r.definitions_ratio
            print(json.dumps(data))
    elif args.markdown:
        print_markdown(reports)
    else:
        print_text(reports)
    return 0


if __name__ == "__main__":
    sys.exit(main())
