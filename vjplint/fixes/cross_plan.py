"""Plan the residual-plus-None rewrite of a custom_vjp whose fwd/bwd rules are imported from
another module of the run (`from .rules import f_fwd, f_bwd`, or `R.f_fwd` after
`from pkg import rules as R`).

The plan is the in-file planner's (`residual_plan`), made from two models: the primal's file
gives the creation site, the static-argument evidence and the registration; the rules' file
gives fwd and bwd. The checks that make the in-file rewrite safe are made on every file
involved, and across the run as for an in-file fix (`vjplint.fixes.named_elsewhere`): another
file of the run that imports, calls or reads a rule from its module (a test calling `clip_fwd`)
is named with what it does in the plan's `used_elsewhere` reason, since the rewrite changes what
fwd returns and what bwd takes; a file that only has its own function of that name is not a use.
Code outside the run cannot be searched, so the fix is always unsafe. A plan writes its parts in
one file with the in-file writer (`CrossPlan.edits`, `rewrite_parts`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from vjplint.facts.dependence import none_draws_vjp602
from vjplint.plans.residual_plan import (Plan, Refusal, check_bound_once, check_derivative, check_distinct,
                                         check_not_generator, check_not_partial, check_not_static, loc_of, plan_rules,
                                         shared_with)
from vjplint.diagnostics import FixContext, FixPlan, Rewrite
from vjplint.fixes.apply import _return_annotations
from vjplint.fixes.edits import apply_spans, diff_edits
from vjplint.fixes.residual_text import spans_of
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import SourceError, parse
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.fixes.named_elsewhere import reason, strongest_use

if TYPE_CHECKING:  # made by the surface that knows the run (vjplint.project.modules)
    from vjplint.project.modules import RunModules

ROLES = ("fwd", "bwd")


@dataclass(frozen=True)
class CrossPlan(FixPlan):
    """One derivative's rewrite over several files: `parts[path]` is what each file gets. Its
    edits in one file come the one way (`edits`), with that file's path in the context."""

    kind: ClassVar[str] = "cross-module residual-plus-None"
    plan: Plan
    primal: Path
    rule_files: Tuple[Tuple[str, Path], ...]  # (role, file holding it)
    unsafe_reasons: Tuple[str, ...]
    anchors: Tuple[Tuple[int, int], ...] = ()  # (line, 1-based column) of each moved parameter
    # another file of the run using fwd/bwd: (that file, ((role, name, "calls"/"imports"/"names"), ...))
    used_elsewhere: Optional[Tuple[Path, Tuple[Tuple[str, str, str], ...]]] = None

    def elsewhere_reason(self, display: Callable[[Path], str] = str) -> str:
        """Why another file of the run makes the rewrite unsafe ("" when none does): "clipops/api.py
        calls `shift_fwd`, and the rewrite changes fwd's return" (`named_elsewhere.reason`)."""
        if self.used_elsewhere is None:
            return ""

        path, seen = self.used_elsewhere
        return reason(display(path), seen)

    @property
    def target(self) -> str:  # type: ignore[override]
        return self.plan.name

    @property
    def line(self) -> int:  # type: ignore[override]
        return self.plan.spans[0][0][0]  # the creation site's

    @classmethod
    def edits(cls, text: str, plans: Sequence[FixPlan], context: FixContext, alone: bool = False) -> Rewrite:
        """The rewrite of the file at `context.path` making the parts of `plans` it holds
        (`rewrite_parts`); raises LookupError when a planned node is not found. `alone` is not offered: the files of a cross-module rewrite change together."""
        if alone:
            raise ValueError("a cross-module rewrite is made with all its files, never alone")
        path = context.path
        held = [cp for cp in plans if isinstance(cp, CrossPlan) and path in cp.parts]
        new = rewrite_parts(text, [(cp.plan, cp.parts[path]) for cp in held])  # type: ignore[index]
        return Rewrite(diff_edits(text, new) if new != text else (), tuple(held), new)

    @property
    def parts(self) -> Dict[Path, Tuple[str, ...]]:
        out: Dict[Path, List[str]] = {self.primal: ["creation"]}
        for role, path in self.rule_files:
            out.setdefault(path, []).append(role)
        return {path: tuple(roles) for path, roles in out.items()}

    def spans_in(self, path: Path) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
        creation, fwd, bwd = self.plan.spans
        found = [creation] if path == self.primal else []
        found += [span for (role, where), span in zip(self.rule_files, (fwd, bwd)) if where == path]
        return found


