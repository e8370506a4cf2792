"""`vjplint --fix/--diff PATH...` and their stdin forms: the I/O around the pure fix machinery
(vjplint.fixes.apply): read, fix, optionally verify on JAX, write atomically, report."""

from __future__ import annotations

import difflib
import os
import stat
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

from vjplint.cli.report import emit, exit_code, report_problems
from vjplint.output.progress import ProgressLine
from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import Applicability, Diagnostic
from vjplint.syntax import notebook
from vjplint.fixes.apply import FixResult, fix_text, offered
from vjplint.fixes.multi_write import FileChanged
from vjplint.syntax.positions import lines_with_endings, source_lines
from vjplint.syntax.source import SourceError, decode, encode
from vjplint.batch.parallel import FixTask, fix_many, sigint_as_flag
from vjplint.batch.runner import lint_paths
from vjplint.cli.fix_cross import cross_module_hint
from vjplint.cli.fix_cross import cross_module_pass
from vjplint.cli.fix_cross import elsewhere_pass
from vjplint.cli.fix_cross import fixed_diagnostics
from vjplint.cli.fix_cross import refuse_named_elsewhere
from vjplint.cli.fix_cross import say_cross_module_fixes
from vjplint.cli.fix_cross import say_named_elsewhere
from vjplint.install_hint import install_hint
from vjplint.lint.engine import lint_source
from vjplint.verify.api import fixes_changed, verify_rewrites

if TYPE_CHECKING:
    from vjplint.batch.outcomes import FileOutcome
    from vjplint.syntax.source import DecodedSource
    from vjplint.project.workspace import Workspace


TMP_SUFFIX = ".vjplint-tmp"


class FixInterrupted(KeyboardInterrupt):
    """Ctrl-C during `--fix`: the files whose fixes were written, and those with fixes left
    unwritten (None: interrupted before writing began, nothing written)."""

    def __init__(self, written: Sequence[str] = (), left: Optional[Sequence[str]] = None) -> None:
        super().__init__()
        self.written, self.left = list(written), left

    def describe(self, shown: int = 20) -> str:
        if self.left is None and not self.written:
            return "vjplint: interrupted before any file was written"
        left = list(self.left or ())
        n = len(self.written)
        line = f"vjplint: interrupted after writing the fixes of {n} file{'s' if n != 1 else ''}"
        if not left:
            return line + " (all the files with fixes)"
        out = [line + f"; {len(left)} file{'s' if len(left) != 1 else ''} with fixes left unchanged:"]
        out += [f"  {name}" for name in left[:shown]]
        if len(left) > shown:
            out.append(f"  (and {len(left) - shown} more)")
        out.append("Run the same command again to fix them.")
        return "\n".join(out)


