"""lint_source(): bytes or text in, diagnostics out. The one core API every surface calls."""

from __future__ import annotations

import ast
import bisect
import functools
import gc
import re
from itertools import accumulate
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

from vjplint.settings.config import Config, _matches
from vjplint.diagnostics import Diagnostic, Position, Severity
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.lint.session import LintSession
from vjplint.syntax.positions import lines_with_endings, node_range, source_lines
from vjplint.syntax.source import DecodedSource, SourceError, decode, gc_paused, parse, skipped_generic_statements
from vjplint.syntax.names import CALLBACK_CODES, CALLBACK_NAMES, DIFFERENTIATION_PATTERN, EXTENDED_NAMES, PREFILTER_NAMES
from vjplint.syntax.noqa import CODE, NOQA, parse_noqa  # noqa: F401 - the engine's users read them here too
from vjplint.syntax.text_spans import TextIndex, mentions_in_code, prefix_groups

if TYPE_CHECKING:  # the engine imports the model and the rules when it first lints
    from vjplint.lint.chunks import Chunk
    from vjplint.model.file_model import FileModel
    from vjplint.rules.base import Rule, RuleOptions

SKIP_FILE = re.compile(r"#\s*vjplint\s*:\s*skip-file\b")
# The grouped lint collects the young generation after this many characters of families: their
# models are cyclic garbage, and the collector is paused for a lint (`gc_paused`). Only what was
# made since the last collection is scanned, so it costs about as much at any size.
GROUPED_COLLECT_CHARS = 250_000
# Families are linted together up to this many characters (`_batches`).
GROUPED_BATCH_CHARS = 8_000


@dataclass
class LintResult:
    """What linting one file gives."""

    diagnostics: List[Diagnostic] = field(default_factory=list)
    decoded: Optional[DecodedSource] = None
    errors: List[str] = field(default_factory=list)  # internal errors: reported, never raised
    analysed: bool = False  # False when the prefilter or skip-file short-circuited
    # The rules' findings before selection, noqa and sorting (`_finish`), when the rules ran:
    # what vjplint.lint.incremental caches per family of statements.
    findings: Optional[List[Diagnostic]] = None


@dataclass(frozen=True)
class RuleSplit:
    """Rules another process runs on the same text meanwhile (the Language Server's lint helper,
    vjplint.server.lint_helper), so that a big document's first lint uses two cores. `codes`:
    the rules it runs (`lint_source(..., rules=codes)` there); `collect()`: their findings and
    internal errors once it is done, or None when it failed (they then run here, after the rest).
    A rule's findings depend only on the module and the rule, so the union is the whole lint's."""

    codes: FrozenSet[str]
    collect: Callable[[], Optional[Tuple[List[Diagnostic], List[str]]]]


def prefilter_names(config: Config, facts: RunFacts = NO_FACTS,
                    session: Optional[LintSession] = None) -> Tuple[bytes, ...]:
    """The names a finding needs, with the last names of the settings' aliases and of the run's
    inferred ones. Kept in `session`'s memo by the aliases (asked once per file by the engine,
    the fix loop and the workers); computed afresh without a session."""
    key = (config.custom_vjp_aliases, config.custom_jvp_aliases, facts.vjp_aliases, facts.jvp_aliases)
    known = session.prefilters.get(key) if session is not None else None
    if known is not None:
        return known
    # Aliases' last names, each once: inferred wrappers (vjplint.project.index) add many spellings of few names.
    extra = [name.rsplit(".", 1)[-1].encode() for name, _ in (*config.custom_vjp_aliases, *config.custom_jvp_aliases,
                                                               *facts.vjp_aliases, *facts.jvp_aliases)]
    names = tuple(dict.fromkeys(PREFILTER_NAMES + tuple(extra)))
    if session is not None:
        session.prefilters[key] = names
    return names


# What VJP370 (the one rule the host-callback names are prefilter names for) needs besides them.
_DIFFERENTIATION = re.compile(DIFFERENTIATION_PATTERN.encode())


def _callbacks_alone(data: bytes, names: Sequence[bytes]) -> bool:
    """Only the host-callback names let these bytes through the prefilter, and they name no
    differentiation: VJP370 cannot fire, and no other rule has a subject (13 files, 396 KB of the
    JAX tree, which were linted for nothing)."""
    return any(n in data for n in CALLBACK_NAMES) and _DIFFERENTIATION.search(data) is None and \
        not may_contain_findings(data, [n for n in names if n not in CALLBACK_NAMES])


