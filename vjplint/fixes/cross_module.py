"""The residual-plus-None rewrite across modules: for each custom_vjp of the run whose fwd/bwd
live in another file of the run, plan the edits of every file involved (`cross_plan`), rewrite
each file once with the parts it holds, and group the files that must change together.

Pure: texts in, texts out. `vjplint.cli.fix` verifies the groups (with `--verify`) and writes
each group atomically (`vjplint.fixes.multi_write`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.fixes.apply import FileContext
from vjplint.fixes.cross_plan import CrossPlan, RunFiles, needs_other_files, plan_across
from vjplint.plans.residual_plan import Refusal
from vjplint.model.file_model import FileModel
from vjplint.syntax.source import SourceError, parse
from vjplint.facts.collect import Recognizer, collect
from vjplint.facts.infer import Hints
from vjplint.syntax.positions import source_lines
from vjplint.fixes.noqa import apply_line_edit, noqa_edit
from vjplint.plans.residual_plan import KEPT_NONDIFF

MARKERS = (b"defvjp", b"nondiff_arg")


@dataclass
class CrossFix:
    """What the run's cross-module rewrites do: new texts, the files that go together."""

    texts: Dict[Path, Tuple[str, str]] = field(default_factory=dict)  # path -> (old, new)
    plans: List[CrossPlan] = field(default_factory=list)
    refused: List[Tuple[Path, str, str]] = field(default_factory=list)  # (primal file, function, why)

    def groups(self) -> List[List[Path]]:
        """The files that must be written together: connected by a plan."""
        parent: Dict[Path, Path] = {}

        def root(p: Path) -> Path:
            while parent.setdefault(p, p) != p:
                p = parent[p]
            return p

        for cp in self.plans:
            files = list(cp.parts)
            for other in files[1:]:
                parent[root(other)] = root(files[0])
        groups: Dict[Path, List[Path]] = {}
        for path in self.texts:
            groups.setdefault(root(path), []).append(path)
        return [sorted(g) for g in groups.values()]


def plan_run(files: Sequence[Tuple[Path, Config]], read: Callable[[Path], str], modules,
             exclude: Set[Tuple[Path, str]] = frozenset(),  # type: ignore[assignment]
             candidates: Optional[Set[Path]] = None,
             facts: Optional[Mapping[Path, RunFacts]] = None) -> CrossFix:
    """Plan and rewrite every cross-module residual fix of the run (`files`: each file with its
    settings; `read`: a file's decoded text; `modules`: the run's modules by dotted name, a
    `vjplint.project.modules.RunModules`). Plans in `exclude` ((primal, function)) are skipped;
    `candidates` limits the primals looked at (the files whose lint found such a derivative);
    `facts`: what the run derives about each file (vjplint.model.run_facts), beside its settings."""
    configs = {Path(p): c for p, c in files}
    texts: Dict[Path, Optional[str]] = {}

    def text_of(path: Path) -> Optional[str]:
        if path not in texts:
            try:
                texts[path] = read(path)
            except (OSError, SourceError, UnicodeDecodeError):
                texts[path] = None
        return texts[path]

    def load(path: Path) -> Optional[FileModel]:
        text = text_of(path)
        if text is None:
            return None
        config = configs.get(path, Config())
        try:
            module = parse(text)
        except SourceError:
            return None
        recognizer = Recognizer.for_run(config, (facts or {}).get(path, NO_FACTS))
        return collect(module, source_lines(text), recognizer)

    def raw(path: Path) -> bytes:
        text = text_of(path)
        return text.encode("utf-8", "surrogatepass") if text is not None else b""

    run = RunFiles(modules, load, raw)
    result = CrossFix()
    for path, config in configs.items():
        if path.suffix != ".py" or (candidates is not None and path not in candidates):
            continue
        data = raw(path)
        if not all(marker in data for marker in MARKERS):
            continue
        model = run.model(path)
        if model is None:
            continue
        hints = Hints(config.array_names, config.static_names)
        for d in model.derivatives:
            if not needs_other_files(d) or (path, d.name) in exclude:
                continue
            verdicts = model.facts.verdicts(d, hints)
            moved = tuple(v.position for v in verdicts if v.level == "array")
            if not moved:
                continue
            static_use = next((e for v in verdicts if v.position in moved for e in v.evidence
                               if e.from_usage and e.kind == "static"), None)
            try:
                if static_use is not None:
                    raise Refusal(f"it {static_use.reason}, which fails once the value is traced as a residual")
                cp = plan_across(path, model, d, moved, run)
            except Refusal as exc:
                result.refused.append((path, d.name, str(exc)))
                continue
            if any(_overlap(cp, other) for other in result.plans):
                result.refused.append((path, d.name, "its code overlaps another rewrite of this run"))
                continue
            result.plans.append(cp)
    _rewrite_all(result, text_of)
    return result


