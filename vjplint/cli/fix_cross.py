"""The cross-module pass of `vjplint --fix --unsafe-fixes` (and `--diff`): rewrite the
custom_vjps whose fwd/bwd live in another file of the run, verify them with `--verify`, and
write each group of files that changed together atomically (all or none)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import NoAutomaticFix
from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.syntax.source import DecodedSource, decode, encode
from vjplint.fixes.elsewhere import fix_elsewhere, offered_elsewhere
from vjplint.fixes.named_elsewhere import UNSAFE_FIX, OtherFiles, mark_unsafe, named_in_others, residual_plans, targets_in


@dataclass
class CrossOutcome:
    new_texts: Dict[Path, str] = field(default_factory=dict)  # what --diff starts from (nothing written)
    written: List[Path] = field(default_factory=list)
    fixed: Dict[Path, List[Tuple[int, int]]] = field(default_factory=dict)  # primal -> moved parameters' positions


def cross_module_hint(outcomes) -> str:
    """Without --unsafe-fixes: the line saying which cross-module rewrites it would add ("" if none)."""
    from vjplint.fixes.cross_module import plan_run
    from vjplint.project.modules import RunModules

    candidates = {Path(o.path) for o in outcomes  # `unfixable` VJP101: not rewritten across modules either
                  if o.config.fix_allowed("VJP101")
                  and any(d.code == "VJP101" and d.fix is None for d in o.result.diagnostics)}
    if not candidates:
        return ""
    configs = {Path(o.path): o.config for o in outcomes if str(o.path).endswith(".py")}
    displays = {Path(o.path): o.display for o in outcomes}
    result = plan_run(list(configs.items()), lambda p: decode(p.read_bytes()).text, RunModules(configs),
                      candidates=candidates, facts={Path(o.path): o.facts for o in outcomes})
    if not result.plans:
        return ""
    names = ", ".join(f"`{cp.plan.name}` ({displays.get(cp.primal, cp.primal)})" for cp in result.plans)
    n = len(result.plans)
    return (f"vjplint: {n} rewrite{'s' if n != 1 else ''} across modules (fwd/bwd in another file) "
            f"can be enabled with --unsafe-fixes: {names}")


def say_cross_module_fixes(outcomes) -> int:
    """A VJP101 whose fwd/bwd come from another module says "no automatic fix" when its file is
    linted alone; when the run holds that module and `--fix --unsafe-fixes` would rewrite both
    files (the cross-module plan succeeds), its message says so instead, naming the files, and,
    when a third file of the run uses fwd or bwd (a test calling `shift_fwd`), ends with
    "(unsafe fix: clipops/api.py calls `shift_fwd`, and the rewrite changes fwd's return)", as an
    in-file fix says it (`vjplint.fixes.named_elsewhere`). Returns how many findings got such a
    fix: hidden unsafe fixes, which the summary counts."""
    candidates = {Path(o.path) for o in outcomes  # `unfixable` VJP101: not rewritten across modules either
                  if o.config.fix_allowed("VJP101")
                  and any(d.code == "VJP101" and d.fix is None and isinstance(d.evidence, NoAutomaticFix)
                         for d in o.result.diagnostics)}
    if not candidates:
        return 0
    from vjplint.fixes.cross_module import plan_run  # libcst: only when such a finding exists
    from vjplint.project.modules import RunModules

    configs = {Path(o.path): o.config for o in outcomes if str(o.path).endswith(".py")}
    displays = {Path(o.path): o.display for o in outcomes}
    try:
        result = plan_run(list(configs.items()), lambda p: decode(p.read_bytes()).text, RunModules(configs),
                          candidates=candidates, facts={Path(o.path): o.facts for o in outcomes})
    except Exception:  # the plain message stays: it is what one file's lint knows
        return 0
    by_primal = {Path(o.path): o for o in outcomes}
    hidden = 0
    for cp in result.plans:
        outcome = by_primal.get(cp.primal)
        if outcome is None:
            continue
        files = sorted({str(displays.get(path, path)) for _, path in cp.rule_files if path != cp.primal})
        roles = " and ".join(role for role, path in cp.rule_files if path != cp.primal)
        where = ", ".join(files)
        elsewhere = cp.elsewhere_reason(lambda path: str(displays.get(path, path)))
        for d in outcome.result.diagnostics:
            if d.code == "VJP101" and d.fix is None and isinstance(d.evidence, NoAutomaticFix) and \
                    (d.location.row, d.location.column) in cp.anchors:
                d.message = (d.message[:d.evidence.head] + f" (fix across modules with --unsafe-fixes: "
                             f"{roles} {'are' if ' and ' in roles else 'is'} in {where}, also in this run; "
                             f"`vjplint --fix --unsafe-fixes` rewrites both files together)")
                if elsewhere:  # a third file of the run uses fwd/bwd: said as an in-file fix says it
                    d.message += f"{UNSAFE_FIX}{elsewhere})"
                hidden += 1
    return hidden


def cross_module_pass(args, outcomes, errors: List[str]) -> CrossOutcome:
    """Plan, verify (--verify) and write (unless --diff) the run's cross-module rewrites."""
    from vjplint.fixes.cross_module import plan_run, without

    decoded: Dict[Path, Tuple[bytes, DecodedSource]] = {}

    def read(path: Path) -> str:
        if path not in decoded:
            data = path.read_bytes()
            decoded[path] = (data, decode(data))
        return decoded[path][1].text

    def text_of(path: Path) -> Optional[str]:
        try:
            return read(path)
        except Exception:
            return None

    configs = {Path(o.path): o.config for o in outcomes if str(o.path).endswith(".py")}
    displays = {str(Path(o.path)): o.display for o in outcomes}

    def shown(message: str) -> str:  # paths as the rest of the output shows them
        for path in sorted(displays, key=len, reverse=True):
            message = message.replace(path, displays[path])
        return message
    from vjplint.project.modules import RunModules

    # Only files where VJP101 found an array but offered no fix can hold such a derivative.
    candidates = {Path(o.path) for o in outcomes  # `unfixable` VJP101: not rewritten across modules either
                  if o.config.fix_allowed("VJP101")
                  and any(d.code == "VJP101" and d.fix is None for d in o.result.diagnostics)}
    if not candidates:
        return CrossOutcome()
    facts = {Path(o.path): o.facts for o in outcomes}
    result = plan_run(list(configs.items()), read, RunModules(configs), candidates=candidates, facts=facts)
    if args.verify and result.plans:
        dropped = _verify(result, configs, errors, shown, facts)
        if dropped:
            result = without(result, dropped, text_of)
    if args.show_fixes or args.verify:
        for path, name, why in result.refused:
            print(shown(f"vjplint: fix: {path}: {name}: not rewritten across modules: {why}"), file=sys.stderr)
    outcome = CrossOutcome()
    for cp in result.plans:
        outcome.fixed.setdefault(cp.primal, []).extend(cp.anchors)
    if args.diff:
        outcome.new_texts = {path: new for path, (_, new) in result.texts.items()}
        return outcome
    from vjplint.fixes.multi_write import GroupWriteError, write_group

    for group in result.groups():
        items = [(path, decoded[path][0], encode(result.texts[path][1], decoded[path][1])) for path in group]
        try:
            write_group(items)
        except (GroupWriteError, UnicodeEncodeError) as exc:
            names = ", ".join(str(p) for p in group)
            errors.append(shown(f"cannot write the files rewritten together ({names}); none of them was changed: {exc}"))
            for cp in result.plans:
                if cp.primal in group:
                    outcome.fixed.pop(cp.primal, None)
            continue
        outcome.written.extend(group)
    return outcome