def may_contain_findings(data: bytes, names: Sequence[bytes]) -> bool:
    """Whether some name appears as a whole identifier's end (`jax.custom_vjp`, `filter_custom_vjp`,
    not `custom_vjp_call_p`): 19 of the JAX tree's 117 files that hold a name (13 % of their bytes,
    JAX's internals) hold only such longer identifiers. A literal search per group of names that
    share a prefix (`custom_`: four of the ten default names), then a look at the bytes there (a
    regular expression of the names was a third of the test). Bytes with a NUL (UTF-16 or UTF-32
    text, whose names no byte search finds) are always a candidate: decoding them says why the
    file cannot be checked (VJP900), where "All checks passed!" would be a claim about them."""
    if b"\x00" in data:
        return True
    for needle, group in prefix_groups(tuple(names)):
        at = data.find(needle)
        while at >= 0:
            if names_end_at(data, at, group):
                return True
            at = data.find(needle, at + 1)
    return False


def names_end_at(data: bytes, at: int, group: Sequence[bytes]) -> bool:
    """Whether one of `group` starts at `at` and ends an identifier there, as
    `may_contain_findings` counts names (`custom_vjp`, `defjvps`; not `custom_vjp_call_p`)."""
    for name in group:
        if not data.startswith(name, at):
            continue
        end = at + len(name)
        if data[end:end + 1] not in _IDENTIFIER_BYTES or any(
                data.startswith(longer, at) and data[at + len(longer):at + len(longer) + 1]
                not in _IDENTIFIER_BYTES for longer in _EXTENSIONS.get(name, ())):
            return True
    return False