def remove_stale_temp_files(directories: Sequence[str]) -> List[str]:
    """The temporary files (`write_atomic`'s) that a killed run left in `directories`: removed
    when the process that made them is gone (its id is in the name), kept while it runs."""
    removed = []
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith(TMP_SUFFIX) or not entry.name.startswith("."):
                continue
            parts = entry.name[:-len(TMP_SUFFIX)].rsplit(".", 2)
            pid = parts[-2] if len(parts) == 3 and parts[-2].startswith("pid") else None
            if pid is None or not pid[3:].isdigit() or _alive(int(pid[3:])):
                continue
            try:
                if entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)
                    removed.append(entry.path)
            except OSError:
                pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path`'s content: a temp file in the same directory, then os.replace; the mode is kept.
    A symlink keeps pointing at its (rewritten) target; a read-only file is left alone."""
    target = os.path.realpath(path)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        # os.replace needs only a writable directory: respect the file's own permission (also as root)
        raise PermissionError("the file is read-only")
    directory, name = os.path.split(target)
    # The process id in the name: a later run removes the file if this process is killed first.
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.pid{os.getpid()}.", suffix=TMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _stop_after_writes(_WRITES[0], "VJPLINT_TEST_STOP_IN_WRITE")
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        _WRITES[0] += 1
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unified_diff(display: str, old: str, new: str) -> str:
    a, b = lines_with_endings(old), lines_with_endings(new)
    out = []
    for line in difflib.unified_diff(a, b, fromfile=display, tofile=display):
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def notebook_diff(display: str, cells: "notebook.NotebookSource", new_text: str) -> str:
    """A notebook's --diff, one diff per changed cell with ruff's header `nb.ipynb:cell 3` and rows
    counted in the cell, as the notebook shows it (magics and all); the joined Python text's diff
    when the cells cannot be told apart (the fix moved a cell boundary: --fix refuses it too)."""
    try:
        changed = notebook.cells_of(new_text, cells)
    except notebook.NotebookError:
        return unified_diff(display, cells.text, new_text)
    def ended(source: str) -> str:  # a cell has no end-of-file: no "No newline" marker for it
        return source if source.endswith(("\n", "\r")) else source + "\n"

    return "".join(unified_diff(f"{display}:cell {number}", ended(cells.sources[cells.cells.index(number)]),
                                ended(new)) for number, new in sorted(changed.items()))


# -- the command line ------------------------------------------------------------------------------------
@dataclass
class _FileFix:
    display: str
    result: FixResult
    old: str
    lines: List[str]


def run_fix_command(args, workspace: "Workspace", paths: Sequence[str], output_format: str, progress=None) -> int:
    """`vjplint --fix/--diff PATH...`: lint everything, fix the files that have offered fixes."""
    stage: List[str] = []  # "written" once every fix is on disk: a later Ctrl-C is a plain interrupt
    try:
        return _run_fix(args, workspace, paths, output_format, progress, stage)
    except FixInterrupted:
        raise
    except KeyboardInterrupt:
        if stage:  # the summary may be out already: "before any file was written" would be false
            raise
        raise FixInterrupted() from None


def _run_fix(args, workspace: "Workspace", paths: Sequence[str], output_format: str, progress=None,
             stage: Optional[List[str]] = None) -> int:
    unsafe = bool(args.unsafe_fixes)
    run = lint_paths(paths, workspace, jobs=args.jobs, use_cache=not args.no_cache, progress=progress,
                     force_exclude=args.force_exclude)
    if not args.diff:
        removed = remove_stale_temp_files(sorted({os.path.dirname(os.path.realpath(f.path)) for f in run.files}))
        if removed and not args.quiet:
            print(f"vjplint: removed {len(removed)} temporary file{'s' if len(removed) != 1 else ''} left by "
                  f"an interrupted run: {', '.join(os.path.relpath(r) for r in removed[:5])}"
                  f"{' ...' if len(removed) > 5 else ''}", file=sys.stderr)
    errors = list(run.internal_errors)
    cross_fixed: Dict[str, List[Diagnostic]] = {}
    start_texts: Dict[Path, str] = {}
    # rules defined in another file of the run: their fixes are made in that file (vjplint.fixes.elsewhere)
    elsewhere = elsewhere_pass(args, run.files, errors, unsafe)
    if elsewhere.written:
        run = lint_paths(paths, workspace, jobs=args.jobs, use_cache=not args.no_cache,
                         force_exclude=args.force_exclude)
        errors.extend(e for e in run.internal_errors if e not in errors)
    if unsafe:  # rules in another file of the run: every file involved, written together

        cross = cross_module_pass(args, run.files, errors)
        cross_fixed = fixed_diagnostics(run.files, cross.fixed)
        start_texts = cross.new_texts
        if cross.written:
            run = lint_paths(paths, workspace, jobs=args.jobs, use_cache=not args.no_cache,
                             force_exclude=args.force_exclude)
            errors.extend(e for e in run.internal_errors if e not in errors)
    elif not args.quiet:
        hint = cross_module_hint(run.files)
        if hint:
            print(hint, file=sys.stderr)
    for display, found in elsewhere.fixed.items():
        cross_fixed.setdefault(display, []).extend(found)
    for path, new in elsewhere.new_texts.items():
        start_texts.setdefault(path, new)
    hidden = say_cross_module_fixes(run.files) if not unsafe else 0
    settings: Dict[str, Config] = {}
    facts: Dict[str, RunFacts] = {}
    remaining: List[Diagnostic] = []
    sources: Dict[str, List[str]] = {}
    fixed: List[_FileFix] = []
    diffs: List[str] = []

    refused = say_named_elsewhere(run.files)  # fwd/bwd named by another file of the run: an unsafe fix
    results = _fix_all(run.files, start_texts, unsafe, args.jobs, refused, progress=_fix_progress(progress))

    written: List[str] = []
    already: List[str] = []  # fixed by another run meanwhile
    with sigint_as_flag() as interrupted:
        _write_fixes(args, run, results, start_texts, cross_fixed, unsafe, interrupted, settings, remaining,
                     sources, fixed, diffs, errors, written, already, refused, facts)
        if interrupted:
            raise FixInterrupted(written, [])
    if stage is not None:
        stage.append("written")
    if already and not args.quiet:
        print(f"vjplint: {len(already)} file{'s were' if len(already) != 1 else ' was'} fixed by another run "
              f"meanwhile, as this one would have: left as {'they are' if len(already) != 1 else 'it is'}",
              file=sys.stderr)
    report_problems(run.problems, errors)
    if args.diff:
        return _finish_diff(args, fixed, diffs, remaining, errors, hidden)
    remaining.sort(key=Diagnostic.sort_key)
    count = sum(f.result.fixed_count for f in fixed)
    if args.show_fixes and count and output_format in ("text", "concise") and not args.quiet:
        sys.stdout.write(_fix_summary(fixed))
    failed = bool(errors) or any(p.fatal for p in run.problems)
    if not run.files and not failed:
        print(f"vjplint: warning: No Python files found under {', '.join(paths)}", file=sys.stderr)
    emit(remaining, args, output_format, sources, settings, fixed_count=count, checked=bool(run.files),
         failed=failed, facts=facts, hidden_fixes=hidden)
    code = exit_code(remaining, args, failed)
    if code == 0 and count and args.exit_non_zero_on_fix:
        return 1
    return code


def _write_fixes(args, run, results, start_texts, cross_fixed, unsafe: bool, interrupted: List[bool],
                 settings: Dict[str, Config], remaining: List[Diagnostic], sources: Dict[str, List[str]],
                 fixed: List["_FileFix"], diffs: List[str], errors: List[str], written: List[str],
                 already: List[str], refused: Optional[Dict[Path, Dict[str, str]]] = None,
                 facts: Optional[Dict[str, RunFacts]] = None) -> None:
    """Write (or diff) each file's fixes in the run's order; `written` gets the files written.
    Ctrl-C takes effect between two files (`interrupted` is set by the handler), as
    FixInterrupted, which says what was written and what was not: the default handler's
    KeyboardInterrupt can land in a garbage-collector callback (a finished worker pool's), where
    Python prints and drops it, and the run would then go on to write every file. A file that
    another run (a concurrent `--fix`) changed meanwhile into what this one would write is
    neither written nor reported again. `refused`: fixes made unsafe because another file of the
    run names what they change."""
    for number, outcome in enumerate(run.files):
        _stop_after_writes(len(written))
        if interrupted:
            raise FixInterrupted(written, [run.files[n].display for n in sorted(results) if n >= number
                                           and not args.diff and _changes(results[n])])
        config = settings[outcome.display] = outcome.config
        if outcome.facts and facts is not None:
            facts[outcome.display] = outcome.facts
        diagnostics = outcome.result.diagnostics
        start = start_texts.get(Path(outcome.path))
        if number not in results:
            if outcome.display in cross_fixed:
                fixed.append(_FileFix(outcome.display, FixResult("", fixed=cross_fixed[outcome.display]), "", []))
            remaining.extend(diagnostics)
            if diagnostics and outcome.result.decoded is not None:
                sources[outcome.display] = source_lines(outcome.result.decoded.text)
            elif diagnostics:
                sources[outcome.display] = _read_lines(outcome.path)
            continue
        read = results[number]
        if isinstance(read, str):
            errors.append(read)
            remaining.extend(diagnostics)
            continue
        data, cells, decoded, result = read
        result.fixed[:0] = cross_fixed.get(outcome.display, [])
        if args.verify and result.text != decoded.text and start is None:
            result = _verified(outcome.path, outcome.display, decoded.text, result, config, unsafe, errors,
                               outcome.facts)
        errors.extend(result.errors)
        if result.text != decoded.text:
            if args.diff:
                diffs.append(unified_diff(outcome.display, decoded.text, result.text) if cells is None
                             else notebook_diff(outcome.display, cells, result.text))
            else:
                try:
                    new_data = encode(result.text, decoded) if cells is None \
                        else notebook.write(data, notebook.cells_of(result.text, cells))
                    now = outcome.path.read_bytes()
                    if now == new_data and now != data:  # another run wrote these very fixes
                        already.append(outcome.display)
                        lines = source_lines(result.text)
                        remaining.extend(result.remaining if cells is None
                                         else notebook.to_cells(result.remaining, notebook.CellMap.of(lines)))
                        sources[outcome.display] = lines
                        continue
                    if now != data:
                        raise FileChanged()
                    write_atomic(outcome.path, new_data)
                    written.append(outcome.display)
                except (OSError, UnicodeEncodeError, notebook.NotebookError) as exc:
                    errors.append(f"{outcome.display}: cannot write the fixed file: {_reason(exc)}")
                    if not isinstance(exc, FileChanged):
                        remaining.extend(diagnostics)  # (those of a changed file are no longer true)
                        sources[outcome.display] = source_lines(decoded.text)
                    continue
        if refused and Path(outcome.path) in refused:
            refuse_named_elsewhere(result.remaining, refused[Path(outcome.path)], result.text, config,
                                   outcome.facts)
        fixed.append(_FileFix(outcome.display, result, decoded.text, source_lines(result.text)))
        lines = source_lines(result.text)
        remaining.extend(result.remaining if cells is None
                         else notebook.to_cells(result.remaining, notebook.CellMap.of(lines)))
        sources[outcome.display] = lines


_Read = Tuple[bytes, Optional["notebook.NotebookSource"], "DecodedSource", FixResult]


def _changes(read: Union[str, _Read]) -> bool:
    return not isinstance(read, str) and read[3].text != read[2].text


def _stop_after_writes(count: int, variable: str = "VJPLINT_TEST_STOP_AFTER_WRITES") -> None:
    """A seam for the tests of interrupted and concurrent runs (tests/cli/test_bad_input.py,
    tests/cli/test_cli_edges.py): with VJPLINT_TEST_STOP_AFTER_WRITES=N the process stops itself
    (SIGSTOP) before its next file once it has written N files; with VJPLINT_TEST_STOP_IN_WRITE=N,
    within the next write, its temporary file written and not yet renamed. A test then sends
    SIGINT or SIGKILL at that exact point, however fast or loaded the machine."""
    wanted = os.environ.get(variable)
    if wanted and wanted.isdigit() and count == int(wanted) and variable not in _STOPPED and hasattr(os, "kill"):
        import signal

        _STOPPED.append(variable)
        os.kill(os.getpid(), signal.SIGSTOP)


_STOPPED: List[str] = []
_WRITES: List[int] = [0]


def _fix_progress(linting):
    """The counter of files fixed, on a terminal: where the files linted were counted
    (vjplint.cli.check.progress_for), with the same delay."""
    return ProgressLine("files fixed", delay=linting.delay) if isinstance(linting, ProgressLine) else None


def _fix_all(files: Sequence["FileOutcome"], start_texts: Dict[Path, str], unsafe: bool,
             jobs: Optional[int], refused: Optional[Dict[Path, Dict[str, str]]] = None,
             progress=None) -> Dict[int, Union[str, _Read]]:
    """For each file (by its number in `files`) that has a fix to offer: what it was read as and
    its fix, computed in worker processes when there is enough work (vjplint.batch.parallel), or
    why it could not be read. Writing stays with the caller, file by file, in order."""
    reads: Dict[int, Union[str, _Read]] = {}
    tasks: List[FixTask] = []
    configs: List[Tuple[Config, RunFacts]] = []
    config_index: Dict[Tuple[Config, RunFacts], int] = {}  # by value (both are frozen)
    for number, outcome in enumerate(files):
        start = start_texts.get(Path(outcome.path))
        if not any(offered(d, unsafe) for d in outcome.result.diagnostics) and start is None:
            continue
        try:
            data = outcome.path.read_bytes()
            # A notebook is fixed as its cells' Python text, then written back into its cells.
            cells = notebook.read(data) if notebook.is_notebook(outcome.display) else None
            decoded = decode(cells.text.encode("utf-8") if cells is not None else data)
        except (OSError, SourceError, notebook.NotebookError) as exc:
            reads[number] = f"{outcome.display}: cannot read file: {exc}"
            continue
        c = config_index.setdefault((outcome.config, outcome.facts), len(configs))
        if c == len(configs):
            configs.append((outcome.config, outcome.facts))
        text = start if start is not None else decoded.text
        # fixes another file of the run makes unsafe (vjplint.fixes.named_elsewhere): applied only when unsafe
        exclude = () if unsafe else tuple(sorted((refused or {}).get(Path(outcome.path), {})))
        tasks.append((number, outcome.display, str(outcome.path), len(text), unsafe, c, text, exclude))
        reads[number] = (data, cells, decoded, FixResult(text))  # the result is filled in below
    for number, result in fix_many(tasks, configs, jobs, progress).items():
        data, cells, decoded, _ = reads[number]  # type: ignore[misc]
        reads[number] = (data, cells, decoded, result)
    return reads


def _finish_diff(args, fixed: List[_FileFix], diffs: List[str], remaining: List[Diagnostic],
                 errors: List[str], across: int = 0) -> int:
    """`across`: the findings whose fix is a rewrite across modules, hidden without --unsafe-fixes."""
    sys.stdout.write("".join(diffs))
    sys.stdout.flush()
    count = sum(f.result.fixed_count for f in fixed)
    hidden = 0 if args.unsafe_fixes else across + sum(
        1 for d in remaining if d.fix is not None and d.fix.applicability is Applicability.UNSAFE)
    if not args.quiet:
        line = f"Would fix {count} problem{'s' if count != 1 else ''}" if count else "No fixes available"
        if hidden:
            line += f" ({hidden} additional fix{'es' if hidden != 1 else ''} available with --unsafe-fixes)"
        print(line + ".", file=sys.stderr)
    if errors:
        return 2
    return 1 if diffs and not args.exit_zero else 0  # as ruff: --exit-zero holds for --diff too


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
        return source_lines(decode(notebook.python_bytes(path.name, path.read_bytes())).text)
    except (OSError, SourceError, notebook.NotebookError):
        return []


def _verified(path: Path, display: str, old: str, result: FixResult, config: Config, unsafe: bool,
              errors: List[str], facts: RunFacts = NO_FACTS) -> FixResult:
    """--verify: prove each rewritten function on JAX; a function that fails keeps its old code."""
    functions = fixes_changed(old, result.text, config, unsafe, path=str(path), facts=facts)
    reports = verify_rewrites(str(path), old, result.text, functions, config, facts=facts)
    if any(getattr(r, "missing_jax", False) for r in reports):
        errors.append(f"--verify needs JAX: {install_hint('verify')}; nothing was written for " + display)
        return FixResult(old, remaining=result.remaining, errors=result.errors)
    for r in reports:
        where = f" on {r.device}" if r.device and r.status == "verified" else ""
        print(f"vjplint: verify: {display}:{r.line}: {r.function}: {r.status}{where}"
              f"{': ' + r.reason if r.reason else ''}", file=sys.stderr)
    # A rewrite is written only once proven: failed and unverified functions keep their code,
    # and their diagnostics stay (exit code 1).
    unproven = sorted({r.key if r.key is not None else r.function.rsplit(".", 1)[-1]
                       for r in reports if r.status != "verified"})
    if not unproven:
        return result
    shown = ", ".join(u or "module-level statements" for u in unproven)
    print(f"vjplint: verify: {display}: not proven, left unchanged: {shown}", file=sys.stderr)
    return fix_text(display, old, config, unsafe, exclude=unproven, path=str(path), facts=facts)


def run_fix_stdin(args, config: Config, name: str, data: bytes, output_format: str) -> int:
    """stdin with --fix: the fixed source goes to stdout, diagnostics to stderr (ruff's way);
    with --diff: the diff goes to stdout."""
    unsafe = bool(args.unsafe_fixes)
    path = os.path.abspath(args.stdin_filename) if args.stdin_filename else None
    try:
        decoded = decode(data)
    except SourceError:
        lint = lint_source(name, data, config, path=path)
        report_problems([], lint.errors)
        if not args.diff:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        _emit_to_stderr(lint.diagnostics, args, output_format, {name: []}, config, 0)
        return exit_code(lint.diagnostics, args, bool(lint.errors))
    result = fix_text(name, decoded.text, config, unsafe, path=path)
    report_problems([], result.errors)
    lines = source_lines(result.text)
    if args.diff:
        diff = unified_diff(name, decoded.text, result.text) if result.text != decoded.text else ""
        file = _FileFix(name, result, decoded.text, lines)
        return _finish_diff(args, [file], [diff] if diff else [], result.remaining, result.errors)
    sys.stdout.buffer.write(encode(result.text, decoded) if result.text != decoded.text else data)
    sys.stdout.flush()
    _emit_to_stderr(result.remaining, args, output_format, {name: lines}, config, result.fixed_count)
    code = exit_code(result.remaining, args, bool(result.errors))
    if code == 0 and result.fixed_count and args.exit_non_zero_on_fix:
        return 1
    return code


def _emit_to_stderr(diagnostics, args, output_format: str, sources, config: Config, fixed_count: int) -> None:
    stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        if diagnostics or fixed_count:
            emit(diagnostics, args, output_format, sources, config, fixed_count=fixed_count)
    finally:
        sys.stdout = stdout


def _reason(exc: BaseException) -> str:
    """An OSError's reason without the temporary file's name (the user knows only their file)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
