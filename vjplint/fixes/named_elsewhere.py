"""A fix never breaks another module: the in-file residual-plus-None rewrite changes what fwd
returns and what bwd takes, so another module that imports and calls them (a test importing
`clip_fwd`/`clip_bwd`) would break (`clip_bwd() takes 2 positional arguments but 4 were given`)
or, unpacking fwd's result, silently receive the residuals; the edit fixes that change what a rule
returns (RULE_EDITS: VJP307 wraps bwd's return in a tuple) hand a direct caller a tuple where it
had an array. Such a fix stays on offer, but as an unsafe fix whose finding says why
(`mark_unsafe`): plain `--fix` and the editor's fix-all leave the file alone, `--unsafe-fixes` or
the editor's quick fix apply it on purpose. The command line asks this about the files of the run
(`vjplint.cli.fix_cross`), the Language Server about its workspace index (`vjplint.server`): one
implementation for both."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from dataclasses import replace
from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple

from vjplint.diagnostics import Applicability, ResidualPlusNone
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.settings.config import Config
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import decode, parse

UNSAFE_FIX = " (unsafe fix: "  # how a finding says why its fix became unsafe

# Another module: (its path, how messages name it, a reader of its bytes).
Other = Tuple[Path, str, Callable[[], bytes]]


# Edit fixes that change what a rule returns, by code: the rule they edit (a direct caller of it sees the change).
RULE_EDITS = {"VJP306": "bwd", "VJP307": "bwd", "VJP319": "fwd"}


def residual_plans(diagnostics) -> set:
    """The fixes on offer in `diagnostics` that change a rule another module may call: the
    residual-plus-None plans, and the rows of the edit fixes of RULE_EDITS as (role, row)."""
    found = set()
    for d in diagnostics:
        if d.fix is None:
            continue
        if isinstance(d.fix.plan, ResidualPlusNone):
            found.add(d.fix.plan)
        elif d.fix.plan is None and d.code in RULE_EDITS:
            found.add((RULE_EDITS[d.code], d.location.row))
    return found


def _word(word: str) -> "re.Pattern[bytes]":
    return re.compile(rb"(?<![\w])" + re.escape(word.encode()) + rb"(?![\w])")


class OtherFiles:
    """The other modules a fix may break, each read once, and which of them hold a word (found
    once per word for the whole run: modules of a monorepo repeat their names, `_fwd`, `_bwd`,
    and asking each file's question of every other file would grow with the square of the tree)."""

    def __init__(self, others: Sequence[Other]) -> None:
        self.others = list(others)
        self._contents: Dict[int, bytes] = {}
        self._holding: Dict[str, Tuple[List[int], Set[int]]] = {}

    def data(self, i: int) -> bytes:
        if i not in self._contents:
            try:
                self._contents[i] = self.others[i][2]()
            except OSError:
                self._contents[i] = b""
        return self._contents[i]

    def holding(self, word: str) -> Tuple[List[int], Set[int]]:
        """The positions of the modules whose bytes hold `word` as a word, in order and as a set."""
        if word not in self._holding:
            raw, pattern = word.encode(), _word(word)
            found = [i for i in range(len(self.others)) if raw in self.data(i) and pattern.search(self.data(i))]
            self._holding[word] = (found, set(found))
        return self._holding[word]


def named_in_others(path: Path, text: str, config: Config, plans: Iterable, others: "Sequence[Other] | OtherFiles",
                    facts: RunFacts = NO_FACTS) -> Dict[str, str]:
    """For the custom_vjps of `plans` (`residual_plans`, in the file `path` holding `text`): those
    whose fwd or bwd another module of `others` names, with the reason, by fix target (a residual
    plan's target; for an edit fix, vjplint.fixes.targets' name for its row). A module counts when
    it imports the rule from the rule's module or reads it as that module's attribute (`from
    pkg.ops import clip_fwd`, `ops.clip_fwd`): a module with its own function of that name does not."""
    from vjplint.fixes.targets import qualname
    from vjplint.plans.residual_plan import find_derivative

    plans = list(plans)
    if not plans:
        return {}
    module = path.parent.name if path.stem == "__init__" else path.stem
    files = others if isinstance(others, OtherFiles) else OtherFiles(others)
    if not any(files.others[i][0] != path for i in files.holding(module)[0]):
        return {}  # no other module names this one: nothing to ask (and no model of a big file to build)
    try:
        from vjplint.facts.collect import Recognizer, collect

        model = collect(parse(text), source_lines(text), Recognizer.for_run(config, facts))
    except Exception:  # the fix itself reports what it cannot read
        return {}
    found: Dict[str, str] = {}
    for fp in plans:
        if isinstance(fp, tuple):  # an edit fix of RULE_EDITS: the derivative whose rule holds its row
            d, target, roles = _editing(model, *fp), None, (fp[0],)
            target = qualname(d) if d is not None else None
        else:
            d, target, roles = find_derivative(model, fp.target, fp.line), fp.target, ("fwd", "bwd")
        if d is None or target is None or target in found:
            continue
        rules = []
        for role in roles:
            rule = d.rule(role)
            rule = rule.as_registered() if rule is not None else None
            if rule is not None and rule.name:
                rules.append((role, rule.name))
        for i in files.holding(module)[0]:  # in the run's order, as the first one found is named
            other = files.others[i]
            if other[0] == path:
                continue
            seen = [(role, name, verb) for role, name in rules if i in files.holding(name)[1]
                    for verb in [uses(files.data(i), module, name)] if verb]
            if seen:
                found[target] = reason(other[1], seen, isinstance(fp, tuple))
                break
    return found


def _editing(model, role: str, row: int):
    """The module-level custom derivative whose registered `role` rule holds `row`, if one does."""
    for d in model.derivatives:
        rule = d.rule(role) if d.enclosing is None else None
        rule = rule.as_registered() if rule is not None else None
        node = rule.node if rule is not None else None
        if node is not None and node.lineno <= row <= (node.end_lineno or node.lineno):
            return d
    return None


def reason(display: str, seen: Sequence[Tuple[str, str, str]], edit: bool = False) -> str:
    """Why a fix is unsafe, from the rules another module uses: "clipops/test_ops.py calls
    `clip_fwd` and `clip_bwd`, and the rewrite changes fwd's return and bwd's parameters"."""
    verbs = [verb for _, _, verb in seen]
    verb = "calls" if "calls" in verbs else "imports" if "imports" in verbs else "names"
    names = " and ".join(f"`{name}`" for _, name, _ in seen)
    if edit:  # an edit fix of RULE_EDITS: one rule, its return
        return f"{display} {verb} {names}, and the fix changes what {seen[0][0]} returns"
    changes = " and ".join("fwd's return" if role == "fwd" else "bwd's parameters" for role, _, _ in seen)
    return f"{display} {verb} {names}, and the rewrite changes {changes}"


def uses(data: bytes, module: str, name: str) -> str:
    """How a file uses `name` of a module whose last component is `module`: "calls" when it
    calls it, else "imports" when it imports it (`from clipops.ops import clip_fwd`, `from .ops
    import *`), else "names" when it reads it as an attribute of such a module (`ops.clip_fwd`,
    `o.clip_fwd` after `import clipops.ops as o`); "" when it does not. A file that cannot be
    parsed "names" it (the worst is assumed). Each file is parsed and walked once (`_summary`,
    by its content): a run asks this of the same file for many (module, name) pairs."""
    summary = _summary(data)
    if summary is None:
        return "names"
    from_imports, imports, attributes, names = summary
    aliases = {module}
    imported = False
    local = set()
    for source, imported_name, asname in from_imports:
        if source == module and imported_name in (name, "*"):
            imported = True
        if imported_name == module:
            aliases.add(asname or imported_name)
        if source == module and imported_name == name:
            local.add(asname or imported_name)
    aliases.update(asname for source, asname in imports if source == module)
    named = imported
    called = False
    for spelled, is_called in attributes.get(name, ()):
        if spelled in aliases:
            named = True
            called = called or is_called
    for local_name in local | ({name} if imported else set()):
        called = called or names.get(local_name, False)
    return "calls" if named and called else "imports" if imported else "names" if named else ""


@functools.lru_cache(maxsize=256)
def _summary(data: bytes) -> "tuple | None":
    """What `uses` reads of a file, whatever the module and name asked about: its from-imports
    (the module's last component, the name, its alias), its `import a.b as c` (b, c), its
    attribute reads by attribute ((the name or attribute they are read from, called?), ...) and
    whether each plain name is ever called. None when it cannot be parsed."""
    try:
        tree = parse(decode(data).text)
    except Exception:
        return None
    nodes = list(ast.walk(tree))
    callees = {n.func for n in nodes if isinstance(n, ast.Call)}
    from_imports, imports = [], []
    attributes: Dict[str, list] = {}
    names: Dict[str, bool] = {}
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            source = (node.module or "").rpartition(".")[2]
            from_imports.extend((source, a.name, a.asname) for a in node.names)
        elif isinstance(node, ast.Import):
            imports.extend((a.name.rpartition(".")[2], a.asname) for a in node.names if a.asname)
        elif isinstance(node, ast.Attribute):
            value = node.value
            spelled = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else None
            attributes.setdefault(node.attr, []).append((spelled, node in callees))
        elif isinstance(node, ast.Name):
            names[node.id] = names.get(node.id, False) or node in callees
    return tuple(from_imports), tuple(imports), attributes, names


def strongest_use(data: bytes, modules: Iterable[str], name: str) -> str:
    """`uses` over several module names a file may import `name` from (the module defining it,
    a module or package that re-exports it): the strongest verb ("calls" > "imports" > "names"),
    "" when it uses none of them."""
    found = {uses(data, module, name) for module in modules}
    return next((verb for verb in ("calls", "imports", "names") if verb in found), "")


def mark_unsafe(diagnostics, reasons: Dict[str, str], target_of: Callable[[int], object] = lambda row: None) -> int:
    """The fixes of the targets in `reasons` become unsafe, and their findings say why (the fix
    itself, its plan and its edits, stays as it was; `Fix.unsafe_because` holds the reason): a
    residual plan by its target, an edit fix of RULE_EDITS by `target_of(its row)`. Returns how
    many were marked."""
    marked = 0
    for d in diagnostics:
        fix = d.fix
        if fix is None:
            continue
        plan = fix.plan
        if plan is not None:
            target = plan.target if isinstance(plan, ResidualPlusNone) else None
        else:
            target = target_of(d.location.row) if d.code in RULE_EDITS and reasons else None
        if target not in reasons:
            continue
        reason = reasons[target]  # type: ignore[index]
        d.fix = replace(fix, applicability=Applicability.UNSAFE, unsafe_because=reason)
        marked += 1
        if fix.unsafe_because is None:  # the message says why once, when the fix first becomes unsafe
            d.message += f"{UNSAFE_FIX}{reason})"
    return marked


def targets_in(text: str, config: Config, facts: RunFacts = NO_FACTS) -> Callable[[int], object]:
    """row -> the fix target holding it (vjplint.fixes.targets), read lazily from `text`."""
    found: list = []

    def target_of(row: int) -> object:
        from vjplint.fixes.targets import model_of, target_of as target_at

        if not found:
            found.append(model_of(text, config, facts))
        return target_at(*found[0], row) if found[0] is not None else None
    return target_of
