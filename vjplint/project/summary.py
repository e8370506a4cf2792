"""The per-module half of the cross-module summaries: what a module does with other modules'
custom derivatives and factories (calls with argument kinds, registrations, uses), and the kinds
of its own module-level bindings. It builds a model of the module (vjplint.facts.collect), so it lives
above the model layer; vjplint.facts.crossmodule holds the rows and their reading."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import TYPE_CHECKING, AbstractSet, Dict, List, Optional, Tuple

from vjplint.facts.collect import collect
from vjplint.facts.crossmodule import (
    CALL,
    FORWARD_USE,
    MAX_CALLS,
    REGISTER,
    REGISTRATION_METHODS,
    REVERSE_MODE,
    REVERSE_TWICE,
    USE,
    ExportKind,
    _dotted,
    _located,
    imported_names,
)
from vjplint.facts.forward import FORWARD, linear_fn_applied
from vjplint.facts.values import is_callable_class
from vjplint.facts.param_evidence import bound_parameter, held_parameter
from vjplint.syntax.regions import first_line
from vjplint.syntax.walk import walk

if TYPE_CHECKING:
    from vjplint.project.text import LazyModule


def summarize(tree: ast.Module, lines: List[str], package: str, display: str,
              targets: Dict[str, Tuple[str, str]], exported: Optional[ExportKind] = None,
              forward_only: AbstractSet[str] = frozenset(), text: Optional[str] = None,
              lazy: Optional["LazyModule"] = None, focus: bool = True) -> List[Tuple[str, tuple]]:
    """(defining module, row) pairs (rows: see ExternalFacts.from_rows) for the calls,
    registrations and uses in this module of `targets` (absolute name -> (module, name there));
    for those in `forward_only`, only forward mode applied to them. With the module's `text`, the
    model is built on its regions that can matter (as linting does, vjplint.syntax.regions): those naming
    an import that leads to a target, and what they reach. With `lazy`, `tree` holds only the
    module's top-level statements other than definitions (`project_text.parse_lazily`): the hits
    are looked for in the statements that mention an import's name (most modules have none),
    then the regions are parsed; every hit names such an import in its code, so it lies in them."""
    imports = imported_names(tree, package)
    # Every hit names an import that leads to a target (`f`, `mod.f`, `pkg.mod.f`): the local
    # names of those imports.
    wanted = [local for local, q in imports.items() if any(t == q or t.startswith(q + ".") for t in targets)]
    if not wanted:
        return []
    hits: List[Tuple[ast.AST, str, str]] = []  # (node, "call"/"register"/"use", absolute target)
    regions_made = False  # `tree` is the regions already
    if focus:
        whole = text if text is not None else "\n".join(lines)
        needs = _needed_words(imports, wanted, targets, whole)
        if not needs or not _spelled(whole, needs):  # no statement can spell a target: no hit
            return []
        if lazy is not None:
            # A statement holding a hit holds every word of its spelling: the last (`odeint` of
            # `jax.experimental.ode.odeint`) is the one that rules out most statements.
            spelled = sorted({s[-1] if s else local for local, spellings in needs for s in spellings})
            tree = lazy.mentioning(spelled)
            if tree is None:
                return []
            if tree is not lazy.parsed_whole:  # only the statements that can hold a hit were parsed
                if not any(True for _ in _hits(_walk_spelling(tree, lines, needs), imports, targets, forward_only)):
                    return []
                tree = lazy.regions(spelled)  # seeded by the statements holding the hits
                if tree is None:
                    return []
                regions_made = True
        nodes = _walk_spelling(tree, lines, needs)
    else:
        nodes = walk(tree)
    hits.extend(_hits(nodes, imports, targets, forward_only))
    if not hits:
        return []
    if text is not None and focus and not regions_made:
        from vjplint.syntax.regions import focus

        tree = focus(tree, text, lines, wanted)
    model = collect(tree, lines)
    values = model.facts.values()
    if exported is not None:  # what the functions this module imports from the run return
        values.imported = lambda local: _returned(exported, imports.get(local))
    rows: List[Tuple[str, tuple]] = []
    per_target: Dict[str, int] = {}
    for node, what, q in hits:
        owner, name = targets[q]
        where = f"{display}:{node.lineno}"  # type: ignore[attr-defined]
        if what == REGISTER:
            rows.append((owner, (REGISTER, name, node.attr, where)))  # type: ignore[attr-defined]
            continue
        if what == USE:
            rows.append((owner, (USE, name, where)))
            continue
        if what == FORWARD_USE:
            transform = (_dotted(node.func, imports) or "").rsplit(".", 1)[-1]  # type: ignore[attr-defined]
            how = f"`jax.{transform}`"
            if transform == "linearize":  # only applying the linear function is forward mode
                applied = linear_fn_applied(model, node)
                if applied is None:
                    continue
                how = f"the linear function that `jax.linearize` returns (applied at line {applied})"
            rows.append((owner, (FORWARD_USE, name, how, where)))
            continue
        if what == REVERSE_TWICE:
            outer, inner = _dotted(node.func, imports), _dotted(node.args[0].func, imports)  # type: ignore[attr-defined]
            rows.append((owner, (REVERSE_TWICE, name, f"`{outer}` of `{inner}`", where)))
            continue
        per_target[name] = per_target.get(name, 0) + 1
        if per_target[name] > MAX_CALLS:
            continue
        call: ast.Call = node  # type: ignore[assignment]
        enclosing = model.index.enclosing_function(call)
        traced = model.traced.get(enclosing) if enclosing is not None else None
        complete = not any(isinstance(a, ast.Starred) for a in call.args) and all(
            k.arg is not None for k in call.keywords)
        args = []
        slots = [(str(i), a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)] if complete else []
        slots += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        for slot, arg in slots:
            args.append(_summarize_arg(model, values, slot, arg, enclosing, traced, display, imports, exported))
        caller = getattr(enclosing, "name", "<lambda>") if enclosing is not None else ""
        rows.append((owner, (CALL, name, where, caller, complete, tuple(args))))
    return rows


def _needed_words(imports: Dict[str, str], wanted: List[str], targets: Dict[str, Tuple[str, str]],
                  text: str) -> List[Tuple[str, List[Tuple[str, ...]]]]:
    """What a statement's text must contain to hold a hit, per wanted local name: the name itself
    and, for a target reached through attributes (`jax._src.mod.f` from `import jax`), every
    attribute word (`_src`, `mod`, `f`). A hit is a dotted expression spelling a target from its
    import's local name, so a statement lacking those words holds none. Words the module's text
    lacks are dropped here, and with them the local names nothing can be spelled from; non-ASCII
    text (an identifier spelled otherwise) is never ruled out."""
    everything = not text.isascii()
    present: Dict[str, bool] = {}  # part -> whether the text holds it: targets share their parts (`_src`, `nn`)

    def holds(part: str) -> bool:
        found = present.get(part)
        if found is None:
            found = present[part] = part in text
        return found

    needs = []
    for local in wanted:
        if not everything and local not in text:
            continue
        q = imports[local]
        prefix = q + "."
        suffixes = set()
        for t in targets:
            if t == q:
                suffixes = {()}  # the name alone spells it
                break
            if t.startswith(prefix):
                parts = tuple(t[len(prefix):].split("."))
                if everything or all(holds(part) for part in parts):
                    suffixes.add(parts)
        if suffixes:
            needs.append((local, sorted(suffixes)))
    return needs


# What may stand between the parts of a dotted name (`jax.nn.relu`): spaces, line breaks and
# backslash continuations, comments (inside brackets), and before a dot a closing parenthesis
# (`(jax).nn` is the same chain).
_BEFORE_DOT = r"(?:[\s\\)]|#[^\n]*)*"
_AFTER_DOT = r"(?:[\s\\]|#[^\n]*)*"
_WORD_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _spelled(text: str, needs: List[Tuple[str, List[Tuple[str, ...]]]]) -> bool:
    """Whether `text` may spell one of `needs`' chains (`local.part.part`) as a dotted name: a
    hit (`_hits`) is such a chain, so a module whose text spells none has no hit and is not
    parsed (its words may all be there apart: `jax`, `nn` and `relu` in different statements).
    Non-ASCII text (an identifier spelled otherwise) always may."""
    if not text.isascii():
        return True
    for local, suffixes in needs:
        tails = [("".join(_BEFORE_DOT + r"\." + _AFTER_DOT + re.escape(part) for part in suffix)) for suffix in suffixes]
        pattern = re.compile(re.escape(local) + "(?:" + "|".join(tails) + r")(?![A-Za-z0-9_])")
        for m in pattern.finditer(text):  # the literal first: a search, not a try at every character
            if m.start() == 0 or text[m.start() - 1] not in _WORD_CHAR:
                return True
    return False


def _walk_spelling(tree: ast.Module, lines: List[str], needs: List[Tuple[str, List[Tuple[str, ...]]]]):
    """The nodes `ast.walk(tree)` yields, in its order, less the statements (and their subtrees)
    whose lines cannot spell a target (`_needed_words`): pruning whole subtrees keeps the order
    of the rest. Statements at any depth are tested (a test class holds hundreds of methods)."""
    import bisect
    from collections import deque

    words = {local for local, _ in needs} | {w for _, suffixes in needs for s in suffixes for w in s}
    at: Dict[str, List[int]] = {w: [] for w in words}  # word -> the rows holding it
    odd: List[int] = []  # rows with non-ASCII text
    for row, line in enumerate(lines, 1):
        if not line.isascii():
            odd.append(row)
        for w in words:
            if w in line:
                at[w].append(row)

    def within(rows: List[int], first: int, last: int) -> bool:
        i = bisect.bisect_left(rows, first)
        return i < len(rows) and rows[i] <= last

    def may_spell(statement: ast.stmt) -> bool:
        first, last = first_line(statement), statement.end_lineno or statement.lineno
        if odd and within(odd, first, last):
            return True
        for local, suffixes in needs:
            if within(at[local], first, last) and any(
                    all(within(at[w], first, last) for w in suffix) for suffix in suffixes):
                return True
        return False

    todo = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.stmt) and not may_spell(node):
            continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def _hits(nodes, imports: Dict[str, str], targets, forward_only: AbstractSet[str]):
    """(node, "call"/"register"/"use"/forward use, absolute target) for each node naming a target."""
    for node in nodes:
        if isinstance(node, ast.Call):
            q = _dotted(node.func, imports)
            if q in targets and q not in forward_only:
                yield node, CALL, q
            elif q in FORWARD and node.args:
                inner = _dotted(node.args[0], imports)
                if inner in targets:
                    yield node, FORWARD_USE, inner
            elif q in REVERSE_MODE and node.args and isinstance(node.args[0], ast.Call) and node.args[0].args \
                    and _dotted(node.args[0].func, imports) in REVERSE_MODE:
                inner = _dotted(node.args[0].args[0], imports)  # `jax.grad(jax.grad(mod.f))`
                if inner in targets:
                    yield node, REVERSE_TWICE, inner
        elif isinstance(node, ast.Attribute) and node.attr in REGISTRATION_METHODS:
            q = _dotted(node.value, imports)
            if q in targets and q not in forward_only:
                yield node, REGISTER, q
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            q = imports.get(node.id)
            if q in targets and q not in forward_only:
                yield node, USE, q


def _summarize_arg(model, values, slot: str, arg: ast.expr, enclosing, traced, display: str,
                   imports: Dict[str, str], exported: Optional[ExportKind]) -> tuple:
    kind = values.of(arg)
    if kind.tag == "module" and isinstance(arg, ast.Name) and arg.id in imports and exported is not None:
        found = exported(imports[arg.id])  # `from consts import MASK`: what the other module binds
        if found is not None:
            return (slot, found[0], found[1], model.quote(arg, 50),
                    f"`{arg.id}` is imported from `{imports[arg.id].rsplit('.', 1)[0]}`, where {found[2]}", "", "", "")
    reason = kind.traced or ""
    if not reason and traced is not None and kind.tag != "callable":
        reason = model.facts.traced_reason(arg, enclosing, traced) or ""
    capture = capture_traced = capture_may = ""
    if kind.tag == "record" and is_callable_class(model, kind.node):  # its fields are what it captures
        capture, capture_traced, capture_may = _object_captures(model, kind, display)
        if capture or capture_may:
            kind = replace(kind, tag="callable")
    elif kind.tag == "callable":
        for cname, ckind in kind.captures:
            if ckind.traced:
                capture, capture_traced = cname, _located(ckind.traced, display)
                break
        capture_may = _captured_self_with_arrays(model, values, kind, display) if not capture else ""
        if not capture and not capture_may and traced is None:
            capture_may = _bound_parameter(model, kind, display)
    quoted = model.quote(arg, 50)
    if isinstance(arg, ast.Name) and traced is not None and arg.id in traced.static_params and any(
            b.kind == "param" for b in model.index.lookup(arg.id, model.index.scope_of(arg))):
        how = f"`{arg.id}` is a static argument of `{getattr(enclosing, 'name', '<lambda>')}` (`{traced.how}`)"
        return (slot, "static", "", quoted, how, "", "", "")
    why = kind.why if kind.why != f"`{quoted}`" else ""
    if why.startswith(f"`{quoted}`, "):  # `make(w)`, which returns ...: the argument is quoted already
        why = why[len(quoted) + 4:]
    why = _located(why, display)
    return (slot, kind.tag, kind.dtype or "", quoted, why, _located(reason, display), capture, capture_traced,
            capture_may)


def _object_captures(model, kind, display: str) -> Tuple[str, str, str]:
    """(capture, capture_traced, capture_may) of an object of a callable class built here: a
    field holding a tracer (`Scale.gain`), or one holding a parameter that nothing shows traced
    and that the class uses as array data (vjplint.facts.param_evidence.held_parameter)."""
    cls = kind.node
    leaf = kind.traced_leaf()
    if leaf is not None:
        why = leaf[1][len(kind.why) + 2:] if kind.why and leaf[1].startswith(kind.why + "; ") else leaf[1]
        return f"{cls.name}{leaf[0]}", _located(why, display), ""
    held = held_parameter(model, kind)
    if held is None:
        return "", "", ""
    chain = held.chain[len(kind.why) + 2:] if kind.why and held.chain.startswith(kind.why + "; ") else held.chain
    return "", "", _located(f"`{cls.name}.{held.field}`, which comes from `{held.param}`, a parameter of "
                            f"`{held.function}` ({chain}), used as array data in "
                            f"`{model.quote(held.use, 40)}` at line {held.use.lineno}", display)


def _bound_parameter(model, kind, display: str) -> str:
    """A `functools.partial` binding a parameter nothing shows traced that the wrapped function
    uses as array data (vjplint.facts.param_evidence.bound_parameter)."""
    bound = bound_parameter(model, kind)
    if bound is None:
        return ""
    return _located(f"binds `{bound.param}` to `{bound.target}` of `{kind.node.name}`, which uses it as array data "
                    f"in `{model.quote(bound.use, 40)}` at line {bound.use.lineno} ({bound.chain}): if "
                    f"`{bound.function}` is differentiated with respect to `{bound.param}`", display)


def _captured_self_with_arrays(model, values, kind, display: str) -> str:
    """A callable capturing `self` of a class whose fields are annotated as arrays (a method's
    `lambda y: self.field(y)` in an equinox Module): the object's arrays may be what a caller
    differentiates, which this module need not show."""
    for cname, ckind in kind.captures:
        if ckind.tag != "module" or ckind.node is None or cname != "self":
            continue
        fields = values.array_fields(ckind.node)
        if fields:
            cls = model.index.scope_of(ckind.node).node
            line = next(s.lineno for s in cls.body if isinstance(s, ast.AnnAssign)
                        and getattr(s.target, "id", None) == fields[0][0])
            return (f"`self`, a `{cls.name}` whose field `{fields[0][0]}` is annotated `{fields[0][1]}` "
                    f"({display}:{line})")
    return ""


def _returned(exported: ExportKind, absolute: Optional[str]) -> Optional[Tuple[str, str, str]]:
    """What the run's function `absolute` returns ("call:..." tags), None for anything else."""
    found = exported(absolute) if absolute else None
    return found if found is not None and found[0].startswith("call:") else None


