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
one file with libcst (`CrossPlan.edits`, `rewrite_parts`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper

from vjplint.plans.residual_plan import Plan, Refusal, bwd_return_annotation, fwd_return_annotation, _fresh, _is_generator, _jit_static, _loads, _names_in, _own_returns, _plan_bwd, loc_of, _plan_creation, _plan_fwd, _span, _truthy_or_unknown
from vjplint.diagnostics import FixContext, FixPlan, Rewrite
from vjplint.fixes.apply import _return_annotations
from vjplint.fixes.edits import diff_edits
from vjplint.fixes.residual_plus_none import _drop_unused_imports, _Rewriter
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
        """The rewrite of the file at `context.path` making the parts of `plans` it holds (libcst:
        `rewrite_parts`); raises LookupError when a planned node is not found. `alone` is not offered: the files of a cross-module rewrite change together."""
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


class _PartRewriter(_Rewriter):
    """The in-file rewriter limited to the parts of each plan this file holds."""

    def __init__(self, parts: Sequence[Tuple[Plan, Tuple[str, ...]]]) -> None:
        super().__init__([p for p, _ in parts])
        def roles(plan: Plan) -> Tuple[str, ...]:  # the plan's own parts here (plans matched by identity)
            return next(r for p, r in parts if p is plan)

        self.creations = {k: p for k, p in self.creations.items() if "creation" in roles(p)}
        self.defs = {k: (role, p) for k, (role, p) in self.defs.items() if role in roles(p)}
        self.returns = {k: v for k, v in self.returns.items() if v[0] in roles(v[1])}


def rewrite_parts(text: str, parts: Sequence[Tuple[Plan, Tuple[str, ...]]]) -> str:
    """`text` with each plan's parts (`creation`, `fwd`, `bwd`) rewritten; raises LookupError
    when a planned node is not found."""
    module = cst.parse_module(text)
    rewriter = _PartRewriter(parts)
    rewritten = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter)
    missing = rewriter.missing()
    if missing:
        raise LookupError(f"could not locate {', '.join(missing)} for the residual-plus-None fix")
    cleanup = frozenset().union(*(p.cleanup_names for p, roles in parts if "creation" in roles))
    if cleanup:
        rewritten = _drop_unused_imports(module, rewritten, cleanup)
    code = rewritten.code
    annotated = [replace(p, annotations=tuple(a for a in p.annotations
                                              if any(getattr(p, role).name == a[0] for role in roles if role in ROLES)))
                 for p, roles in parts]
    code = _return_annotations(code, annotated)
    if text.endswith("\r") and not code.endswith(("\r", "\n")):
        code += "\r"
    return code


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
    moved = tuple(sorted(set(moved)))
    sig = d.signature
    if d.kind != "vjp" or d.primal is None or sig is None:
        raise Refusal("the primal function is not resolved in this file")
    if not moved or any(p not in d.nondiff for p in moved):
        raise Refusal("the moved positions are not nondiff positions")
    if sig.vararg is not None:
        raise Refusal(f"`{d.name}` takes *{sig.vararg}, so output positions depend on each call")
    if d.nondiff_unresolved:
        raise Refusal("nondiff_argnums is not a literal this tool can read")
    if len(d.registrations) != 1 or d.registrations[0].method != "defvjp" or d.registrations[0].as_decorator:
        raise Refusal("there is not exactly one `defvjp(fwd, bwd)` call in this file")
    registration = d.registrations[0]
    if _truthy_or_unknown(registration.keywords.get("symbolic_zeros")):
        raise Refusal("symbolic_zeros=True wraps differentiable fwd arguments in CustomVJPPrimal records")
    resolved: Dict[str, Tuple[RuleFunction, FileModel, Path]] = {}
    used: Dict[Path, List[Tuple[str, str, str]]] = {}  # another file of the run -> the rules it uses
    for role in ROLES:
        rule = d.rule(role)
        rule = rule.as_registered() if rule is not None else None
        if rule is None:
            raise Refusal("`defvjp` does not name both fwd and bwd")
        if rule.bound_positional or rule.bound_keywords:
            raise Refusal(f"{role} is a functools.partial")
        function, rule_model, rule_path, found = _resolve(role, rule, primal, model, d, registration.node, run)
        resolved[role] = (function, rule_model, rule_path)
        for path, verb in found:
            used.setdefault(path, []).append((role, function.name, verb))
    (fwd, fwd_model, fwd_path), (bwd, bwd_model, bwd_path) = resolved["fwd"], resolved["bwd"]
    assert fwd.node is not None and bwd.node is not None
    if fwd.node is bwd.node:
        raise Refusal("fwd and bwd are the same function")
    static = _jit_static(model, d, moved)
    if static:
        raise Refusal(f"`{sig.positional[static[0][0]]}` is marked static in {static[0][1]}, so callers pass a "
                      f"Python value there, which a differentiable position rejects")
    elsewhere = sorted({str(p) for _, _, p in resolved.values() if p != primal})
    unsafe: List[str] = [f"fwd/bwd are defined in {', '.join(elsewhere)}; callers outside this run's files "
                         f"were not searched"]
    used_by = None
    if used:
        first = min(used, key=str)
        used_by = (first, tuple(used[first]))

        unsafe.append(reason(str(first), used[first]))
    creation, collapse, keywords, cleanup = _plan_creation(model, d, moved, sig)
    if d.is_alias:
        unsafe.append(f"`{d.name}` is made by an in-house wrapper")
    fwd_plan, fwd_moved, fwd_capture = _plan_fwd(fwd_model, d, fwd, moved, sig, unsafe)
    nondiff = list(d.nondiff)
    bwd_drop = tuple(nondiff.index(p) for p in moved)
    bwd_sig = bwd.signature
    assert bwd_sig is not None
    if bwd_sig.vararg is not None:
        raise Refusal(f"bwd takes *{bwd_sig.vararg}")
    res_index = len(nondiff)
    if len(bwd_sig.positional) < res_index + 2:
        raise Refusal(f"bwd takes {len(bwd_sig.positional)} positional parameters, not {res_index + 2} (see VJP305)")
    bwd_moved = tuple(bwd_sig.positional[i] for i in bwd_drop)
    old_res = bwd_sig.positional[res_index]
    residuals = [r.elts[1] if isinstance(r, (ast.Tuple, ast.List)) and len(r.elts) == 2 else None
                 for r in _own_returns(fwd.node)]
    res_used = old_res != "_" and _loads(bwd.node, old_res)
    if all(isinstance(r, ast.Constant) and r.value is None for r in residuals) and not res_used:
        mode = "single" if len(moved) == 1 else "tuple"
    else:
        mode = "append"
    taken = _names_in(bwd.node)
    if mode == "single":
        res_name, unpack = bwd_moved[0], ()
    else:
        res_name = _fresh(("res", "residuals", "res_"), taken - ({old_res} if mode == "tuple" else set()))
        unpack = bwd_moved if mode == "tuple" else (old_res, *bwd_moved)
    remaining = [p for p in range(len(sig.positional)) if p not in d.nondiff or p in moved]
    none_slots = tuple(remaining.index(p) for p in moved)
    d_old = len(sig.positional) - len(nondiff)
    bwd_plan = _plan_bwd(bwd_model, d, bwd, none_slots, d_old, unsafe)
    plan = Plan(
        name=d.name, moved=moved, creation=creation, collapse=collapse, keywords=keywords, cleanup_names=cleanup,
        fwd=fwd_plan, fwd_moved=fwd_moved, fwd_capture=fwd_capture, bwd=bwd_plan, bwd_drop=bwd_drop,
        bwd_res_index=res_index, mode=mode, res_name=res_name, unpack=unpack, none_slots=none_slots, d_old=d_old,
        spans=tuple(_span(n) for n in (d.creation, fwd.node, bwd.node)), unsafe_reasons=tuple(dict.fromkeys(unsafe)),
        # bwd's and fwd's `-> tuple[...]`, each read in its own file (maxtext's pre_op_bwd kept
        # `-> tuple[jax.Array, common.MhcWeights]` over a 3-entry return)
        annotations=bwd_return_annotation(bwd_model, bwd.node, none_slots, d_old)
        + fwd_return_annotation(fwd_model, fwd.node, fwd_moved, mode))
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
        if len(model.index.lookup(rule.name, model.index.scope_of(rule.expr))) > 1:
            raise Refusal(f"{role} `{rule.name}` is bound more than once, so it is unclear which one to rewrite")
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
    if _is_generator(node):
        raise Refusal(f"{role} is a generator")
    if any(isinstance(n.ctx, ast.Load) for n in other.index.names(name)) or other.index.attributes(name):
        raise Refusal(f"{role} `{name}` is also used in {path}, and the rewrite changes {changes}")
    if isinstance(rule.expr, ast.Name):
        _check_only_registered(model, rule.expr.id, registration, f"{role} `{spelled}`", changes, attributes=False)
    elif any(n not in _inside(registration) for n in model.index.attributes(name)):
        raise Refusal(f"{role} `{spelled}` is also used outside `defvjp` here, and the rewrite changes {changes}")
    for other_d in model.derivatives:
        if other_d is not d and any(r is not None and r.expr is not None and model.index.qualname(r.expr) == qualname
                                    for r in (other_d.rule("fwd"), other_d.rule("bwd"))):
            raise Refusal(f"fwd/bwd are shared with `{other_d.name}`, which would break")
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
