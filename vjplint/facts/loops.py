"""Where a value reaches a `lax.while_loop`: directly, through the local functions handed to the
loop, through a helper of the same module called with it, or through a helper of another module
of the run (its summary, `exported_loops`, travels as project facts). A while_loop has no transpose rule,
so a jvp rule whose tangent goes through one breaks reverse mode (docs/facts/scripts/
hazard_key_and_while.py, jax-ml/jax#18311); a `fori_loop` with static bounds is a scan and
transposes, so it is not followed."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, SemanticIndex
from vjplint.model.file_model import quote_lines
from vjplint.syntax.walk import walk

WHILE_LOOP = "jax.lax.while_loop"
MAX_DEPTH = 3  # helpers followed, one inside the other


@dataclass(frozen=True)
class Route:
    """How a value reaches a while_loop: the call quoted, where it is ("line 31" here, "mod.py:31"
    in another module) and the helpers passed through (`` `series` (line 12) ``, outermost first)."""

    loop: str
    where: str
    chain: Tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportedLoop:
    """A function of another module of the run that feeds some of its parameters into a while_loop."""

    name: str
    where: str  # its `def`, "mod.py:6"
    params: Tuple[Tuple[str, int, Route], ...]  # (parameter, position (-1: keyword-only), route)

    def route(self, positions: Set[int], names: Set[str]) -> Optional[Route]:
        for param, position, found in self.params:
            if position in positions or param in names:
                return Route(found.loop, found.where, (f"`{self.name}` ({self.where})", *found.chain))
        return None


ImportedLoops = Callable[[str], Optional[ImportedLoop]]  # a callee's qualified name -> its summary


def reads(node: ast.AST, names: Set[str]) -> bool:
    """Whether `node` (a lambda or nested def included) reads one of `names`."""
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names for n in walk(node))


def module_function(index: SemanticIndex, func: ast.expr) -> Optional[FunctionNode]:
    """The one `def` a called name binds to in this module (None for anything else)."""
    if not isinstance(func, ast.Name):
        return None
    bindings = index.lookup(func.id, index.scope_of(func))
    if len(bindings) == 1 and bindings[0].kind == "def" and isinstance(bindings[0].node, ast.FunctionDef):
        return bindings[0].node
    return None


def imported_route(imported: Optional[ImportedLoops], qualname: Optional[str], call: ast.Call,
                   carried: Callable[[ast.expr], bool]) -> Optional[Route]:
    """The route into a while_loop of a call of another module's function, given which arguments
    carry the value (`carried`), or None."""
    found = imported(qualname) if imported is not None and qualname else None
    if found is None:
        return None
    positions: Set[int] = set()
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):  # later positions are unknown
            break
        if carried(a):
            positions.add(i)
    names = {k.arg for k in call.keywords if k.arg is not None and carried(k.value)}
    return found.route(positions, names)


def while_loop_route(index: SemanticIndex, fn: FunctionNode, params: Set[str],
                     quote: Callable[[ast.AST, int], str], depth: int = 0,
                     imported: Optional[ImportedLoops] = None, memo: Optional["_Memo"] = None) -> Optional[Route]:
    """The `lax.while_loop` call a value of `params` (names in `fn`) flows into, with the helpers
    it passes through, or None. `imported` answers for functions of other modules of the run;
    `memo` keeps what was learnt of each function across calls (a module's summary asks often)."""
    if depth > MAX_DEPTH:
        return None
    memo = memo if memo is not None else _Memo()
    key = (fn, frozenset(params), depth)
    if key not in memo.routes:
        memo.routes[key] = _route(index, fn, params, quote, depth, imported, memo)
    return memo.routes[key]


def _route(index: SemanticIndex, fn: FunctionNode, params: Set[str], quote: Callable[[ast.AST, int], str],
           depth: int, imported: Optional[ImportedLoops], memo: "_Memo") -> Optional[Route]:
    names = memo.tainted(fn, params)

    def carried(a: ast.AST) -> bool:
        return not memo.loaded(a).isdisjoint(names)

    for node in memo.calls(fn):
        arguments: Iterable[ast.expr] = (*node.args, *(k.value for k in node.keywords))
        qualname = index.qualname(node.func)
        if qualname == WHILE_LOOP:
            if any(carried(a) for a in arguments):
                return Route(quote(node, 40), f"line {node.lineno}")
            continue
        target = module_function(index, node.func)
        if target is None:
            found = imported_route(imported, qualname, node, carried)
            if found is not None:
                return found
            continue
        if target is fn or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        positional = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
        hit = {p for p, a in zip(positional, node.args) if carried(a)}
        hit |= {k.arg for k in node.keywords if k.arg is not None and carried(k.value)}
        if not hit:
            continue
        found = while_loop_route(index, target, hit, quote, depth + 1, imported, memo)
        if found is not None:
            return Route(found.loop, found.where, (f"`{target.name}` (line {target.lineno})", *found.chain))
    return None


class _Memo:
    """Per function: its calls, and what each assignment (or local function) reads and binds;
    per node: the names it reads."""

    def __init__(self) -> None:
        self.routes: Dict[tuple, Optional[Route]] = {}
        self._calls: Dict[ast.AST, List[ast.Call]] = {}
        self._flows: Dict[ast.AST, List[Tuple[FrozenSet[str], List[str]]]] = {}
        self._loaded: Dict[ast.AST, FrozenSet[str]] = {}

    def loaded(self, node: ast.AST) -> FrozenSet[str]:
        found = self._loaded.get(node)
        if found is None:
            found = self._loaded[node] = frozenset(
                n.id for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
        return found

    def calls(self, fn: FunctionNode) -> List[ast.Call]:
        if fn not in self._calls:
            self._calls[fn] = [n for n in walk(fn) if isinstance(n, ast.Call)]
        return self._calls[fn]

    def tainted(self, fn: FunctionNode, params: Set[str]) -> Set[str]:
        """`params` and the names assigned from them in `fn`, the local functions that read them
        included (a closure over the value carries it)."""
        if fn not in self._flows:
            flows: List[Tuple[FrozenSet[str], List[str]]] = []
            for node in walk(fn):
                if isinstance(node, ast.Assign):
                    flows.append((self.loaded(node.value),
                                  [n.id for t in node.targets for n in walk(t) if isinstance(n, ast.Name)]))
                elif isinstance(node, FUNCTION_TYPES) and node is not fn and not isinstance(node, ast.Lambda):
                    flows.append((self.loaded(node), [node.name]))
            self._flows[fn] = flows
        names = set(params)
        changed = True
        while changed:
            changed = False
            for read, bound in self._flows[fn]:
                if not read.isdisjoint(names) and not names.issuperset(bound):
                    names.update(bound)
                    changed = True
        return names


_LINE = re.compile(r"\bline (\d+)")


def exported_loops(tree: ast.Module, lines: Sequence[str], display: str) -> Dict[str, list]:
    """The module's top-level functions that feed a parameter into a while_loop (here or through
    helpers of this module): name -> [def line, [[parameter, position (-1: keyword-only), loop
    quoted, where ("mod.py:31"), [helpers passed through]], ...]]. Lists, for the per-file cache."""
    if not _imports_while_loop(tree):
        return {}  # no call can be `jax.lax.while_loop`: no route, and no index to build
    reaching = _reaching(tree, lines)
    if not reaching:
        return {}
    index = SemanticIndex(tree)

    def located(text: str) -> str:
        return _LINE.sub(lambda m: f"{display}:{m.group(1)}", text)

    def quote(node: ast.AST, limit: int) -> str:
        return quote_lines(lines, node, limit)

    memo = _Memo()
    out: Dict[str, list] = {}
    for stmt in reaching:
        args = stmt.args
        slots = [(a.arg, i) for i, a in enumerate((*args.posonlyargs, *args.args))]
        slots += [(a.arg, -1) for a in args.kwonlyargs]
        if while_loop_route(index, stmt, {p for p, _ in slots}, quote, memo=memo) is None:
            continue  # no parameter reaches one: spare the per-parameter walks
        params = []
        for param, position in slots:
            found = while_loop_route(index, stmt, {param}, quote, memo=memo)
            if found is not None:
                params.append([param, position, found.loop, located(found.where), [located(c) for c in found.chain]])
        if params:
            out[stmt.name] = [stmt.lineno, params]
    return out


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports_while_loop(tree: ast.Module) -> bool:
    """Whether an import of the module binds a name `SemanticIndex.qualname` may take to
    `jax.lax.while_loop` (`jax`, `jax.lax`, `jax.lax.while_loop`): every qualified name starts
    at an import's (or is a builtin), so without one no call is a while_loop. Only statements
    are visited (an import is one, in any block), not their expressions."""
    todo: List[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.name if alias.asname else alias.name.split(".")[0]
                if WHILE_LOOP == bound or WHILE_LOOP.startswith(bound + "."):
                    return True
        elif isinstance(node, ast.ImportFrom):
            if not node.level and node.module is not None and any(
                    WHILE_LOOP == f"{node.module}.{a.name}" or WHILE_LOOP.startswith(f"{node.module}.{a.name}.")
                    for a in node.names):
                return True
        else:
            for name in _STATEMENT_LISTS:
                inner = getattr(node, name, None)
                if isinstance(inner, list):
                    todo.extend(inner)  # statements, or handlers and match cases holding a body
    return False


def _reaching(tree: ast.Module, lines: Sequence[str]) -> List[ast.FunctionDef]:
    """The top-level functions that may reach a while_loop: their text names one, or they call
    (by name) one that may. A cheap over-approximation: a large module holds hundreds of
    functions, and following values through each of them is what costs. A function's calls are
    read (a walk of its nodes) only once its text holds the name of one that reaches."""
    from vjplint.syntax.regions import first_line

    defs = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    texts: Dict[str, str] = {}  # a function not (yet) reaching -> its text, decorators included
    called: Dict[str, Set[str]] = {}
    reach: Set[str] = set()
    for name, fn in defs.items():
        if any("while_loop" in line for line in lines[fn.lineno - 1:fn.end_lineno]):
            reach.add(name)
        else:
            texts[name] = "\n".join(lines[first_line(fn) - 1:fn.end_lineno])
    new = set(reach)
    while new:
        added: Set[str] = set()
        for name, text in texts.items():
            if name in reach:
                continue
            # A call `f(...)` of a reaching `f` spells its name (a non-ASCII one maybe otherwise).
            if text.isascii() and not any(r in text for r in new):
                continue
            if name not in called:
                called[name] = {n.func.id for n in walk(defs[name]) if isinstance(n, ast.Call) and
                                isinstance(n.func, ast.Name) and n.func.id in defs}
            if not called[name].isdisjoint(new):
                added.add(name)
        reach |= added
        new = added
    return [fn for name, fn in defs.items() if name in reach]


def imported_loop(name: str, display: str, line: int, params: Sequence[Sequence]) -> ImportedLoop:
    """An `exported_loops` entry (as its row carries it) as an ImportedLoop."""
    return ImportedLoop(name, f"{display}:{line}", tuple(
        (str(p), int(position), Route(str(loop), str(where), tuple(chain)))
        for p, position, loop, where, chain in params))
