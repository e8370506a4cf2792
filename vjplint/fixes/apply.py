"""The fix machinery every rule shares: choose fixes, apply non-overlapping edits per pass,
re-lint and repeat until stable, write atomically; plus the CLI's --fix/--diff commands.

Core API (no I/O): `apply_fixes(text, diagnostics, unsafe)` makes one pass, `fix_source(
filename, text, config, unsafe)` runs passes to a fixed point (the Language Server calls it),
`attach_fix_edits()` fills `Diagnostic.fix` for JSON/SARIF/LSP output.
"""

from __future__ import annotations

import codecs
import difflib
import os
import stat
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from vjplint.config import Config
from vjplint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position
from vjplint.positions import lines_with_endings as split_lines, source_lines
from vjplint.source import DecodedSource, SourceError, decode, parse

MAX_PASSES = 10
RESIDUAL = "residual-plus-None"

# A module transform: (text, fix keys, config) -> (new text, the keys it applied).
Transform = Callable[[str, Sequence[tuple], Config], Tuple[str, List[tuple]]]


def _residual_transform(text: str, keys: Sequence[tuple], config: Config) -> Tuple[str, List[tuple]]:
    from vjplint.collect import Recognizer, collect
    from vjplint.fixes.residual_plan import Refusal, find_derivative, plan, spans_overlap
    from vjplint.fixes.residual_plus_none import fix_text

    module = parse(text)
    recognizer = Recognizer.with_aliases(dict(config.custom_vjp_aliases), dict(config.custom_jvp_aliases))
    model = collect(module, source_lines(text), recognizer)
    merged: Dict[Tuple[str, int], Set[int]] = {}
    for key in keys:
        merged.setdefault((key[1], key[2]), set()).update(key[3])
    plans, applied = [], []
    for (name, line), moved in merged.items():
        d = find_derivative(model, name, line)
        if d is None:
            continue
        try:
            p = plan(model, d, sorted(moved))
        except Refusal:
            continue
        if any(spans_overlap(p, q) for q in plans):
            continue  # nested definitions: the next pass takes it
        plans.append(p)
        applied.extend(k for k in keys if (k[1], k[2]) == (name, line))
    if not plans:
        return text, []
    return fix_text(text, plans), applied


TRANSFORMS: Dict[str, Transform] = {RESIDUAL: _residual_transform}


def normalize_key(key: Optional[Sequence]) -> Optional[tuple]:
    """Fix keys survive a JSON cache as lists; make them hashable tuples again."""
    if key is None:
        return None
    return tuple(normalize_key(k) if isinstance(k, (list, tuple)) else k for k in key)  # type: ignore[misc]


def offered(d: Diagnostic, unsafe: bool) -> bool:
    """A fix this run may apply: safe ones always, unsafe ones with --unsafe-fixes."""
    if d.fix_applicability is None or (d.fix is None and d.fix_key is None):
        return False
    return d.fix_applicability is Applicability.SAFE or unsafe


# -- positions and edits -----------------------------------------------------------------------
def _starts(text: str) -> List[int]:
    starts, offset = [0], 0
    for line in split_lines(text):
        offset += len(line)
        starts.append(offset)
    return starts


def _offset(starts: List[int], position: Position, size: int) -> int:
    row = min(max(position.row, 1), len(starts))
    return min(starts[row - 1] + position.column - 1, size)


def _position(starts: List[int], offset: int) -> Position:
    import bisect

    row = bisect.bisect_right(starts, offset) - 1
    row = min(row, len(starts) - 1)
    return Position(row + 1, offset - starts[row] + 1)


def diff_edits(old: str, new: str) -> Tuple[Edit, ...]:
    """Small edits turning `old` into `new`: changed line blocks, trimmed to the changed characters."""
    if old == new:
        return ()
    a, b = split_lines(old), split_lines(new)
    starts = _starts(old)
    # Diff only the changed middle: SequenceMatcher is quadratic, and a fix touches a few
    # custom_vjp families in what may be a very large file.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail], autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in middle.get_opcodes():
        if tag == "equal":
            continue
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        prefix = len(os.path.commonprefix([before, after]))
        limit = min(len(before), len(after)) - prefix
        suffix = 0
        while suffix < limit and before[-1 - suffix] == after[-1 - suffix]:
            suffix += 1
        start = starts[i1] + prefix
        end = starts[i1] + len(before) - suffix
        edits.append(Edit(after[prefix:len(after) - suffix], _position(starts, start), _position(starts, end)))
    return tuple(edits)