def _verify(result, configs: Dict[Path, Config], errors: List[str], shown,
            facts: Dict[Path, RunFacts]) -> Set[Tuple[Path, str]]:
    """Prove each primal file's rewrites on JAX with its rules' files as companions; the
    (primal, function) pairs not verified are returned (their files keep their code)."""
    from vjplint.verify.api import verify_rewrites

    dropped: Set[Tuple[Path, str]] = set()
    by_primal: Dict[Path, list] = {}
    for cp in result.plans:
        by_primal.setdefault(cp.primal, []).append(cp)
    for primal, plans in by_primal.items():
        config = configs.get(primal, Config())
        old, new = result.texts.get(primal, (None, None))
        if old is None:
            dropped.update((primal, cp.plan.name) for cp in plans)
            continue
        companions = sorted({(str(p), *result.texts[p]) for cp in plans for p in cp.parts
                             if p != primal and p in result.texts})
        functions = [{"name": cp.plan.name, "moved_positions": list(cp.plan.moved)} for cp in plans]
        reports = verify_rewrites(str(primal), old, new, functions, config, companions=companions,
                                  facts=facts.get(primal, NO_FACTS))
        if any(getattr(r, "missing_jax", False) for r in reports):
            from vjplint.install_hint import install_hint

            errors.append(shown(f"--verify needs JAX: {install_hint('verify')}; nothing was written for {primal}"))
            dropped.update((primal, cp.plan.name) for cp in plans)
            continue
        for r in reports:
            where = f" on {r.device}" if r.device and r.status == "verified" else ""
            others = ", ".join(c[0] for c in companions)
            print(shown(f"vjplint: verify: {primal}:{r.line}: {r.function}: {r.status}{where} (rewritten with "
                        f"{others}){': ' + r.reason if r.reason else ''}"), file=sys.stderr)
            if r.status != "verified":
                dropped.add((primal, r.function.rsplit(".", 1)[-1]))
    return dropped


def fixed_diagnostics(outcomes, fixed: Dict[Path, List[Tuple[int, int]]]) -> Dict[str, list]:
    """display -> the VJP101 diagnostics (from the run before the rewrite) that the cross-module
    rewrites fixed: the one on each moved parameter."""
    out: Dict[str, list] = {}
    for o in outcomes:
        anchors = set(fixed.get(Path(o.path), ()))
        found = [d for d in o.result.diagnostics
                 if d.code == "VJP101" and (d.location.row, d.location.column) in anchors]
        if found:
            out[o.display] = found
    return out