def rewrite_parts(text: str, parts: Sequence[Tuple[Plan, Tuple[str, ...]]]) -> str:
    """`text` with each plan's parts (`creation`, `fwd`, `bwd`) rewritten by the in-file writer
    (`residual_text.spans_of`), told which parts this file holds; raises LookupError when a
    planned part is not found or cannot be written (the files of the rewrite then stay as they are)."""
    plans, held = [p for p, _ in parts], [roles for _, roles in parts]
    try:
        written = spans_of(text, source_lines(text), parse(text), plans, parts=held)
    except SourceError:
        raise LookupError("the file does not parse") from None
    missing = [p.name for p, spans in zip(plans, written.per_plan) if spans is None]
    if missing:
        raise LookupError(f"could not write the residual-plus-None fix of {', '.join(missing)} here")
    code = apply_spans(text, [s for spans in written.per_plan for s in spans or ()] + written.imports)
    annotated = [replace(p, annotations=tuple(a for a in p.annotations
                                              if any(getattr(p, role).name == a[0] for role in roles if role in ROLES)))
                 for p, roles in parts]
    return _return_annotations(code, annotated)


class RunFiles:
    """The models of a run's files (parsed on demand) and a search for names across them."""

    def __init__(self, modules: "RunModules", load: Callable[[Path], Optional[FileModel]],
                 read: Callable[[Path], bytes]) -> None:
        self.modules = modules
        self._load = load
        self._read = read
        self._models: Dict[Path, Optional[FileModel]] = {}
        self._found: Dict[str, List[Path]] = {}

    def model(self, path: Path) -> Optional[FileModel]:
        if path not in self._models:
            self._models[path] = self._load(path)
        return self._models[path]

    def read(self, path: Path) -> bytes:
        return self._read(path)

    def mentioning(self, name: str) -> List[Path]:
        """The run's files whose text contains `name` as a word."""
        if name not in self._found:
            raw = name.encode()
            word = re.compile(rb"(?<![\w])" + re.escape(raw) + rb"(?![\w])")
            found = []
            for path in self.modules.by_name.values():
                try:
                    data = self._read(path)
                    if raw in data and word.search(data):
                        found.append(path)
                except OSError:
                    found.append(path)  # unreadable: assume the worst
            self._found[name] = found
        return self._found[name]


def needs_other_files(d: CustomDerivative) -> bool:
    """A defvjp registration one of whose rules is not defined in the primal's file."""
    if d.kind != "vjp" or d.registration is None or d.registration.method != "defvjp":
        return False
    rules = [r.as_registered() if r is not None else None for r in (d.rule(role) for role in ROLES)]
    return all(r is not None for r in rules) and any(r.node is None for r in rules)  # type: ignore[union-attr]


def plan_across(primal: Path, model: FileModel, d: CustomDerivative, moved: Sequence[int], run: RunFiles) -> CrossPlan:
    """The rewrite moving `moved` out of `d`'s nondiff positions, over the files holding its
    primal and its rules; raises Refusal with the reason."""
    moved, sig, registration, *registered = check_derivative(d, moved)  # the in-file planner's refusals
    resolved: Dict[str, Tuple[RuleFunction, FileModel, Path]] = {}
    used: Dict[Path, List[Tuple[str, str, str]]] = {}  # another file of the run -> the rules it uses
    for role, rule in zip(ROLES, registered):
        check_not_partial(role, rule)
        function, rule_model, rule_path, found = _resolve(role, rule, primal, model, d, registration.node, run)
        resolved[role] = (function, rule_model, rule_path)
        for path, verb in found:
            used.setdefault(path, []).append((role, function.name, verb))
    (fwd, fwd_model, fwd_path), (bwd, bwd_model, bwd_path) = resolved["fwd"], resolved["bwd"]
    assert fwd.node is not None and bwd.node is not None
    check_distinct(fwd.node, bwd.node)
    check_not_static(model, d, moved, sig)
    elsewhere = sorted({str(p) for _, _, p in resolved.values() if p != primal})
    unsafe: List[str] = [f"fwd/bwd are defined in {', '.join(elsewhere)}; callers outside this run's files "
                         f"were not searched"]
    used_by = None
    if used:
        first = min(used, key=str)
        used_by = (first, tuple(used[first]))

        unsafe.append(reason(str(first), used[first]))
    # a moved argument the primal's output depends on: VJP602 reads its `None` (it reads rules of
    # another module where they are registered), so the rewrite marks it, as the in-file one does
    marked = tuple(sig.positional[p] for p in moved if none_draws_vjp602(model, d, sig.positional[p]) is not None)
    plan = plan_rules(model, d, moved, sig, fwd, bwd, unsafe, marked=marked, fwd_model=fwd_model, bwd_model=bwd_model)
    anchors = tuple((line, column + 1) for line, column in
                    (loc_of(model, sig.param_nodes[sig.positional[p]]) for p in moved))
    return CrossPlan(plan, primal, (("fwd", fwd_path), ("bwd", bwd_path)), plan.unsafe_reasons, anchors, used_by)