def _spans(text: str, starts: List[int], edits: Sequence[Edit]) -> List[Tuple[int, int, str]]:
    return [(_offset(starts, e.location, len(text)), _offset(starts, e.end_location, len(text)), e.content)
            for e in edits]


def _conflicts(span: Tuple[int, int, str], taken: Sequence[Tuple[int, int, str]]) -> bool:
    s1, e1, _ = span
    return any((s1 < e2 and s2 < e1) or s1 == s2 for s2, e2, _ in taken)


def _apply_spans(text: str, spans: Sequence[Tuple[int, int, str]]) -> str:
    for start, end, content in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text


def _parses(text: str) -> bool:
    try:
        parse(text)
        return True
    except SourceError:
        return False
    except Exception:
        return False


# -- one pass ------------------------------------------------------------------------------------
def apply_fixes_once(text: str, diagnostics: Sequence[Diagnostic], unsafe: bool, config: Config = Config(),
                     errors: Optional[List[str]] = None) -> Tuple[str, List[Diagnostic]]:
    """One pass: the offered fixes whose edits do not overlap, applied together.
    Returns the new text and the diagnostics it fixed (the rest wait for the next pass)."""
    chosen = [d for d in diagnostics if offered(d, unsafe)]
    groups: List[Tuple[Tuple[Edit, ...], List[Diagnostic]]] = []
    by_transform: Dict[str, List[Diagnostic]] = {}
    for d in chosen:
        key = normalize_key(d.fix_key)
        if d.fix is None and key and key[0] in TRANSFORMS:
            by_transform.setdefault(key[0], []).append(d)
    for name, ds in by_transform.items():
        keys = list(dict.fromkeys(normalize_key(d.fix_key) for d in ds))
        try:
            new_text, applied = TRANSFORMS[name](text, keys, config)  # type: ignore[arg-type]
        except Exception as exc:  # a failing transform loses its fixes, never the file
            if errors is not None:
                errors.append(f"the {name} fix failed: {type(exc).__name__}: {exc}")
            continue
        applied_set = set(applied)
        fixed = [d for d in ds if normalize_key(d.fix_key) in applied_set]
        if fixed and new_text != text:
            groups.append((diff_edits(text, new_text), fixed))
    singles = sorted((d for d in chosen if d.fix is not None and d.fix.edits), key=Diagnostic.sort_key)
    groups.extend((d.fix.edits, [d]) for d in singles)  # type: ignore[union-attr]
    starts = _starts(text)
    accepted: List[Tuple[int, int, str]] = []
    accepted_groups: List[Tuple[List[Tuple[int, int, str]], List[Diagnostic]]] = []
    for edits, ds in groups:
        spans = _spans(text, starts, edits)
        if any(_conflicts(s, accepted) for s in spans):
            continue
        accepted.extend(spans)
        accepted_groups.append((spans, ds))
    if not accepted_groups:
        return text, []
    new = _apply_spans(text, accepted)
    if _parses(new):
        return new, [d for _, ds in accepted_groups for d in ds]
    # Some combination does not parse: keep only the groups that parse on their own, one by one.
    current, fixed = text, []
    for spans, ds in accepted_groups:
        candidate = _apply_spans(text, [*(s for g, _ in fixed for s in g), *spans])
        if _parses(candidate):
            current = candidate
            fixed.append((spans, ds))
        elif errors is not None:
            errors.append(f"a {ds[0].code} fix would produce code that does not parse; not applied")
    return current, [d for _, ds in fixed for d in ds]


def apply_fixes(source_text: str, diagnostics: Sequence[Diagnostic], unsafe: bool,
                config: Config = Config()) -> str:
    """One pass of fixes over a text and its diagnostics (pure; see `fix_source` for the loop)."""
    return apply_fixes_once(source_text, diagnostics, unsafe, config)[0]


