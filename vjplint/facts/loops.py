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
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from vjplint.semantic import FUNCTION_TYPES, FunctionNode, SemanticIndex

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
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names for n in ast.walk(node))


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
                     imported: Optional[ImportedLoops] = None) -> Optional[Route]:
    """The `lax.while_loop` call a value of `params` (names in `fn`) flows into, with the helpers
    it passes through, or None. `imported` answers for functions of other modules of the run."""
    if depth > MAX_DEPTH:
        return None
    names = _tainted(fn, params)
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        arguments: Iterable[ast.expr] = (*node.args, *(k.value for k in node.keywords))
        qualname = index.qualname(node.func)
        if qualname == WHILE_LOOP:
            if any(reads(a, names) for a in arguments):
                return Route(quote(node, 40), f"line {node.lineno}")
            continue
        target = module_function(index, node.func)
        if target is None:
            found = imported_route(imported, qualname, node, lambda a: reads(a, names))
            if found is not None:
                return found
            continue
        if target is fn or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        positional = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
        hit = {p for p, a in zip(positional, node.args) if reads(a, names)}
        hit |= {k.arg for k in node.keywords if k.arg is not None and reads(k.value, names)}
        if not hit:
            continue
        found = while_loop_route(index, target, hit, quote, depth + 1, imported)
        if found is not None:
            return Route(found.loop, found.where, (f"`{target.name}` (line {target.lineno})", *found.chain))
    return None


_LINE = re.compile(r"\bline (\d+)")


def exported_loops(tree: ast.Module, lines: Sequence[str], display: str) -> Dict[str, list]:
    """The module's top-level functions that feed a parameter into a while_loop (here or through
    helpers of this module): name -> [def line, [[parameter, position (-1: keyword-only), loop
    quoted, where ("mod.py:31"), [helpers passed through]], ...]]. Lists, for the per-file cache."""
    from vjplint.model import quote_lines

    index = SemanticIndex(tree)

    def located(text: str) -> str:
        return _LINE.sub(lambda m: f"{display}:{m.group(1)}", text)

    out: Dict[str, list] = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        args = stmt.args
        slots = [(a.arg, i) for i, a in enumerate((*args.posonlyargs, *args.args))]
        slots += [(a.arg, -1) for a in args.kwonlyargs]
        params = []
        for param, position in slots:
            found = while_loop_route(index, stmt, {param}, lambda node, limit: quote_lines(lines, node, limit))
            if found is not None:
                params.append([param, position, found.loop, located(found.where), [located(c) for c in found.chain]])
        if params:
            out[stmt.name] = [stmt.lineno, params]
    return out


def imported_loop(name: str, display: str, line: int, params: Sequence[Sequence]) -> ImportedLoop:
    """An `exported_loops` entry (as its row carries it) as an ImportedLoop."""
    return ImportedLoop(name, f"{display}:{line}", tuple(
        (str(p), int(position), Route(str(loop), str(where), tuple(chain)))
        for p, position, loop, where, chain in params))


def _tainted(fn: FunctionNode, params: Set[str]) -> Set[str]:
    """`params` and the names assigned from them in `fn`, the local functions that read them
    included (a closure over the value carries it)."""
    names = set(params)
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            new: List[str] = []
            if isinstance(node, ast.Assign) and reads(node.value, names):
                new = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            elif isinstance(node, FUNCTION_TYPES) and node is not fn and not isinstance(node, ast.Lambda):
                if reads(node, names):
                    new = [node.name]
            for name in new:
                if name not in names:
                    names.add(name)
                    changed = True
    return names