def _resolve(role: str, rule: RuleFunction, primal: Path, model: FileModel, d: CustomDerivative,
             registration: ast.AST, run: RunFiles) -> Tuple[RuleFunction, FileModel, Path, List[Tuple[Path, str]]]:
    """The def behind `rule` (in the primal's file or another file of the run), checked to have
    no other user in its own file and the primal's (the rewrite changes its signature or its
    return), with the other files of the run that use it and how (`_uses_in_other_files`)."""
    changes = "what it returns" if role == "fwd" else "its parameters"
    if rule.node is not None:  # defined beside the primal: the in-file planner's checks
        if isinstance(rule.node, ast.Lambda) or not rule.name:
            raise Refusal(f"{role} is a lambda beside a rule from another file")
        _check_only_registered(model, rule.name, registration, f"{role} `{rule.name}`", changes, attributes=True)
        check_bound_once(role, rule.name, len(model.index.lookup(rule.name, model.index.scope_of(rule.expr))))
        return rule, model, primal, _uses_in_other_files(run, rule.name, primal, primal)
    if not isinstance(rule.expr, (ast.Name, ast.Attribute)):
        raise Refusal(f"{role} is not a name this tool can follow")
    qualname = model.index.qualname(rule.expr) or ""
    try:
        found = run.modules.defining_file(qualname, primal)
    except LookupError as exc:
        raise Refusal(f"{role} `{ast.unparse(rule.expr)}` may come from several files: {exc}") from None
    spelled = ast.unparse(rule.expr)
    if found is None:
        raise Refusal(f"{role} `{spelled}` is not defined in a module of this run")
    path, name = found
    other = run.model(path)
    if other is None:
        raise Refusal(f"{role} `{spelled}` comes from {path}, which cannot be parsed")
    bindings = other.index.module_scope.bindings.get(name, [])
    if len(bindings) != 1 or bindings[0].kind != "def":
        raise Refusal(f"{role} `{name}` is not a function defined once at the top level of {path}")
    node = bindings[0].node
    check_not_generator(role, node)
    if any(isinstance(n.ctx, ast.Load) for n in other.index.names(name)) or other.index.attributes(name):
        raise Refusal(f"{role} `{name}` is also used in {path}, and the rewrite changes {changes}")
    if isinstance(rule.expr, ast.Name):
        _check_only_registered(model, rule.expr.id, registration, f"{role} `{spelled}`", changes, attributes=False)
    elif any(n not in _inside(registration) for n in model.index.attributes(name)):
        raise Refusal(f"{role} `{spelled}` is also used outside `defvjp` here, and the rewrite changes {changes}")
    for other_d in model.derivatives:
        if other_d is not d and any(r is not None and r.expr is not None and model.index.qualname(r.expr) == qualname
                                    for r in (other_d.rule("fwd"), other_d.rule("bwd"))):
            raise shared_with(other_d)
    return RuleFunction(rule.expr, node, name), other, path, _uses_in_other_files(run, name, path, primal)  # type: ignore[arg-type]


def _inside(node: ast.AST) -> Set[ast.AST]:
    return set(ast.walk(node))


def _check_only_registered(model: FileModel, name: str, registration: ast.AST, what: str, changes: str,
                           attributes: bool) -> None:
    inside = _inside(registration)
    uses: Iterable[ast.AST] = [n for n in model.index.names(name) if isinstance(n.ctx, ast.Load)]
    if attributes:
        uses = [*uses, *model.index.attributes(name)]
    if any(n not in inside for n in uses):
        raise Refusal(f"{what} is also called or referenced outside `defvjp`, and the rewrite changes {changes}")


def _module_names(path: Path) -> Tuple[str, ...]:
    """The names a file's module goes by in an import's last component: its own, and its
    package's (which may re-export it)."""
    own = path.parent.name if path.stem == "__init__" else path.stem
    return (own, path.parent.name) if path.stem != "__init__" else (own,)


def _uses_in_other_files(run: RunFiles, name: str, defined: Path, primal: Path) -> List[Tuple[Path, str]]:
    """The files of the run other than `defined` and `primal` that use the rule `name`, read as
    `named_elsewhere.uses` reads them: imported, called or read as an attribute of its module,
    of the primal's module (which imports it) or of their packages; a file with its own function
    of that name is not a use. (file, "calls"/"imports"/"names"), in the run's order."""
    modules = tuple(dict.fromkeys(_module_names(defined) + _module_names(primal)))
    found = []
    for path in run.mentioning(name):
        if path in (defined, primal):
            continue
        try:
            data = run.read(path)
        except OSError:
            found.append((path, "names"))  # unreadable: assume the worst
            continue
        verb = strongest_use(data, modules, name)
        if verb:
            found.append((path, verb))
    return found