# -- to a fixed point ----------------------------------------------------------------------------------
@dataclass
class FixResult:
    text: str
    fixed: List[Diagnostic] = field(default_factory=list)
    remaining: List[Diagnostic] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    converged: bool = True

    @property
    def fixed_count(self) -> int:
        return len(self.fixed)


def fix_text(filename: str, text: str, config: Config = Config(), unsafe: bool = False,
             exclude: Sequence[str] = ()) -> FixResult:
    """Lint, fix, re-lint until nothing more applies (at most MAX_PASSES passes). Every
    intermediate text parses; fixes of derivatives named in `exclude` are skipped."""
    from vjplint.engine import lint_source

    result = FixResult(text)
    for _ in range(MAX_PASSES):
        lint = lint_source(filename, result.text, config)
        result.errors.extend(e for e in lint.errors if e not in result.errors)
        result.remaining = lint.diagnostics
        todo = [d for d in lint.diagnostics if offered(d, unsafe)
                and not (d.fix_key and len(d.fix_key) > 1 and d.fix_key[1] in exclude)]
        if not todo or any(d.code == "VJP900" for d in lint.diagnostics):
            return result
        new, fixed = apply_fixes_once(result.text, todo, unsafe, config, result.errors)
        if not fixed or new == result.text:
            return result
        result.text = new
        result.fixed.extend(fixed)
    lint = lint_source(filename, result.text, config)
    result.remaining = lint.diagnostics
    if any(offered(d, unsafe) for d in lint.diagnostics):
        result.converged = False
        result.errors.append(f"{filename}: fixes did not converge after {MAX_PASSES} passes; "
                             f"the file is left in its last consistent state, please report this")
    return result


def fix_source(filename: str, text: str, config: Config = Config(),
               unsafe: bool = False) -> Tuple[str, int, List[Diagnostic]]:
    """(fixed text, number of diagnostics fixed, diagnostics left) for one file's text."""
    result = fix_text(filename, text, config, unsafe)
    return result.text, result.fixed_count, result.remaining


# -- edits for JSON / SARIF / LSP -------------------------------------------------------------------------
def attach_fix_edits(diagnostics: Sequence[Diagnostic], sources: Dict[str, List[str]],
                     config: Optional[Config] = None) -> None:
    """Fill `fix` (with edits) for diagnostics that have a fix_key but no edits yet."""
    cache: Dict[Tuple[str, tuple], Tuple[Edit, ...]] = {}
    for d in diagnostics:
        key = normalize_key(d.fix_key)
        if d.fix is not None or d.fix_applicability is None or not key or key[0] not in TRANSFORMS:
            continue
        lines = sources.get(d.filename)
        if lines is None:
            continue
        text = "\n".join(lines) + "\n"
        if (d.filename, key) not in cache:
            edits: Tuple[Edit, ...] = ()
            try:
                new_text, applied = TRANSFORMS[key[0]](text, [key], config or _config_for(d.filename))
                if applied and _parses(new_text):
                    edits = diff_edits(text, new_text)
            except Exception:
                edits = ()
            cache[(d.filename, key)] = edits
        edits = cache[(d.filename, key)]
        if edits:
            d.fix = Fix(d.fix_applicability, d.fix_message or "Apply the fix", edits)


@lru_cache(maxsize=64)
def _config_for(filename: str) -> Config:
    from vjplint.config import find_pyproject, load_config

    try:
        return load_config(find_pyproject(Path(filename).resolve().parent))
    except Exception:
        return Config()