def named_elsewhere(outcomes) -> Dict[Path, Dict[str, str]]:
    """For each file of the run with an in-file residual-plus-None fix on offer: the custom_vjps
    (by name) whose fwd or bwd another file of the run names, with the reason
    (`vjplint.fixes.named_elsewhere`, which the Language Server asks about its workspace too)."""
    contents: Dict[Path, bytes] = {}

    def reader(path: Path):
        def read() -> bytes:
            if path not in contents:
                contents[path] = path.read_bytes()
            return contents[path]
        return read

    others = None  # the run's files, made when a first fix is on offer (most runs have none)
    found: Dict[Path, Dict[str, str]] = {}
    for o in outcomes:
        plans = residual_plans(o.result.diagnostics)
        if not plans:
            continue
        if others is None:
            others = OtherFiles([(Path(p.path), p.display, reader(Path(p.path))) for p in outcomes])
        path = Path(o.path)
        try:
            text = decode(reader(path)()).text
        except Exception:  # the fix itself reports what it cannot read
            continue
        reasons = named_in_others(path, text, o.config, plans, others, o.facts)
        if reasons:
            found[path] = reasons
    return found


def refuse_named_elsewhere(diagnostics, reasons: Dict[str, str], text: Optional[str] = None,
                           config: Optional[Config] = None, facts: RunFacts = NO_FACTS) -> None:
    """The fixes of the custom_vjps in `reasons` become unsafe, and their findings say why: plain
    `--fix` leaves them, `--unsafe-fixes` applies them (the other module's use is the user's to
    update). `text`: the file the diagnostics are of (an edit fix is matched by its row there)."""
    if text is None:
        mark_unsafe(diagnostics, reasons)
    else:
        mark_unsafe(diagnostics, reasons, targets_in(text, config or Config(), facts))


def say_named_elsewhere(outcomes) -> Dict[Path, Dict[str, str]]:
    """`named_elsewhere`, applied to the run's findings (what `check`, `--fix` and `--diff` show)."""
    found = named_elsewhere(outcomes)
    if not found:
        return found
    for o in outcomes:
        if Path(o.path) in found:
            try:
                text: Optional[str] = decode(Path(o.path).read_bytes()).text
            except Exception:  # (named_elsewhere read it a moment ago)
                text = None
            refuse_named_elsewhere(o.result.diagnostics, found[Path(o.path)], text, o.config, o.facts)
    return found


@dataclass
class ElsewhereOutcome:
    new_texts: Dict[Path, str] = field(default_factory=dict)  # what --diff starts from (nothing written)
    written: List[Path] = field(default_factory=list)
    fixed: Dict[str, list] = field(default_factory=dict)  # display -> its diagnostics whose fix was written


def elsewhere_pass(args, outcomes, errors: List[str], unsafe: bool) -> ElsewhereOutcome:
    """The fixes of findings in rules defined in another file of the run (`Diagnostic.elsewhere`):
    each such file rewritten once, the files written together (all or none) unless --diff."""
    found = [(o.display, d) for o in outcomes for d in o.result.diagnostics
             if offered_elsewhere(d, unsafe) is not None and o.config.fix_allowed(d.code)]
    if not found:
        return ElsewhereOutcome()
    if getattr(args, "verify", False):  # the harness proves one file's rewrite: these are not proven, so not made
        if not args.quiet:
            print(f"vjplint: verify: {len(found)} fix{'es' if len(found) != 1 else ''} of rules defined in another "
                  f"file left unmade (--verify does not prove them; run --fix without --verify to make them)",
                  file=sys.stderr)
        return ElsewhereOutcome()
    paths = {o.display: Path(o.path) for o in outcomes}
    decoded: Dict[str, Tuple[bytes, DecodedSource]] = {}

    def read(display: str) -> Optional[str]:
        path = paths.get(display)
        if path is None:  # a file outside this run: never edited
            return None
        try:
            data = path.read_bytes()
            decoded[display] = (data, decode(data))
        except Exception:
            return None
        return decoded[display][1].text

    result = fix_elsewhere(found, unsafe, read)
    if args.show_fixes:
        for target, why in result.refused:
            print(f"vjplint: fix: {target}: the fixes of rules defined there were not made: {why}", file=sys.stderr)
    outcome = ElsewhereOutcome()
    if not result.texts:
        return outcome
    if args.diff:
        outcome.new_texts = {paths[t]: new for t, (_, new) in result.texts.items()}
        outcome.fixed = result.fixed
        return outcome
    from vjplint.fixes.multi_write import GroupWriteError, write_group

    targets = sorted(result.texts)
    try:
        write_group([(paths[t], decoded[t][0], encode(result.texts[t][1], decoded[t][1])) for t in targets])
    except (GroupWriteError, UnicodeEncodeError) as exc:
        errors.append(f"cannot write the files holding rules registered elsewhere ({', '.join(targets)}); "
                      f"none of them was changed: {exc}")
        return outcome
    outcome.written = [paths[t] for t in targets]
    outcome.fixed = result.fixed
    return outcome