# The bytes that continue an identifier (as the old pattern's `(?![A-Za-z0-9_])`); b"" ends the data.
_IDENTIFIER_BYTES = frozenset(bytes([c]) for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_EXTENSIONS = {name: tuple(e for e in EXTENDED_NAMES if e.startswith(name) and e != name)
               for name in PREFILTER_NAMES}


@gc_paused  # (vjplint.syntax.source.paused_gc: half the CPU of a big file's lint was the collector's)
def lint_source(filename: str, source: Union[str, bytes], config: Config = Config(),
                path: Optional[str] = None, rules: Optional[FrozenSet[str]] = None,
                split: Optional[RuleSplit] = None, keep: Optional[List[object]] = None,
                prefiltered: bool = False, facts: RunFacts = NO_FACTS,
                session: Optional[LintSession] = None) -> LintResult:
    """Lint one file's content. Never raises for bad input: problems become diagnostics.
    `filename` is what diagnostics show; `path`, the file's location on disk (default: `filename`),
    is what `per-file-ignores` match, relative to the configuration's directory. `split`: some of
    the rules run in another process (`RuleSplit`); `rules`: run only these (that process's side:
    its `findings` are theirs, its diagnostics are not the file's). `keep`: the model the rules
    read is appended there, for the caller to free once the diagnostics are out (freeing the
    model of a 10,000-line module takes 15 ms; the Language Server publishes first). `prefiltered`:
    the caller found `may_contain_findings` true of these bytes (a run's parent, for its workers).
    `facts`: what the run derives about this file from its other modules (inferred wrappers,
    cross-module rows; vjplint.model.run_facts). `session`: the run's (vjplint.lint.session): its
    switches, and the slot where the parse is kept for a fix that follows; a fresh one if None."""
    where = config.relative_path(path if path is not None else filename)

    result = LintResult()
    if session is None:
        session = LintSession()
    session.forget_parse()  # another file's parse: no fix of this file reads it
    if isinstance(source, bytes):
        if not prefiltered and not may_contain_findings(source, prefilter_names(config, facts, session)):
            return result
        if _callbacks_alone(source, prefilter_names(config, facts, session)):
            return result
        try:
            decoded = decode(source)
        except SourceError as exc:
            result.diagnostics.append(_syntax_error(filename, exc))
            return _finish(result, config, filename, where, [], set())
    else:
        decoded = DecodedSource(source, "utf-8", False, "\n")
        data = source.encode("utf-8", "surrogatepass")
        if not may_contain_findings(data, prefilter_names(config, facts, session)) or \
                _callbacks_alone(data, prefilter_names(config, facts, session)):
            result.decoded = decoded
            return result
    result.decoded = decoded
    text = decoded.text
    if SKIP_FILE.search(text):
        return result
    index = TextIndex(text)  # the searches of this text, made once for every step below
    if rules is None and split is None and session.groups(
            text, [n.decode() for n in prefilter_names(config, facts, session)], _grafts(facts), index):
        grouped = _lint_grouped(filename, text, config, where, facts, session)
        if grouped is not None:
            grouped.decoded = decoded
            return grouped
    from vjplint.model.file_model import LineTable

    # A table, not a list: the rules' text tests (`FileModel.holds`: 237 over JAX's candidates)
    # join the lines once per file, not once per test (file_model.LineTable)
    lines = LineTable(source_lines(text))
    enabled, partly = enabled_codes(config, session)
    result.analysed = True
    module = None
    if session.focus and not _grafts(facts):  # only the regions that can matter (vjplint.syntax.region_parse); None: parse it whole
        from vjplint.syntax.region_parse import parse_focused

        try:
            module = parse_focused(text, lines, [n.decode() for n in prefilter_names(config, facts, session)], filename, index=index)
        except RecursionError:
            module = None
    focused = module is not None
    try:
        if module is None:
            module = parse(text, filename)
    except SourceError as exc:
        result.diagnostics.append(_syntax_error(filename, exc))
        return _finish(result, config, filename, where, lines, enabled, text)
    for row, column, name in skipped_generic_statements(text, module, tuple(
            n.decode() for n in prefilter_names(config, facts, session))):
        result.diagnostics.append(_not_checked(filename, row, column, name))
    if rules is None and split is None and _names_only_in_prose(text, config, facts, session, index):
        # parsed as above (a syntax error is VJP900 wherever the full lint reports it, a generic
        # definition's "not checked" too); no rule can fire: the collector and the rules are skipped
        return _finish(result, config, filename, where, lines, enabled, text)
    try:
        result.findings = _run_rules(filename, module, text, lines, config, enabled, result.errors, partly,
                                     focused=focused, only=rules, split=split, keep=keep, index=index, facts=facts,
                                     session=session)
        result.diagnostics.extend(result.findings)
    except RecursionError:
        result.diagnostics.append(_syntax_error(filename, SourceError("source is nested too deeply to analyse")))
    names = prefilter_names(config, facts, session)
    judged = CALLBACK_CODES if not may_contain_findings(
        text.encode("utf-8", "surrogatepass"), [n for n in names if n not in CALLBACK_NAMES]) else None
    return _finish(result, config, filename, where, lines, enabled, text, judged)


def _lint_grouped(filename: str, text: str, config: Config, where: str, facts: RunFacts,
                  session: LintSession) -> Optional[LintResult]:
    """`lint_source`'s result for a big module, linted a family of statements at a time
    (vjplint.lint.chunks), each family's tree and model dropped before the next is parsed: the
    tree of a whole 10 MB module alone is about 750 MB. None where the text cannot be split (a
    syntax error, a statement nested too deeply): the caller lints it whole. Every finding is
    the whole lint's (a family finds exactly the whole lint's findings in its statements:
    tests/unit/test_grouped_lint.py, tests/cli/test_grouped_lint.py); a finding in the imports,
    which every family holds, counts once."""
    from vjplint.lint.chunks import grouped, split, starts_of, without_lines

    try:
        with_endings = lines_with_endings(text)
        chunks = split(with_endings, 0, len(with_endings))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    starts = starts_of(chunks)
    rows = [len(c.lines) for c in chunks]
    names = prefilter_names(config, facts, session)
    named = _chunks_with_names(chunks, text, names)
    # the chunks' own lines are read no more: the document's line table is `lines` below
    chunks = [without_lines(c) for c in chunks]
    del with_endings
    context = [i for i, c in enumerate(chunks) if c.context]
    families = grouped(chunks, [n.decode() for n in names]) or [[]]
    if not named.intersection(context):  # a family holding none of the names has no finding (as a file has none)
        families = [f for f in families if not named.isdisjoint(f)] or [[]]
    # One table: every family's model shares it, and its join, digest and word tests are made once
    # (file_model.LineTable), and go with it
    from vjplint.model.file_model import LineTable

    lines = LineTable(source_lines(text))
    enabled, partly = enabled_codes(config, session)
    found: List[Diagnostic] = []
    seen: Set[tuple] = set()
    errors: List[str] = []
    linted = 0  # characters linted since the last collection
    for family in _batches(families, chunks):
        order = sorted(context + family)
        linted += sum(len(chunks[i].text) for i in family)
        if linted >= GROUPED_COLLECT_CHARS:  # the families' models are cyclic garbage: the collector is paused
            gc.collect(0)
            linted = 0
        try:
            diagnostics = _lint_family(filename, [chunks[i] for i in order], [starts[i] for i in order],
                                       [rows[i] for i in order], lines, config, enabled, partly, errors, facts, session)
        except (SourceError, RecursionError):
            return None
        for d in diagnostics:
            seen_as = (d.code, d.location, d.end_location, d.message)
            if seen_as not in seen:
                found.append(d)
                seen.add(seen_as)
    session.forget_parse()  # a family's compact text: no fix of the document reads it
    result = LintResult(diagnostics=found, errors=list(dict.fromkeys(errors)), analysed=True, findings=list(found))
    return _finish(result, config, filename, where, lines, enabled, text)


def _batches(families: List[List[int]], chunks: Sequence["Chunk"]) -> List[List[int]]:
    """`families` taken together, in order, until their text reaches GROUPED_BATCH_CHARS: each
    batch is linted as one module (a union of families finds what its families find, as the
    whole module, their union, does), so the per-module cost (a parse, the regions, the model,
    the rules' set-up) is paid once per batch rather than once per family, while a batch stays
    small enough for the rules' comparisons among a module's derivatives to cost little."""
    batches: List[List[int]] = []
    current: List[int] = []
    size = 0
    for family in families:
        current.extend(family)
        size += sum(len(chunks[i].text) for i in family)
        if size >= GROUPED_BATCH_CHARS:
            batches.append(current)
            current, size = [], 0
    if current or not batches:
        batches.append(current)
    return batches


def _chunks_with_names(chunks: Sequence["Chunk"], text: str, names: Sequence[bytes]) -> Set[int]:
    """The chunks whose text `may_contain_findings` says holds one of `names`: the chunks where
    the text holds a name's letters, then each of those checked as a file would be."""
    ends = list(accumulate(len(c.text) for c in chunks))
    near: Set[int] = set()
    for name in {n.decode() for n in names}:
        at = text.find(name)
        while at >= 0:
            k = bisect.bisect_right(ends, at)
            near.add(k)
            at = text.find(name, ends[k] if k < len(ends) else len(text))  # the next chunk's: one is enough
    return {k for k in near if k < len(chunks)
            and may_contain_findings(chunks[k].text.encode("utf-8", "surrogatepass"), names)}


def _lint_family(filename: str, chunks: Sequence["Chunk"], starts: Sequence[int], rows: Sequence[int],
                 lines: List[str], config: Config,
                 enabled: FrozenSet[str], partly: FrozenSet[str], errors: List[str], facts: RunFacts,
                 session: LintSession) -> List[Diagnostic]:
    """The rules' findings on `chunks` (the imports and one family of statements, in order) as a
    module of their own, at their real rows `starts` (`rows`: how many each holds). Their text is parsed compact (one chunk
    after the other: padding each family to its rows with blank lines cost a module of 15,000
    families quadratic time), its regions chosen on that text, and each statement then moved to
    its real rows, so the model, the rules, fixes and noqa read the document's own line table
    `lines` (shared, not copied) as a whole lint does. SourceError or RecursionError where it
    does not parse."""
    from vjplint.lint.chunks import shift
    from vjplint.syntax.regions import focus

    texts: List[str] = []
    compact: List[int] = []  # the row each chunk starts at in the compact text
    row = 1
    for chunk, count in zip(chunks, rows):
        texts.append(chunk.text)
        compact.append(row)
        row += count
    text = "".join(texts)
    module = parse(text, filename)
    index = TextIndex(text)
    text_lines = source_lines(text)
    if session.focus:  # as `_run_rules` would, on the compact text's own offsets and lines
        module = focus(module, text, text_lines, [n.decode() for n in prefilter_names(config, facts, session)], index)
    for statement in module.body:
        k = bisect.bisect_right(compact, statement.lineno) - 1
        if starts[k] != compact[k]:
            shift(statement, starts[k] - compact[k])
    return _run_rules(filename, module, text, lines, config, enabled, errors, partly, text_lines=text_lines,
                      focused=True, index=index, facts=facts, session=session)


def enabled_codes(config: Config, session: Optional[LintSession] = None) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(every code that runs, the part of it that runs only for its default reports). Kept in
    `session`'s memo by the settings that choose the rules; computed afresh without a session."""
    key = (config.select, config.extend_select, config.ignore, config.target)
    known = session.selections.get(key) if session is not None else None
    if known is not None:
        return known
    from vjplint.rules.registry import ENGINE_CODES, default_off, rule_codes

    enabled = config.enabled_codes([*rule_codes(), *ENGINE_CODES], default_off())
    partly = _partly_enabled(config, enabled)
    answer = frozenset(enabled | partly), partly
    if session is not None:
        session.selections[key] = answer
    return answer


def _partly_enabled(config: Config, enabled: FrozenSet[str]) -> FrozenSet[str]:
    """Off-by-default rules with default reports (`Rule.DEFAULT_REPORTS`) that the configuration
    would run if they were on by default: they run, keeping only those reports."""
    from vjplint.rules.catalog import RULES
    from vjplint.rules.registry import ENGINE_CODES, default_off, rule_codes

    partial = frozenset(c for c, entry in RULES.items() if entry[2])  # DEFAULT_REPORTS
    if not partial - enabled:
        return frozenset()
    as_default = config.enabled_codes([*rule_codes(), *ENGINE_CODES], default_off() - partial)
    return (as_default & partial) - enabled


def _run_rules(filename: str, module: ast.Module, text: str, lines: List[str], config: Config,
               enabled: Set[str], errors: List[str], partly: FrozenSet[str] = frozenset(),
               text_lines: Optional[List[str]] = None, focused: bool = False,
               only: Optional[FrozenSet[str]] = None, split: Optional[RuleSplit] = None,
               keep: Optional[List[object]] = None, index: Optional[TextIndex] = None,
               facts: RunFacts = NO_FACTS, session: Optional[LintSession] = None) -> List[Diagnostic]:
    """`index`: the searches of `text` made so far (one is made when none is given). `text_lines`: the lines of `text` where they differ from `lines` (the incremental
    linter's family modules, blank outside the family). `focused`: `module` holds only the
    regions already (vjplint.syntax.region_parse), the whole module was never parsed. `only`: run only
    these rules; `split`: not these, which another process runs (`RuleSplit`)."""
    from vjplint.facts.collect import Recognizer, collect
    from vjplint.facts.crossmodule import grafted_text
    from vjplint.model.expected_errors import withhold_fixes
    from vjplint.facts.infer import Hints
    from vjplint.rules.base import RuleOptions
    from vjplint.rules.catalog import DERIVATIVE_ONLY, RULES
    from vjplint.rules.registry import rules_for

    recognizer = Recognizer.for_run(config, facts)
    if session is None:
        session = LintSession()
    whole: Optional[ast.Module] = None if focused else module
    index = TextIndex.of(text, index)
    names = tuple(n.decode() for n in prefilter_names(config, facts, session))
    if session.focus and not focused and not _grafts(facts):
        from vjplint.syntax.regions import focus

        module = focus(module, text, text_lines or lines, list(names), index)
    options = RuleOptions(relint=_lint_with_one_rule)
    # what other modules of the run pass to, register on, call here, and the settings' name hints:
    # given to the facts at collection
    model = collect(module, lines, recognizer, facts,
                    Hints(config.array_names, config.static_names) if config.array_names or config.static_names
                    else None)
    if keep is not None:
        keep.append(model)
    stub = filename.endswith(".pyi")
    present = _present_triggers(text, config, names, index, facts)
    # rules defined in another module and read here (vjplint.facts.crossmodule.Graft): their text gates the rules too
    borrowed = grafted_text(facts.rows) if facts.rows and model.facts.graft is not None else ""
    if borrowed:
        present |= {name for name in PREFILTER_NAMES if name.decode() in borrowed}
    # Chosen by the catalog (vjplint/rules/catalog.py): only the rules that run are imported.
    chosen = [code for code in (enabled if only is None else enabled & only) if code in RULES
              and (RULES[code][3] or not stub) and not RULES[code][4]  # IN_STUBS, RUNTIME
              and (not RULES[code][5] or not present.isdisjoint(RULES[code][5]))  # TRIGGERS
              and (RULES[code][6] is None or _needed(re.compile(*RULES[code][6]), text)
                   or borrowed and _needed(re.compile(*RULES[code][6]), borrowed))]  # NEEDS
    # the gate by derivative: a rule that only judges derivatives (the catalog's DERIVATIVE_ONLY) is
    # neither imported nor made where the model holds no derivative of its APIS and KINDS
    kinds = {(d.api, d.kind) for d in model.derivatives}
    chosen = [code for code in chosen if code not in DERIVATIVE_ONLY or _judged(DERIVATIVE_ONLY[code], kinds)]
    classes = rules_for(chosen)
    elsewhere = [cls for cls in classes if split is not None and cls.CODE in split.codes]
    here = [cls for cls in classes if cls not in elsewhere]
    diagnostics = _apply_rules(here, model, options, filename, lines, errors, partly)
    remote: List[Diagnostic] = []
    if elsewhere:
        assert split is not None
        got = split.collect()
        if got is None:  # the other process failed: its rules run here
            diagnostics += _apply_rules(elsewhere, model, options, filename, lines, errors, partly)
        else:
            remote, remote_errors = got
            errors.extend(remote_errors)
    diagnostics = withhold_fixes(diagnostics, module, text) + remote  # the other process withheld its own
    if any(d.fix is not None and d.fix.plan is not None for d in diagnostics):
        session.remember_parse(text, names, whole, module if session.focus and text_lines is None else None)
    return diagnostics


def _judged(gate: Tuple[Optional[Tuple[str, ...]], Optional[Tuple[str, ...]]], kinds: Set[Tuple[str, str]]) -> bool:
    """Whether a derivative of `kinds` ((api, kind) of the model's derivatives) is one a rule of
    `gate` (its APIS and KINDS, None: any) judges."""
    apis, wanted = gate
    return any((apis is None or api in apis) and (wanted is None or kind in wanted) for api, kind in kinds)


def _lint_with_one_rule(code: str, text: str) -> List[Diagnostic]:
    """Rule `code`'s findings on `text` alone (RuleOptions.relint: a fix's result, linted before it
    is offered)."""
    return lint_source("<rewrite>", text, Config(select=(code,))).diagnostics


def _apply_rules(classes: Sequence["type[Rule]"], model: "FileModel", options: "RuleOptions", filename: str,
                 lines: List[str], errors: List[str], partly: FrozenSet[str]) -> List[Diagnostic]:
    """Run the rules `classes` on `model`: their diagnostics, in the rules' order."""
    from vjplint.rules.base import Rule

    derivatives = model.derivatives
    # the gate by derivative: a rule that only judges derivatives (`check_derivative`, no `check`,
    # no visitor) runs where the model holds one of its APIS and KINDS
    rules = [cls(model, options) for cls in classes
             if cls.check is not Rule.check or _visit_methods(cls) or any(
                 (cls.APIS is None or d.api in cls.APIS) and (cls.KINDS is None or d.kind in cls.KINDS)
                 for d in derivatives)]
    visitors: Dict[str, List] = {}
    for rule in rules:
        for attr in _visit_methods(type(rule)):
            visitors.setdefault(attr[6:], []).append((rule, getattr(rule, attr)))
    failed: Set[str] = set()
    for rule in rules:
        try:
            rule.check()
            cls = type(rule)
            if cls.check_derivative is not Rule.check_derivative:
                apis, kinds = cls.APIS, cls.KINDS
                for d in derivatives:
                    if (apis is None or d.api in apis) and (kinds is None or d.kind in kinds):
                        rule.check_derivative(d)
        except Exception as exc:  # a broken rule loses its own findings, never the file's
            failed.add(rule.CODE)
            errors.append(f"{filename}: internal error in {rule.CODE}: {type(exc).__name__}: {exc}")
    if visitors:
        by_class = {getattr(ast, name): methods for name, methods in visitors.items() if hasattr(ast, name)}
        # `ast.walk` order, computed once per file; only the nodes of the visited types
        for node in [n for n in model.index.nodes if n.__class__ in by_class]:
            for rule, method in by_class[node.__class__]:
                if rule.CODE in failed:
                    continue
                try:
                    method(node)
                except Exception as exc:
                    failed.add(rule.CODE)
                    errors.append(f"{filename}: internal error in {rule.CODE}: {type(exc).__name__}: {exc}")
    diagnostics = []
    for rule in rules:
        if rule.CODE in failed:
            continue
        for report in rule.reports:
            if rule.CODE in partly and not report.default:
                continue
            start, end = node_range(lines, report.node, report.end_node)
            diagnostics.append(Diagnostic(
                code=rule.CODE, name=rule.NAME, message=report.message, severity=report.severity or rule.SEVERITY,
                filename=filename, location=start, end_location=end, fix=report.fix, noqa_row=start.row,
                evidence=report.evidence, elsewhere=report.elsewhere,
            ))
    return diagnostics


# The trigger names that rules read in strings, where a string holding one is not prose: VJP402
# (`type(x).__name__ == "JVPTracer"`), VJP401 (`jax.config.update("jax_use_direct_linearize", ...)`,
# `os.environ["JAX_USE_DIRECT_LINEARIZE"]`). Every other rule reads the names in code.
_READ_IN_STRINGS = ("JVPTracer", "direct_linearize", "DIRECT_LINEARIZE")


def _names_only_in_prose(text: str, config: Config, facts: RunFacts, session: LintSession, index: TextIndex) -> bool:
    """Whether no rule can fire on this parsed file: the prefilter's names (the settings' and the
    run's aliases included) are in the text's comments and strings only (a docstring or a comment
    that says `custom_vjp`), or in its comments only for the names rules read in strings
    (`_READ_IN_STRINGS`). Every rule has TRIGGERS, and with no trigger name in code the collector
    sees no custom derivative, no registration (`defvjp`), no `JVPTracer`, no `odeint` or
    `custom_transforms` call, so the rules find nothing. Asked only once the file is parsed as the
    full lint parses it (a syntax error, a generic definition's "not checked": VJP900 as before)
    and followed by the same `_finish` (a `# noqa` naming a VJP code: VJP901 as before). Kept
    out: cross-module rows (a derivative defined in another module, called or registered here)."""
    if facts.rows:
        return False
    names = tuple(n.decode() for n in prefilter_names(config, facts, session))
    return not mentions_in_code(text, names, tuple(n.decode() for n in EXTENDED_NAMES), index, _READ_IN_STRINGS)


def _grafts(facts: RunFacts) -> bool:
    """Whether another module of the run defines rules or a primal this file registers
    (vjplint.facts.crossmodule.Graft): the file is then parsed whole, since what it registers on
    or with (an import, a rule of its own that holds no trigger name) is outside the focused regions."""
    if not facts.rows:
        return False
    from vjplint.facts.crossmodule import RULE_DEF

    return any(row and row[0] == RULE_DEF for row in facts.rows)


def _needed(pattern: "re.Pattern[str]", text: str) -> bool:
    """Whether `text` holds what a rule NEEDS: a pattern of literal words joined by `|` is
    searched word by word with `in` (a regular expression alternation tries every character:
    VJP612's `where|select` took 13 ms on JAX's candidates, `in` 2 ms)."""
    words = _literal_words(pattern.pattern)
    if words is not None:
        return any(w in text for w in words)
    return pattern.search(text) is not None


@functools.lru_cache(maxsize=None)
def _literal_words(source: str) -> Optional[Tuple[str, ...]]:
    words = tuple(source.split("|"))
    return words if all(w and (w.isidentifier() or w.isalnum()) for w in words) else None


@functools.lru_cache(maxsize=None)
def _visit_methods(cls: type) -> Tuple[str, ...]:
    """A rule class's `visit_<Node>` methods (dir() per rule and file was a tenth of linting a
    family of statements in the server)."""
    return tuple(attr for attr in dir(cls) if attr.startswith("visit_"))


def _present_triggers(text: str, config: Config, names: Tuple[str, ...] = (),
                      index: Optional[TextIndex] = None, facts: RunFacts = NO_FACTS) -> Set[bytes]:
    """The rules' trigger names the text holds; an alias's name stands for its creator's.
    `names`: the prefilter names, whose occurrences the regions found in `index` already."""
    if names and set(PREFILTER_NAMES) <= {n.encode() for n in names}:
        found = TextIndex.of(text, index).occurrences(names)
        present = {name for name in PREFILTER_NAMES if found[name.decode()]}
    else:
        present = {name for name in PREFILTER_NAMES if name.decode() in text}
    if any(name.rsplit(".", 1)[-1] in text for name, _ in (*config.custom_vjp_aliases, *facts.vjp_aliases)):
        present.add(b"custom_vjp")
    if any(name.rsplit(".", 1)[-1] in text for name, _ in (*config.custom_jvp_aliases, *facts.jvp_aliases)):
        present.add(b"custom_jvp")
    return present


def _not_checked(filename: str, row: int, column: int, name: str) -> Diagnostic:
    """VJP900 for a generic function or class this interpreter cannot parse, whose
    custom-derivative code was therefore skipped (vjplint.syntax.source.skipped_generic_statements)."""
    import sys

    position = Position(row, column)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Diagnostic(code="VJP900", name="syntax-error",
                      message=f"not checked: `{name}` has type parameters (PEP 695), which Python {here} cannot "
                              f"parse, so the custom-derivative code in it was skipped; run vjplint with Python "
                              f"3.12 or newer to check it",
                      severity=Severity.ERROR, filename=filename, location=position, end_location=position,
                      noqa_row=None)


def _syntax_error(filename: str, exc: SourceError) -> Diagnostic:
    position = Position(exc.row, exc.column)
    return Diagnostic(code="VJP900", name="syntax-error", message=f"cannot parse this file: {exc.message}",
                      severity=Severity.ERROR, filename=filename, location=position, end_location=position,
                      noqa_row=None)


def _finish(result: LintResult, config: Config, filename: str, where: str, lines: List[str],
            enabled: Iterable[str], text: Optional[str] = None, judged: Optional[FrozenSet[str]] = None) -> LintResult:
    """`text`: what `lines` were split from (`source_lines`), when the caller has it. `judged`: the
    only codes whose unused noqa comments are reported (None: every code)."""
    ignored = config.ignored_for(where)
    enabled = {code for code in enabled if not _matches(code, ignored)}  # per-file-ignores turn VJP901 off too
    kept = [d for d in result.diagnostics if d.code in enabled or (d.code == "VJP900" and not _matches(d.code, ignored))]
    kept = _apply_noqa(kept, lines, enabled, filename, text, judged)
    if not config.all_fixable:  # `unfixable`/`fixable`: those rules' fixes are neither offered nor applied
        for d in kept:
            if d.fix is not None and not config.fix_allowed(d.code):
                d.fix = None
    kept.sort(key=Diagnostic.sort_key)
    result.diagnostics = kept
    return result


def _rows_mentioning_noqa(lines: List[str], text: Optional[str] = None) -> List[int]:
    """The 1-based rows whose lowercased line holds `noqa` (those `parse_noqa` may read), found by
    literal searches in the lowercased text rather than a lowercased copy of every line. `text`:
    what `lines` were split from; read as it is when its only line break is `\\n` (then `lines`
    are its pieces between them: joining them again cost a third of this on the JAX tree)."""
    # a line holds no line break, so row N follows N-1 of them
    low = (text if text is not None and "\r" not in text else "\n".join(lines)).lower()
    rows: List[int] = []
    at = low.find("noqa")
    row, counted = 1, 0
    while at >= 0:
        row += low.count("\n", counted, at)
        counted = at
        if not rows or rows[-1] != row:
            rows.append(row)
        at = low.find("noqa", at + 4)
    return rows


def _apply_noqa(diagnostics: List[Diagnostic], lines: List[str], enabled: Set[str], filename: str,
                text: Optional[str] = None, judged: Optional[FrozenSet[str]] = None) -> List[Diagnostic]:
    from vjplint.rules.catalog import RULES
    from vjplint.rules.registry import ENGINE_CODES

    noqa: Dict[int, Tuple[Optional[Set[str]], int, bool]] = {}
    for row in _rows_mentioning_noqa(lines, text):
        parsed = parse_noqa(lines[row - 1])
        if parsed is not None:
            noqa[row] = parsed
    if not noqa:
        return diagnostics
    kept, used = [], set()
    for d in diagnostics:
        entry = noqa.get(d.noqa_row or -1)
        if entry is not None and d.code != "VJP900":
            codes, _, malformed = entry
            if codes is None or (d.code in codes and not malformed):
                used.add((d.noqa_row, d.code))
                continue
        kept.append(d)
    if "VJP901" in enabled:
        known = set(RULES) | set(ENGINE_CODES)
        for row, (codes, column, malformed) in sorted(noqa.items()):
            ours = sorted(c for c in (codes or ()) if c.startswith("VJP"))
            position = Position(row, column + 1)
            end = Position(row, len(lines[row - 1]) + 1)
            for code in ours:
                if malformed:
                    message = f"malformed `# noqa` directive: write `# noqa: {code}` (with a colon)"
                elif code not in known:
                    message = f"`# noqa` names the unknown rule code {code}"
                elif code in enabled and (row, code) not in used and (judged is None or code in judged) and \
                        not (code in RULES and RULES[code][4]):  # RUNTIME: check-grads reports those
                    message = f"unused `# noqa` directive: no {code} diagnostic on this line; remove it"
                else:
                    continue
                kept.append(Diagnostic(code="VJP901", name="invalid-noqa", message=message,
                                       severity=Severity.WARNING, filename=filename, location=position,
                                       end_location=end, noqa_row=None))
    return kept