def _overlap(a: CrossPlan, b: CrossPlan) -> bool:
    for path in set(a.parts) & set(b.parts):
        if any(s1 < e2 and s2 < e1 for s1, e1 in a.spans_in(path) for s2, e2 in b.spans_in(path)):
            return True
    return False


def _rewrite_all(result: CrossFix, text_of: Callable[[Path], Optional[str]]) -> None:
    """Rewrite every file once; a file that fails drops the plans touching it (and their other
    files), until every file left rewrites and parses."""
    while True:
        per_file: Dict[Path, List[CrossPlan]] = {}
        for cp in result.plans:
            for path in cp.parts:
                per_file.setdefault(path, []).append(cp)
        result.texts = {}
        failed: Optional[Tuple[Path, str]] = None
        for path, held in per_file.items():
            old = text_of(path)
            try:
                if old is None:
                    raise OSError("cannot be read")
                new = CrossPlan.edits(old, held, FileContext(path=path)).text or ""
                parse(new)
                new = _mark_kept_nondiff(new, [cp for cp in held if dict(cp.rule_files).get("bwd") == path])
            except Exception as exc:  # a failing rewrite loses its plans, never a file
                failed = (path, f"the rewrite of {path} failed: {type(exc).__name__}: {exc}")
                break
            if new != old:
                result.texts[path] = (old, new)
        if failed is None:
            return
        path, why = failed
        for cp in [cp for cp in result.plans if path in cp.parts]:
            result.plans.remove(cp)
            result.refused.append((cp.primal, cp.plan.name, why))


def _mark_kept_nondiff(text: str, plans: Sequence[CrossPlan]) -> str:
    """`# noqa: VJP602` on the `None` entries the rewrite wrote into bwd's returns in this file
    (the rules' file), for plans whose moved arguments VJP602 would read as forgotten cotangents
    (`Plan.marked`): what the in-file rewrite marks (vjplint.fixes.apply._mark_kept_nondiff).
    VJP602 reads these rules where they are registered (vjplint.facts.crossmodule.Graft) and
    honours a `# noqa` on their own line."""
    rows: Set[int] = set()
    plans = [cp for cp in plans if cp.plan.marked and cp.plan.bwd.name]
    if not plans:
        return text
    tree = parse(text)
    for cp in plans:
        for fn in tree.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == cp.plan.bwd.name):
                continue
            for ret in ast.walk(fn):
                if isinstance(ret, ast.Return) and isinstance(ret.value, (ast.Tuple, ast.List)):
                    for slot in cp.plan.none_slots:
                        if slot < len(ret.value.elts) and isinstance(ret.value.elts[slot], ast.Constant) \
                                and ret.value.elts[slot].value is None:
                            rows.add(ret.value.elts[slot].lineno)
    for row in sorted(rows):
        edit = noqa_edit(text, source_lines(text), row, KEPT_NONDIFF)
        if edit is not None:
            text = apply_line_edit(text, edit)
    return text


def without(result: CrossFix, dropped: Set[Tuple[Path, str]], text_of: Callable[[Path], Optional[str]]) -> CrossFix:
    """`result` less the plans in `dropped` ((primal, function)), rewritten again."""
    kept = CrossFix(plans=[cp for cp in result.plans if (cp.primal, cp.plan.name) not in dropped],
                    refused=list(result.refused))
    _rewrite_all(kept, text_of)
    return kept