# -- files ----------------------------------------------------------------------------------------------
def encode(text: str, decoded: DecodedSource) -> bytes:
    data = text.encode(decoded.encoding)
    return codecs.BOM_UTF8 + data if decoded.bom else data


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path`'s content: a temp file in the same directory, then os.replace; the mode is kept.
    A symlink keeps pointing at its (rewritten) target; a read-only file is left alone."""
    target = os.path.realpath(path)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        # os.replace needs only a writable directory: respect the file's own permission (also as root)
        raise PermissionError("the file is read-only")
    directory, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".vjplint-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unified_diff(display: str, old: str, new: str) -> str:
    a, b = split_lines(old), split_lines(new)
    out = []
    for line in difflib.unified_diff(a, b, fromfile=display, tofile=display):
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


# -- the command line ------------------------------------------------------------------------------------
@dataclass
class _FileFix:
    display: str
    result: FixResult
    old: str
    lines: List[str]


def run_fix_command(args, config: Config, paths: Sequence[str], output_format: str) -> int:
    """`vjplint --fix/--diff PATH...`: lint everything, fix the files that have offered fixes."""
    from vjplint.cli import emit, exit_code, report_problems
    from vjplint.runner import lint_paths

    unsafe = bool(args.unsafe_fixes)
    run = lint_paths(paths, config, jobs=args.jobs, use_cache=not args.no_cache,
                     force_exclude=args.force_exclude)
    errors = list(run.internal_errors)
    remaining: List[Diagnostic] = []
    sources: Dict[str, List[str]] = {}
    fixed: List[_FileFix] = []
    diffs: List[str] = []
    for outcome in run.files:
        diagnostics = outcome.result.diagnostics
        if not any(offered(d, unsafe) for d in diagnostics):
            remaining.extend(diagnostics)
            if diagnostics and outcome.result.decoded is not None:
                sources[outcome.display] = source_lines(outcome.result.decoded.text)
            elif diagnostics:
                sources[outcome.display] = _read_lines(outcome.path)
            continue
        try:
            data = outcome.path.read_bytes()
            decoded = decode(data)
        except (OSError, SourceError) as exc:
            errors.append(f"{outcome.display}: cannot read file: {exc}")
            remaining.extend(diagnostics)
            continue
        result = fix_text(outcome.display, decoded.text, config, unsafe)
        if args.verify and result.text != decoded.text:
            result = _verified(outcome.path, outcome.display, decoded.text, result, config, unsafe, errors)
        errors.extend(result.errors)
        if result.text != decoded.text:
            if args.diff:
                diffs.append(unified_diff(outcome.display, decoded.text, result.text))
            else:
                try:
                    if outcome.path.read_bytes() != data:
                        raise OSError("the file changed while it was being fixed")
                    write_atomic(outcome.path, encode(result.text, decoded))
                except (OSError, UnicodeEncodeError) as exc:
                    errors.append(f"{outcome.display}: cannot write the fixed file: {exc}")
                    remaining.extend(diagnostics)
                    sources[outcome.display] = source_lines(decoded.text)
                    continue
        fixed.append(_FileFix(outcome.display, result, decoded.text, source_lines(result.text)))
        remaining.extend(result.remaining)
        sources[outcome.display] = source_lines(result.text)
    report_problems(run.problems, errors)
    if args.diff:
        return _finish_diff(args, fixed, diffs, remaining, errors)
    remaining.sort(key=Diagnostic.sort_key)
    count = sum(f.result.fixed_count for f in fixed)
    if args.show_fixes and count and output_format in ("text", "concise") and not args.quiet:
        sys.stdout.write(_fix_summary(fixed))
    emit(remaining, args, output_format, sources=sources, fixed_count=count)
    code = exit_code(remaining, args, bool(errors) or any(p.fatal for p in run.problems))
    if code == 0 and count and args.exit_non_zero_on_fix:
        return 1
    return code


def _finish_diff(args, fixed: List[_FileFix], diffs: List[str], remaining: List[Diagnostic],
                 errors: List[str]) -> int:
    sys.stdout.write("".join(diffs))
    sys.stdout.flush()
    count = sum(f.result.fixed_count for f in fixed)
    hidden = 0 if args.unsafe_fixes else sum(
        1 for d in remaining if d.fix_applicability is Applicability.UNSAFE)
    if not args.quiet:
        line = f"Would fix {count} problem{'s' if count != 1 else ''}" if count else "No fixes available"
        if hidden:
            line += f" ({hidden} additional fix{'es' if hidden != 1 else ''} available with --unsafe-fixes)"
        print(line + ".", file=sys.stderr)
    if errors:
        return 2
    return 1 if diffs else 0


def _fix_summary(fixed: List[_FileFix]) -> str:
    out = ["Applied fixes:"]
    for f in sorted(fixed, key=lambda f: f.display):
        if not f.result.fixed:
            continue
        out.append(f"- {f.display}:")
        counts = Counter((d.code, d.name) for d in f.result.fixed)
        for (code, name), n in sorted(counts.items()):
            out.append(f"    {n} × {code} ({name})")
    return "\n".join(out) + "\n\n"


def _read_lines(path: Path) -> List[str]:
    try:
        return source_lines(decode(path.read_bytes()).text)
    except (OSError, SourceError):
        return []


def _verified(path: Path, display: str, old: str, result: FixResult, config: Config, unsafe: bool,
              errors: List[str]) -> FixResult:
    """--verify: prove each rewritten function on JAX; a function that fails keeps its old code."""
    try:
        from vjplint.verify.api import functions_changed, verify_rewrites
    except ImportError as exc:  # pragma: no cover - the verify package ships with vjplint
        errors.append(f"--verify is not available: {exc}")
        return FixResult(old, remaining=result.remaining, errors=result.errors)
    functions = functions_changed(old, result.text, config)
    reports = verify_rewrites(str(path), old, result.text, functions, config)
    if any(getattr(r, "missing_jax", False) for r in reports):
        from vjplint.install_hint import install_hint

        errors.append(f"--verify needs JAX: {install_hint('verify')}; nothing was written for " + display)
        return FixResult(old, remaining=result.remaining, errors=result.errors)
    for r in reports:
        where = f" on {r.device}" if r.device and r.status == "verified" else ""
        print(f"vjplint: verify: {display}:{r.line}: {r.function}: {r.status}{where}"
              f"{': ' + r.reason if r.reason else ''}", file=sys.stderr)
    # A rewrite is written only once proven: failed and unverified functions keep their code,
    # and their diagnostics stay (exit code 1).
    unproven = sorted({r.function.rsplit(".", 1)[-1] for r in reports if r.status != "verified"})
    if not unproven:
        return result
    print(f"vjplint: verify: {display}: not proven, left unchanged: {', '.join(unproven)}", file=sys.stderr)
    return fix_text(display, old, config, unsafe, exclude=unproven)


def run_fix_stdin(args, config: Config, name: str, data: bytes, output_format: str) -> int:
    """stdin with --fix: the fixed source goes to stdout, diagnostics to stderr (ruff's way);
    with --diff: the diff goes to stdout."""
    from vjplint.cli import emit, exit_code, report_problems
    from vjplint.engine import lint_source

    unsafe = bool(args.unsafe_fixes)
    try:
        decoded = decode(data)
    except SourceError:
        lint = lint_source(name, data, config)
        report_problems([], lint.errors)
        if not args.diff:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        _emit_to_stderr(emit, lint.diagnostics, args, output_format, {name: []}, 0)
        return exit_code(lint.diagnostics, args, bool(lint.errors))
    result = fix_text(name, decoded.text, config, unsafe)
    report_problems([], result.errors)
    lines = source_lines(result.text)
    if args.diff:
        diff = unified_diff(name, decoded.text, result.text) if result.text != decoded.text else ""
        file = _FileFix(name, result, decoded.text, lines)
        return _finish_diff(args, [file], [diff] if diff else [], result.remaining, result.errors)
    sys.stdout.buffer.write(encode(result.text, decoded) if result.text != decoded.text else data)
    sys.stdout.flush()
    _emit_to_stderr(emit, result.remaining, args, output_format, {name: lines}, result.fixed_count)
    code = exit_code(result.remaining, args, bool(result.errors))
    if code == 0 and result.fixed_count and args.exit_non_zero_on_fix:
        return 1
    return code


def _emit_to_stderr(emit, diagnostics, args, output_format: str, sources, fixed_count: int) -> None:
    stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        if diagnostics or fixed_count:
            emit(diagnostics, args, output_format, sources=sources, fixed_count=fixed_count)
    finally:
        sys.stdout = stdout