def module_binding(tree: ast.Module, lines: List[str], name: str, display: str,
                   text: Optional[str] = None, focus: bool = True) -> Optional[Tuple[str, str, str]]:
    """(tag, dtype, why) of the module-level `name` of a module, when vjplint.facts.value_kinds knows it as
    an array or a Python value (a module-level value is never a tracer); for a module-level
    function, what calling it returns: "call:new-array" when every return builds a new jax array
    (a tracer when called inside a traced function), "call:array", "call:static". With the
    module's `text`, only its regions naming `name` (and what they read) are modelled, unless
    `focus` is off (a test comparing with the whole module)."""
    if text is not None and focus:
        from vjplint.syntax.regions import focus

        tree = focus(tree, text, lines, [name])
    model = collect(tree, lines)
    values = model.facts.values()
    bindings = model.index.module_scope.bindings.get(name, [])
    if len(bindings) == 1 and bindings[0].kind == "def" and isinstance(bindings[0].node, ast.FunctionDef):
        fn = bindings[0].node
        out = values.returns(fn)
        built = values.new_array(fn)
        if built is not None:
            return ("call:new-array", out.dtype or "",
                    f"`{model.quote(built, 50)}` at {display}:{built.lineno}")  # type: ignore[attr-defined]
        if out.tag == "array" or out.is_static:
            why = out.why or f"a {out.tag}"
            return ("call:array" if out.tag == "array" else "call:static", out.dtype or "",
                    _located(f"{why} (`{name}` at line {fn.lineno})", display))
        return None
    kind = values.name(name, model.index.module_scope)
    if kind.tag != "array" and not kind.is_static:
        return None
    why = kind.why or f"`{name}` is a {kind.tag}"
    return kind.tag, kind.dtype or "", _located(why, display)
